/** Behaviour contract 11, 13, 15: deletion and re-adoption, restart safety, suspend. */
import { describe, expect, it } from 'vitest';
import {
  clusterObject,
  conditionOf,
  conditionSummary,
  dataOf,
  editSpec,
  eventsOf,
  getCluster,
  NS,
  passwordSecret,
  reasonsOf,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const CHILDREN = [
  { kind: 'Cluster', name: 'orders' },
  { kind: 'Secret', name: 'orders-superuser' },
  { kind: 'ConfigMap', name: 'orders-endpoints' },
];
const child = (sim: Simulation, kind: string, name: string) => sim.api.get({ kind, namespace: NS, name });
const pooled = (policy: 'Delete' | 'Retain') =>
  clusterObject('orders', { connectionPoolerEnabled: true, clusterDeletionPolicy: policy });

describe('11. deletion', () => {
  it('adds a finalizer before creating anything', async () => {
    const sim = simulationWith([pooled('Delete')]);
    const mark = sim.api.writes.length;
    await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual(['pgfsm.io/finalizer']);
    // The first pass goes on once the finalizer is written (core/follow.ts): the finalizer comes first.
    const writes = sim.api.writes.slice(mark).map((w) => `${w.verb} ${w.kind}`);
    expect(writes[0]).toBe('update PostgresCluster');
    expect(writes).toContain('create Secret');
  });

  it('Delete removes the poolers, then every child explicitly, then the finalizer', async () => {
    const sim = simulationWith([pooled('Delete')]);
    await untilReady(sim, 'orders');
    const mark = sim.api.writes.length;
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    const deletes = sim.api.writes
      .slice(mark)
      .filter((w) => w.verb === 'delete')
      .map((w) => `${w.kind}/${w.name}`);
    const ownerGone = deletes.lastIndexOf('PostgresCluster/orders');
    for (const c of [
      ...CHILDREN,
      { kind: 'Pooler', name: 'orders-pooler-rw' },
      { kind: 'Pooler', name: 'orders-pooler-ro' },
    ]) {
      const at = deletes.indexOf(`${c.kind}/${c.name}`);
      expect(at, `${c.kind}/${c.name} deleted explicitly`).toBeGreaterThanOrEqual(0);
      expect(at).toBeLessThan(ownerGone);
      expect(child(sim, c.kind, c.name)).toBeUndefined();
    }
    expect(deletes.indexOf('Pooler/orders-pooler-rw')).toBeLessThan(deletes.indexOf('Cluster/orders'));
    expect(reasonsOf(sim, 'orders').at(-1)).toBe('CleanupComplete');
  });

  it('Delete keeps the finalizer while a child cannot be deleted, warns once per new failure, then completes', async () => {
    const sim = simulationWith([clusterObject('orders', { clusterDeletionPolicy: 'Delete' })]);
    await untilReady(sim, 'orders');
    sim.api.injectFault('Cluster', 'delete', 'forbidden', 3);
    sim.api.injectFault('Cluster', 'delete', 'rejected', 1);
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    const warnings = () => eventsOf(sim, 'orders').filter((e) => e.reason === 'CleanupFailed');
    for (let i = 0; i < 3; i++) await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual(['pgfsm.io/finalizer']);
    expect(statusOf(sim, 'orders').state).toBe('Deleting.ApplyPolicy');
    // Cleanup has its own reason (the reference's name for it), on the condition of the child it concerns.
    expect(conditionOf(sim, 'orders', 'ClusterReady')).toMatchObject({
      status: 'False',
      reason: 'CleanupFailed',
      message: 'delete Cluster orders failed: injected forbidden on delete Cluster',
    });
    for (const c of CHILDREN) expect(child(sim, c.kind, c.name), `${c.kind} still there`).toBeDefined();
    expect(warnings().map((e) => e.type)).toEqual(['Warning']);
    // A different failure is news: one more Warning.
    await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(warnings().map((e) => e.message)).toEqual([
      'delete Cluster orders failed: injected forbidden on delete Cluster',
      'delete Cluster orders failed: injected rejected on delete Cluster',
    ]);

    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    for (const c of CHILDREN) expect(child(sim, c.kind, c.name), `${c.kind} deleted`).toBeUndefined();
    expect(warnings()).toHaveLength(2);
    expect(reasonsOf(sim, 'orders').at(-1)).toBe('CleanupComplete');
  });

  it('a finalizer that cannot be removed leaves the object in RemoveFinalizer, saying why, warning once', async () => {
    const sim = simulationWith([clusterObject('orders', { clusterDeletionPolicy: 'Delete' })]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    // Every update of the object is refused: removing the finalizer fails, again and again.
    sim.api.injectFault('PostgresCluster', 'update', 'forbidden', 4);
    for (let i = 0; i < 4; i++) await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual(['pgfsm.io/finalizer']);
    expect(statusOf(sim, 'orders').state).toBe('Deleting.RemoveFinalizer');
    expect(conditionOf(sim, 'orders', 'Ready')).toMatchObject({ status: 'False', reason: 'FinalizerUpdateFailed' });
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'FinalizerUpdateFailed')).toHaveLength(1);
    expect(reasonsOf(sim, 'orders')).not.toContain('CleanupComplete');

    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    expect(reasonsOf(sim, 'orders').at(-1)).toBe('CleanupComplete');
  });

  it('Retain keeps the data-bearing children without owner references, and a new cluster re-adopts them', async () => {
    const sim = simulationWith([pooled('Retain')]);
    await untilReady(sim, 'orders');
    const password = dataOf(sim, 'Secret', 'orders-superuser')?.password;
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    expect(child(sim, 'Pooler', 'orders-pooler-rw')).toBeUndefined();
    for (const c of CHILDREN) {
      const kept = child(sim, c.kind, c.name);
      expect(kept, `${c.kind} retained`).toBeDefined();
      expect(kept?.metadata.ownerReferences ?? []).toEqual([]);
    }

    sim.api.create(pooled('Retain'));
    await untilReady(sim, 'orders');
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    for (const c of CHILDREN) {
      expect(child(sim, c.kind, c.name)?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    }
    expect(dataOf(sim, 'Secret', 'orders-superuser')?.password).toBe(password);
    const adopted = sim.events.events.filter((e) => e.reason.endsWith('Adopted') && e.regarding.uid === uid);
    expect(adopted.map((e) => `${e.reason}/${e.action}`).sort()).toEqual([
      'CNPGClusterAdopted/AdoptCNPGCluster',
      'EndpointsAdopted/AdoptConfigMap',
      'SuperuserSecretAdopted/AdoptSecret',
    ]);
  });
});

describe('13. restart safety', () => {
  /** Conditions without their times: a restart may shift when things happen, never what. */
  const settled = (sim: Simulation) => {
    const { conditions, stateSince: _s, ...rest } = statusOf(sim, 'orders');
    return { ...rest, conditions: conditions?.map(({ lastTransitionTime: _t, ...c }) => c) };
  };

  const scenario = async (restartAtPass?: number) => {
    let restarted = false;
    const sim: Simulation = simulationWith(
      [
        clusterObject('orders', {
          instances: 2,
          connectionPoolerEnabled: true,
          managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
        }),
        passwordSecret('app-password', 'app'),
      ],
      {
        onPass: () => {
          if (!restarted && restartAtPass !== undefined && sim.passes.length === restartAtPass) {
            restarted = true;
            sim.restartOperator();
          }
        },
      },
    );
    await untilReady(sim, 'orders');
    sim.cnpg.switchover(NS, 'orders');
    await sim.run(60_000);
    editSpec(sim, 'orders', (spec) => ({ ...spec, connectionPoolerEnabled: false }));
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    return { sim, restarted };
  };

  it('reaches the same final status after a restart at any pass', async () => {
    const { sim: reference } = await scenario();
    const expected = settled(reference);
    expect(expected.state).toBe('Ready');
    for (let k = 1; k < reference.passes.length; k++) {
      const { sim, restarted } = await scenario(k);
      expect(restarted).toBe(true);
      expect(settled(sim), `restart after pass ${k}`).toEqual(expected);
    }
  });
});

describe('15. suspend', () => {
  it('stops every write to the children, reports Suspended, and resumes where it stopped', async () => {
    const sim = simulationWith([pooled('Retain')]);
    await untilReady(sim, 'orders');
    editSpec(sim, 'orders', (spec) => ({ ...spec, suspend: true }));
    await sim.run(10_000);
    expect(statusOf(sim, 'orders').phase).toBe('Suspended');
    expect(conditionSummary(sim, 'orders')).toMatchObject({ Ready: 'False/Suspended', Reconciling: 'False/Suspended' });
    const mark = sim.api.writes.length;
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    editSpec(sim, 'orders', (spec) => ({ ...spec, instances: 2 }));
    await sim.run(5 * 60_000);
    const ours = sim.api.writes
      .slice(mark)
      .filter((w) => ['Cluster', 'Secret', 'ConfigMap', 'Pooler'].includes(w.kind) && w.verb !== 'update');
    expect(ours.map((w) => `${w.verb} ${w.kind}`)).toEqual(['delete ConfigMap']);
    expect(child(sim, 'ConfigMap', 'orders-endpoints')).toBeUndefined();
    expect(conditionSummary(sim, 'orders').ConfigMapsReady).toBe('False/ConfigMapPending');

    editSpec(sim, 'orders', (spec) => ({ ...spec, suspend: false }));
    await untilReady(sim, 'orders');
    expect(child(sim, 'ConfigMap', 'orders-endpoints')).toBeDefined();
    expect(statusOf(sim, 'orders').readyInstances).toBe(2);
    expect(reasonsOf(sim, 'orders')).toEqual(expect.arrayContaining(['Suspended', 'Resumed']));
  });

  it('still deletes a suspended cluster', async () => {
    const sim = simulationWith([pooled('Delete')]);
    await untilReady(sim, 'orders');
    editSpec(sim, 'orders', (spec) => ({ ...spec, suspend: true }));
    await sim.run(1_000);
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    expect(child(sim, 'Cluster', 'orders')).toBeUndefined();
  });
});

describe('malformed children never stop the pipeline for long', () => {
  it('treats a ConfigMap with a foreign controller as a failure of its step, not a crash', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    sim.api.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'orders-endpoints',
        namespace: NS,
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'x', uid: 'other', controller: true }],
      },
      data: {},
    } as unknown as StoredObject);
    await sim.run(3 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ConfigMap');
    expect(conditionSummary(sim, 'orders').ConfigMapsReady).toBe('False/ConfigMapOwnedByOther');
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    await untilReady(sim, 'orders');
  });
});
