/** The desired CNPG Cluster of a backed-up or restored cluster (components/cluster.ts with domain/backup). */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { assess } from '../../../src/operator/domain/assessment.ts';
import {
  cnpgDrift,
  desiredCnpgCluster,
  judgeCnpgCluster,
  restoreOf,
} from '../../../src/operator/domain/components/cluster.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../../src/operator/domain/observation.ts';
import { OWNED_FIELDS_ANNOTATION } from '../../../src/operator/domain/owned-keys.ts';
import { Reason } from '../../../src/operator/domain/vocabulary.ts';
import { makeClass } from '../../../src/tools/fixtures/observations.ts';
import { backupWorld, mergedOf, SERVER_NAME } from './support.ts';

const NOW = Date.parse('2026-12-07T12:00:00Z');
const PLUGIN = {
  name: 'barman-cloud.cloudnative-pg.io',
  isWALArchiver: true,
  parameters: { barmanObjectName: 'orders-backups', serverName: SERVER_NAME },
};

/** The CNPG Cluster of a world, and pgfsm's drift findings on it. */
const drift = (o: Observation) => {
  if (!o.cnpg) throw new Error('no CNPG Cluster in the world');
  return cnpgDrift(o.cnpg, desired(o));
};
const desired = (o: Observation) => desiredCnpgCluster(o, mergedOf(o), restoreOf(o, mergedOf(o), NOW));
const running = (o: Observation, spec: Partial<CnpgCluster['spec']>, annotations?: Record<string, string>) => {
  if (!o.cnpg) throw new Error('no CNPG Cluster in the world');
  o.cnpg = {
    ...o.cnpg,
    metadata: { ...o.cnpg.metadata, annotations: { ...o.cnpg.metadata.annotations, ...annotations } },
    spec: { ...o.cnpg.spec, ...spec },
  };
  return o;
};

/** A source PostgresCluster of the namespace whose status records its archive. */
const sourceCluster = (backup?: Partial<NonNullable<PostgresCluster['status']>['backup']>): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { name: 'orders-old', namespace: 'team-a', uid: 'c0ffee00-1111' },
  spec: { class: 'standard' },
  ...(backup
    ? {
        status: {
          backup: {
            serverName: 'orders-old-c0ffee00',
            destinationPath: 's3://pg-backups/prod/team-a/',
            objectStore: 'orders-old-backups',
            ...backup,
          },
        },
      }
    : {}),
});

describe('a backed-up cluster', () => {
  it('sends no plugins, externalClusters or recovery when its class has no backup policy', () => {
    const spec = desired(backupWorld({}, { clusterClass: makeClass(), created: false })).spec;
    expect('plugins' in spec || 'externalClusters' in spec).toBe(false);
    expect(Object.keys(spec.bootstrap ?? {})).toEqual(['initdb']);
  });

  it('archives through the plugin, and owns the plugins list', () => {
    const cnpg = desired(backupWorld({}, { created: false }));
    expect(cnpg.spec.plugins).toEqual([PLUGIN]);
    expect(cnpg.metadata.annotations?.[OWNED_FIELDS_ANNOTATION]).toBe('plugins');
    expect(Object.keys(cnpg.spec.bootstrap ?? {})).toEqual(['initdb']);
  });

  it('repairs the plugins list when it is missing or changed; CNPG’s defaults are no drift', () => {
    const o = backupWorld();
    expect(drift(running(o, {}))).toContain('plugins');
    const held = running(
      backupWorld(),
      { plugins: [{ ...PLUGIN, enabled: true }] },
      { [OWNED_FIELDS_ANNOTATION]: 'plugins' },
    );
    expect(drift(held)).toEqual([]);
    const other = running(backupWorld(), {
      plugins: [{ ...PLUGIN, parameters: { ...PLUGIN.parameters, serverName: 'orders' } }],
    });
    expect(drift(other)).toContain('plugins');
  });

  it('drops its plugins entry when backups are switched off, and leaves alone one it never sent', () => {
    const off = backupWorld({ backup: { enabled: false } });
    const sent = running(off, { plugins: [PLUGIN] }, { [OWNED_FIELDS_ANNOTATION]: 'plugins' });
    expect(desired(sent).spec.plugins).toBeUndefined();
    expect(drift(sent)).toContain('plugins');
    const theirs = running(backupWorld({ backup: { enabled: false } }), { plugins: [PLUGIN] });
    expect(drift(theirs)).toEqual([]);
  });
});

