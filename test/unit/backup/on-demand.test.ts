/** domain/backup/on-demand.ts: `pgfsm.io/backup-now: <token>` asks for one Backup per new token. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { onDemandBackupName } from '../../../src/operator/domain/backup/names.ts';
import type { CnpgBackup } from '../../../src/operator/domain/backup/objects.ts';
import {
  backupProgress,
  backupRequestOf,
  desiredOnDemandBackup,
} from '../../../src/operator/domain/backup/on-demand.ts';
import { backupClass, backupWorld, mergedOf } from './support.ts';

const FIELD = 'metadata.annotations["pgfsm.io/backup-now"]';

function asking(token: string | undefined, lastRequest?: string, enabled = true) {
  const o = backupWorld(enabled ? {} : { backup: { enabled: false } }, { clusterClass: backupClass() });
  const cluster: PostgresCluster = {
    ...o.cluster,
    metadata: {
      ...o.cluster.metadata,
      ...(token === undefined ? {} : { annotations: { 'pgfsm.io/backup-now': token } }),
    },
    ...(lastRequest === undefined
      ? {}
      : {
          status: {
            backup: {
              serverName: 'orders-uid-orde',
              destinationPath: 's3://pg-backups/prod/team-a/',
              objectStore: 'orders-backups',
              lastRequest,
            },
          },
        }),
  };
  return backupRequestOf(cluster, mergedOf({ ...o, cluster }));
}

describe('a backup asked for now', () => {
  it('no annotation asks for nothing', () => {
    expect(asking(undefined)).toEqual({ kind: 'none' });
  });

  it('a new token asks for the Backup named after it; the recorded token asks for nothing more', () => {
    const backup = onDemandBackupName('orders', '2026-12-07T12:00:00+00:00');
    expect(asking('2026-12-07T12:00:00+00:00')).toEqual({ kind: 'new', token: '2026-12-07T12:00:00+00:00', backup });
    expect(asking('2026-12-07T12:00:00+00:00', '2026-12-07T12:00:00+00:00')).toEqual({
      kind: 'done',
      token: '2026-12-07T12:00:00+00:00',
      backup,
    });
    expect(asking('1733573000', '1733572800')).toMatchObject({ kind: 'new', token: '1733573000' });
  });

  it.each(['', 'two words', 'x'.repeat(64), '-leading-dash', 'ünïcode'])(
    'refuses the token %j, naming the annotation',
    (token) => {
      const request = asking(token);
      expect(request).toMatchObject({ kind: 'refused', field: FIELD });
      if (request.kind === 'refused') expect(request.message.startsWith(`${FIELD}: `)).toBe(true);
    },
  );

  it('refuses a new token for a cluster that is not backed up', () => {
    expect(asking('1733572800', undefined, false)).toMatchObject({
      kind: 'refused',
      message: expect.stringContaining('not backed up'),
    });
  });

  it('the Backup is the plugin’s, of the CNPG Cluster, owned by the PostgresCluster', () => {
    const o = backupWorld();
    const backup = desiredOnDemandBackup(o.cluster, 'orders-backup-0123456789ab');
    expect(backup).toMatchObject({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Backup',
      metadata: { name: 'orders-backup-0123456789ab', namespace: 'team-a' },
      spec: {
        cluster: { name: 'orders' },
        method: 'plugin',
        pluginConfiguration: { name: 'barman-cloud.cloudnative-pg.io' },
      },
    });
    expect(backup.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'PostgresCluster', controller: true });
  });
});

describe("a Backup's progress, from CloudNativePG's phases", () => {
  const backup = (status?: CnpgBackup['status'], creationTimestamp = '2026-12-07T12:00:00Z'): CnpgBackup => ({
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Backup',
    metadata: { name: 'b', namespace: 'team-a', creationTimestamp },
    spec: {
      cluster: { name: 'orders' },
      method: 'plugin',
      pluginConfiguration: { name: 'barman-cloud.cloudnative-pg.io' },
    },
    ...(status ? { status } : {}),
  });

  it('absent, pending (no status yet), running, completed', () => {
    expect(backupProgress(undefined)).toEqual({ state: 'absent' });
    expect(backupProgress(backup())).toEqual({ state: 'running', phase: 'pending', since: '2026-12-07T12:00:00Z' });
    expect(backupProgress(backup({ phase: 'running', startedAt: '2026-12-07T12:00:05Z' }))).toEqual({
      state: 'running',
      phase: 'running',
      since: '2026-12-07T12:00:05Z',
    });
    expect(backupProgress(backup({ phase: 'completed', stoppedAt: '2026-12-07T12:01:00Z' }))).toEqual({
      state: 'completed',
      stoppedAt: '2026-12-07T12:01:00Z',
    });
  });

  it.each([
    ['failed', 'exit status 4', 'Backup b failed: exit status 4'],
    ['walArchivingFailing', undefined, 'Backup b walArchivingFailing: WAL archiving is failing'],
    ['invalid backup definition', undefined, 'Backup b invalid backup definition: invalid backup definition'],
  ])('%s is a failure with its reason', (phase, error, message) => {
    expect(backupProgress(backup({ phase, ...(error ? { error } : {}) }))).toEqual({ state: 'failed', phase, message });
  });
});
