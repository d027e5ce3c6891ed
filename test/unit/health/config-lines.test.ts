/**
 * What CloudNativePG copies into configuration files unchecked (parameter names and values, pg_hba lines,
 * PgBouncer values) and what it refuses late (a Cluster name over 50 characters), judged by the merge check for
 * objects the CRD never saw: stored before its rules, or written with validation off. CNPG's real webhooks accept
 * all of the line-breaking ones (test/integration/bad-inputs.test.ts writes them through the API server).
 */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterSpec } from '../../../src/operator/api/schema.ts';
import { type MergeResult, mergeConfig } from '../../../src/operator/domain/config.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { makeClass, world } from './support.ts';

const observation = (spec: Partial<PostgresClusterSpec>, clusterClass = makeClass(), name?: string): Observation => {
  const base = world();
  const metadata = name ? { ...base.cluster.metadata, name } : base.cluster.metadata;
  return { ...base, cluster: { ...base.cluster, metadata, spec: { class: 'standard', ...spec } }, clusterClass };
};

/** The field an invalid merge names; the message always starts with it. */
function field(result: MergeResult): string {
  if (result.ok) throw new Error(`expected an invalid config, got ${JSON.stringify(result.config)}`);
  expect(result.message.startsWith(`${result.field}: `)).toBe(true);
  return result.field;
}

describe('configuration lines in the merge check', () => {
  it('refuses a parameter name that would write another line into postgresql.conf, quoted in the field', () => {
    const key = "work_mem = '1MB'\nport";
    expect(field(mergeConfig(observation({ postgresqlConfig: { [key]: '5433' } })))).toBe(
      `spec.postgresqlConfig[${JSON.stringify(key)}]`,
    );
  });

  it.each([
    ['a space', 'work mem'],
    ['a letter outside ASCII', 'wörk_mem'],
    ['a leading digit', '1work_mem'],
    ['two dots', 'a.b.c'],
    ['an empty name', ''],
  ])('refuses a parameter name with %s', (_what, key) => {
    expect(field(mergeConfig(observation({ postgresqlConfig: { [key]: '1' } })))).toMatch(/^spec\.postgresqlConfig\[/);
  });

  it.each(['work_mem', 'DateStyle', 'pg_stat_statements.max', 'auto_explain.log_min_duration'])(
    'accepts the parameter name %s',
    (key) => {
      expect(mergeConfig(observation({ postgresqlConfig: { [key]: '1' } })).ok).toBe(true);
    },
  );

  it('names a bad parameter name of the class in the class', () => {
    const cls = makeClass({
      config: { instances: 3, storage: '10Gi', postgresVersion: '17', postgresqlConfig: { 'work mem': '4MB' } },
    });
    expect(field(mergeConfig(observation({}, cls)))).toBe('class standard spec.config.postgresqlConfig["work mem"]');
  });

  it.each([
    ['a line break', "4MB'\nport = '5433"],
    ['a carriage return', '4MB\rport = 5433'],
    ['a NUL', '4MB\u0000'],
  ])('refuses a parameter value with %s, naming the parameter', (_what, value) => {
    expect(field(mergeConfig(observation({ postgresqlConfig: { work_mem: value } })))).toBe(
      'spec.postgresqlConfig.work_mem',
    );
  });

  it('refuses a pg_hba line with a line break and keeps tabs, which pg_hba.conf separates fields with', () => {
    const broken = ['host all all 10.0.0.0/8 scram-sha-256\nhost all all 0.0.0.0/0 trust'];
    expect(field(mergeConfig(observation({ pgHBA: broken })))).toBe('spec.pgHBA[0]');
    expect(mergeConfig(observation({ pgHBA: ['host\tall\tall\t10.0.0.0/8\tscram-sha-256'] })).ok).toBe(true);
  });

  it.each([
    ['a NUL', 'app\u0000'],
    ['a line break', 'app\nadmin'],
    ['an escape', 'app\u001b[2J'],
  ])('refuses a role name with %s', (_what, name) => {
    expect(field(mergeConfig(observation({ managedRoles: [{ name }] })))).toBe('spec.managedRoles[0].name');
  });

  it('refuses a PgBouncer value of the class that would add a line to pgbouncer.ini, naming the class field', () => {
    const cls = makeClass({
      cnpg: {
        connectionPooler: {
          instances: 1,
          mode: 'transaction',
          parameters: { default_pool_size: '10\nauth_type = trust' },
        },
      },
    });
    expect(field(mergeConfig(observation({ connectionPoolerEnabled: true }, cls)))).toBe(
      'class standard spec.cnpg.connectionPooler.parameters.default_pool_size',
    );
  });

  it('refuses a cluster name over 50 characters, which CloudNativePG refuses for its Cluster', () => {
    expect(field(mergeConfig(observation({}, makeClass(), `a${'b'.repeat(50)}`)))).toBe('metadata.name');
    expect(mergeConfig(observation({}, makeClass(), `a${'b'.repeat(49)}`)).ok).toBe(true);
  });
});
