/**
 * The rules of src/operator/api/cnpg-rules.ts that CloudNativePG's versions disagree on, as pgfsm keeps them: what
 * every supported version accepts. The integration suite has each version's real webhook judge the same inputs
 * (test/integration/crds.test.ts, run per version by `npm run test:compat`).
 */
import { describe, expect, it } from 'vitest';
import {
  FIXED_PARAMETERS,
  hasPgHbaReference,
  isReservedRole,
  PGBOUNCER_PARAMETERS,
} from '../../src/operator/api/cnpg-rules.ts';

describe('CloudNativePG rules across 1.28, 1.29 and 1.30', () => {
  it('finds the \u0024{kind:name} references CNPG 1.29 and later expand in pg_hba lines, and nothing else', () => {
    expect(hasPgHbaReference('host all all \u0024{podselector:app} scram-sha-256')).toBe(true);
    expect(hasPgHbaReference('host all all \u0024{other:x} md5')).toBe(true);
    expect(hasPgHbaReference('host all all 10.0.0.0/8 \u0024{podselector:a}\u0024{podselector:b}')).toBe(true);
    expect(hasPgHbaReference('hostssl all all 10.0.0.0/8 scram-sha-256')).toBe(false);
    expect(hasPgHbaReference('host all $user 10.0.0.0/8 md5')).toBe(false);
    expect(hasPgHbaReference('host all all \u0024{podselector} md5')).toBe(false);
    expect(hasPgHbaReference('host all all \u0024{:x} md5')).toBe(false);
    expect(hasPgHbaReference('host all all \u0024{podselector:} md5')).toBe(false);
  });

  it('keeps ssl_ecdh_curve fixed, as 1.28 and 1.29 do (1.30 lets it through)', () => {
    expect(FIXED_PARAMETERS).toContain('ssl_ecdh_curve');
  });

  it('offers only the PgBouncer parameters every supported version allows', () => {
    for (const newer of ['auth_user', 'client_tls_ciphers', 'client_tls13_ciphers', 'server_tls13_ciphers']) {
      expect(PGBOUNCER_PARAMETERS as readonly string[]).not.toContain(newer);
    }
  });

  it('reserves the metrics role 1.29 adds to pg_hba through the cnpg_ prefix', () => {
    expect(isReservedRole('cnpg_metrics_exporter')).toBe(true);
  });
});
