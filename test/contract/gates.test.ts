/** Behaviour contract 1 at its edges: what a blocked step, a missing class and a busy CNPG do to later steps. */
import { describe, expect, it } from 'vitest';
import { FINALIZER } from '../../src/operator/domain/vocabulary.ts';
import {
  clusterObject,
  conditionSummary,
  getCluster,
  NS,
  reasonsOf,
  simulationWith,
  standardClass,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const cnpgCluster = (sim: Simulation) => sim.api.get({ kind: 'Cluster', namespace: NS, name: 'orders' });
const superuserSecret = (sim: Simulation) => sim.api.get({ kind: 'Secret', namespace: NS, name: 'orders-superuser' });

describe('the CNPG Cluster waits for the superuser Secret', () => {
  it('is never written while the Secret cannot be created, and is once it can', async () => {
    let clusterWithoutSecret = false;
    const sim: Simulation = simulationWith([clusterObject('orders')], {
      onPass: () => {
        if (cnpgCluster(sim) && !superuserSecret(sim)) clusterWithoutSecret = true;
      },
    });
    sim.api.injectFault('Secret', 'create', 'forbidden', Number.POSITIVE_INFINITY);
    await sim.run(2 * 60_000);
    expect(sim.passes.length).toBeGreaterThan(5);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Secret');
    expect(cnpgCluster(sim)).toBeUndefined();
    expect(sim.api.writes.filter((w) => w.kind === 'Cluster')).toEqual([]);
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      SecretsReady: 'False/SuperUserSecretFailed',
      ClusterReady: 'False/WaitingForSecretsReady',
    });

    sim.api.clearFaults();
    await untilReady(sim, 'orders');
    expect(cnpgCluster(sim)).toBeDefined();
    expect(clusterWithoutSecret).toBe(false);
  });
});

describe('a missing PostgresClusterClass', () => {
  it('fails as ClassMissing with one Warning, and a class created later brings the cluster to Ready', async () => {
    const sim = simulationWith([clusterObject('orders', { class: 'premium' })]);
    await sim.run(30 * 60_000);
    // Looked at again at each resync (every 10 minutes), and still one Warning.
    expect(sim.passes.length).toBeGreaterThanOrEqual(3);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ClassMissing');
    // Nothing of it exists and nothing will be created while its class is missing: no finalizer to guard it.
    expect(getCluster(sim, 'orders')?.metadata.finalizers ?? []).toEqual([]);
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      Ready: 'False/ClusterClassNotFound',
      ClusterReady: 'False/ClusterClassNotFound',
      Stalled: 'True/ClusterClassNotFound',
    });
    const warnings = () => reasonsOf(sim, 'orders').filter((r) => r === 'ClusterClassNotFound');
    expect(warnings()).toHaveLength(1);
    expect(cnpgCluster(sim)).toBeUndefined();

    sim.api.create({ ...standardClass(), metadata: { name: 'premium', namespace: '' } } as StoredObject);
    // Noticed at once through the watch on classes: a failure state is not polled, it waits for a change.
    await untilReady(sim, 'orders', 2 * 60_000);
    expect(getCluster(sim, 'orders')?.metadata.generation).toBe(1);
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual([FINALIZER]);
    expect(warnings()).toHaveLength(1);
  });

  it('still gets its finalizer back first when children of it exist, so that a deletion cannot orphan them', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    // The class is gone — deleted, and its finalizer pgfsm.io/class-in-use forced off by hand (it would keep it
    // while the cluster uses it) — and, at the same time, someone removes the finalizer: the children are still ours.
    sim.api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    const terminating = sim.api.get<StoredObject>({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    if (terminating) sim.api.update({ ...terminating, metadata: { ...terminating.metadata, finalizers: [] } });
    expect(sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' })).toBeUndefined();
    const stored = getCluster(sim, 'orders') as unknown as StoredObject;
    sim.api.update({ ...stored, metadata: { ...stored.metadata, finalizers: [] } });
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ClassMissing');
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual([FINALIZER]);
    expect(cnpgCluster(sim)).toBeDefined();
  });
});

describe('a deleted ConfigMap during a CNPG switchover', () => {
  it('waits for ClusterReady, then is recreated when the switchover ends', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    sim.cnpg.switchover(NS, 'orders', 30_000);
    await sim.run(1_000);
    expect(statusOf(sim, 'orders').state).toBe('Degraded');
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    await sim.run(10_000);
    // The step order holds even here: the ConfigMap step does not act while the cluster step is not healthy.
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Cluster');
    expect(sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' })).toBeUndefined();
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      ClusterReady: 'False/CNPGSwitchover',
      ConfigMapsReady: 'False/WaitingForClusterReady',
    });

    await untilReady(sim, 'orders');
    expect(sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' })).toBeDefined();
    expect(conditionSummary(sim, 'orders').ConfigMapsReady).toBe('True/ConfigMapReconciled');
  });
});
