/**
 * The shell's last check before a destructive write (src/operator/core/execute.ts): deleting a child,
 * releasing our owner reference and removing the finalizer run only on a PostgresCluster that carries a
 * deletion timestamp, whatever the machine planned; the exceptions are deleting the Poolers while the
 * observed spec switches the pooler off, and the cluster's own ScheduledBackup and ObjectStore while it switches
 * the backups off. A refusal is never silent: a Warning, and nothing after it runs.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { executeEffects } from '../../src/operator/core/execute.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import type { Effect } from '../../src/operator/domain/effects.ts';
import type { ObjectRef } from '../../src/operator/domain/objects.ts';
import { EventReason } from '../../src/operator/domain/vocabulary.ts';

const cluster = (deleting: boolean): PostgresCluster =>
  ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: {
      name: 'orders',
      namespace: 'team-a',
      uid: 'uid-1',
      finalizers: ['pgfsm.io/finalizer'],
      ...(deleting ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}),
    },
    spec: {},
  }) as unknown as PostgresCluster;

const ref = (kind: string, name: string): ObjectRef => ({
  apiVersion: 'v1',
  kind,
  namespace: 'team-a',
  name,
});

/** Ports that only record the writes they are asked for. */
function recordingPorts() {
  const writes: string[] = [];
  const child = {
    get: async () => undefined,
    delete: async (r: ObjectRef) => void writes.push(`delete ${r.kind}/${r.name}`),
    setOwner: async (r: ObjectRef) => void writes.push(`setOwner ${r.kind}/${r.name}`),
    releaseOwner: async (r: ObjectRef) => void writes.push(`release ${r.kind}/${r.name}`),
  };
  const ports = {
    clusters: {
      removeFinalizer: async () => void writes.push('removeFinalizer'),
      addFinalizer: async () => void writes.push('addFinalizer'),
    },
    secrets: child,
    cnpgClusters: child,
    poolers: child,
    configMaps: child,
    backupObjects: { objectStores: child, scheduledBackups: child, backups: child },
  } as unknown as Ports;
  return { ports, writes };
}

const deleteCluster: Effect = { type: 'delete', component: 'cluster', ref: ref('Cluster', 'orders') };
const deletePooler: Effect = { type: 'delete', component: 'pooler', ref: ref('Pooler', 'orders-pooler-rw') };
const releaseSecret: Effect = {
  type: 'releaseOwner',
  component: 'secret',
  ref: ref('Secret', 'orders-superuser'),
  ownerUid: 'uid-1',
};
const removeFinalizer: Effect = { type: 'removeFinalizer' };
const deleteSchedule: Effect = {
  type: 'delete',
  component: 'cluster',
  ref: ref('ScheduledBackup', 'orders-scheduled'),
};
const deleteStore: Effect = { type: 'delete', component: 'cluster', ref: ref('ObjectStore', 'orders-backups') };
const OFF_NONE = { poolerSwitchedOff: false, backupsSwitchedOff: false };

describe('destructive writes need the deletion timestamp', () => {
  it.each([
    ['delete of the CNPG Cluster', deleteCluster],
    ['release of the Secret', releaseSecret],
    ['removal of the finalizer', removeFinalizer],
    ['delete of a Pooler while the pooler is on', deletePooler],
    ['delete of the ScheduledBackup while backups are on', deleteSchedule],
    ['delete of the ObjectStore while backups are on', deleteStore],
  ])('refuses the %s on a live cluster, with a Warning, and stops there', async (_what, effect) => {
    const { ports, writes } = recordingPorts();
    const after: Effect = { type: 'delete', component: 'configMap', ref: ref('ConfigMap', 'orders-endpoints') };
    const execution = await executeEffects(ports, cluster(false), [effect, after], OFF_NONE);
    expect(writes).toEqual([]);
    expect(execution.refused?.effect).toBe(effect);
    expect(execution.failure).toBeUndefined();
    expect(execution.events.map((e) => [e.event.type, e.event.reason])).toEqual([
      ['Warning', EventReason.DestructiveWriteRefused],
    ]);
    expect(execution.events[0]?.event.message).toContain('deletionTimestamp');
  });

  it('lets the pipeline delete the Poolers of a live cluster when the spec switches the pooler off', async () => {
    const { ports, writes } = recordingPorts();
    const execution = await executeEffects(ports, cluster(false), [deletePooler], {
      ...OFF_NONE,
      poolerSwitchedOff: true,
    });
    expect(writes).toEqual(['delete Pooler/orders-pooler-rw']);
    expect(execution.refused).toBeUndefined();
  });

  it('never lets the pooler exception delete anything but a Pooler', async () => {
    const { ports, writes } = recordingPorts();
    await executeEffects(ports, cluster(false), [deleteCluster], { ...OFF_NONE, poolerSwitchedOff: true });
    expect(writes).toEqual([]);
  });

  it('lets the pipeline delete its own ScheduledBackup and ObjectStore while backups are switched off, nothing else', async () => {
    const { ports, writes } = recordingPorts();
    const off = { ...OFF_NONE, backupsSwitchedOff: true };
    expect((await executeEffects(ports, cluster(false), [deleteSchedule, deleteStore], off)).refused).toBeUndefined();
    expect(writes).toEqual(['delete ScheduledBackup/orders-scheduled', 'delete ObjectStore/orders-backups']);
    const others: Effect[] = [
      { type: 'delete', component: 'cluster', ref: ref('Backup', 'orders-backup-1') },
      { type: 'delete', component: 'cluster', ref: ref('ObjectStore', 'orders-restore-source') },
      { type: 'delete', component: 'cluster', ref: ref('ScheduledBackup', 'billing-scheduled') },
      deleteCluster,
    ];
    for (const effect of others) {
      expect((await executeEffects(ports, cluster(false), [effect], off)).refused?.effect).toBe(effect);
    }
    expect(writes).toHaveLength(2);
  });

  it('runs every cleanup write once the deletion timestamp is set', async () => {
    const { ports, writes } = recordingPorts();
    const execution = await executeEffects(
      ports,
      cluster(true),
      [deletePooler, deleteCluster, releaseSecret, removeFinalizer],
      OFF_NONE,
    );
    expect(writes).toEqual([
      'delete Pooler/orders-pooler-rw',
      'delete Cluster/orders',
      'release Secret/orders-superuser',
      'removeFinalizer',
    ]);
    expect(execution.refused).toBeUndefined();
  });
});