describe('a restored cluster', () => {
  it('starts from the named archive of a cluster that is gone, read through its source store, to the target time', () => {
    const o = backupWorld(
      { restore: { source: { serverName: 'gone-3f2a9c1d' }, targetTime: '2026-12-07T10:15:30.123456Z' } },
      { created: false },
    );
    const spec = desired(o).spec;
    expect(spec.bootstrap).toEqual({
      recovery: { source: 'restore-source', recoveryTarget: { targetTime: '2026-12-07T10:15:30.123456Z' } },
    });
    expect(spec.externalClusters).toEqual([
      {
        name: 'restore-source',
        plugin: {
          name: 'barman-cloud.cloudnative-pg.io',
          parameters: { barmanObjectName: 'orders-restore-source', serverName: 'gone-3f2a9c1d' },
        },
      },
    ]);
    // It archives under a name of its own, never into the source.
    expect(spec.plugins).toEqual([PLUGIN]);
  });

  it("reads a living source's archive by the serverName its status records", () => {
    const o = backupWorld({ restore: { source: { cluster: 'orders-old' } } }, { created: false });
    o.restoreSource = sourceCluster({ lastSuccessfulBackupTime: '2026-12-07T02:31:00Z' });
    expect(desired(o).spec.externalClusters?.[0]?.plugin?.parameters?.serverName).toBe('orders-old-c0ffee00');
    expect(desired(o).spec.bootstrap).toEqual({ recovery: { source: 'restore-source' } });
  });

  it('is never created with initdb while its source cannot be read: it waits, naming the field', () => {
    const o = backupWorld({ restore: { source: { cluster: 'orders-old' } } }, { created: false });
    const restore = restoreOf(o, mergedOf(o), NOW);
    const cnpg = desiredCnpgCluster(o, mergedOf(o), restore);
    expect(cnpg.spec.bootstrap).toBeUndefined();
    const judged = judgeCnpgCluster(o, cnpg, NOW, restore);
    expect(judged.effects).toEqual([]);
    expect(judged.verdict).toMatchObject({ state: 'Pending', reason: Reason.CNPGClusterPending });
    expect(judged.verdict.message).toContain('spec.restore.source.cluster: PostgresCluster orders-old not found');
    // Without a judged restore the builder sends no bootstrap either.
    expect(desiredCnpgCluster(o, mergedOf(o)).spec.bootstrap).toBeUndefined();
  });

  it('stops in a failure naming targetTime when the target is before the first recoverability point', () => {
    const o = backupWorld(
      { restore: { source: { cluster: 'orders-old' }, targetTime: '2026-12-01T00:00:00Z' } },
      { created: false },
    );
    o.restoreSource = sourceCluster({
      firstRecoverabilityPoint: '2026-12-05T02:31:00Z',
      lastSuccessfulBackupTime: '2026-12-07T02:31:00Z',
    });
    const a = assess(o, defaultSettings, NOW);
    expect(a.health.cluster).toMatchObject({ state: 'Failed', reason: Reason.InvalidConfiguration });
    expect(a.health.cluster?.message).toMatch(/^spec\.restore\.targetTime: .* is before 2026-12-05T02:31:00Z/);
    expect(a.plans.cluster).toEqual([]);
  });

  it('runs once: a restored cluster whose CNPG Cluster is gone is not restored from the source again', () => {
    const o = backupWorld({ restore: { source: { serverName: 'gone-3f2a9c1d' } } }, { created: false });
    o.cluster = {
      ...o.cluster,
      status: {
        restore: { serverName: 'gone-3f2a9c1d' },
        backup: {
          serverName: SERVER_NAME,
          destinationPath: 's3://pg-backups/prod/team-a/',
          objectStore: 'orders-backups',
        },
      },
    };
    const a = assess(o, defaultSettings, NOW);
    expect(a.plans.cluster).toEqual([]);
    expect(a.health.cluster).toMatchObject({ state: 'Failed', reason: Reason.InvalidConfiguration });
    expect(a.health.cluster?.message).toContain(`restore.source.serverName: ${SERVER_NAME}`);
  });

  it('keeps the bootstrap and externalClusters CNPG has once the cluster exists', () => {
    const o = backupWorld({ restore: { source: { serverName: 'gone-3f2a9c1d' } } });
    const recovery = {
      bootstrap: { recovery: { source: 'restore-source' } },
      externalClusters: [{ name: 'restore-source', plugin: { name: 'barman-cloud.cloudnative-pg.io' } }],
    };
    const spec = desired(running(o, recovery)).spec;
    expect(spec.bootstrap).toEqual(recovery.bootstrap);
    expect(spec.externalClusters).toEqual(recovery.externalClusters);
    expect(restoreOf(o, mergedOf(o), NOW)).toBeUndefined();
  });
});
