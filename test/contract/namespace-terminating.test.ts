/**
 * A namespace being deleted refuses every new object (403, cause NamespaceTerminating) while its deletion
 * takes the PostgresCluster too: a pass skips that refusal quietly. No Warning, no failure condition, no
 * backoff: the state's own requeue, as if the write were still to come.
 */
import { describe, expect, it } from 'vitest';
import { WRITE_FAILURE_REASON } from '../../src/operator/domain/vocabulary.ts';
import {
  clusterObject,
  conditionOf,
  eventsOf,
  NS,
  simulationWith,
  statusOf,
} from '../../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const key = { namespace: NS, name: 'inventory' };

/** The conditions that report a failed write. */
const failureReasons = (sim: Simulation) =>
  (statusOf(sim, 'inventory').conditions ?? [])
    .map((c) => c.reason)
    .filter((reason) => (Object.values(WRITE_FAILURE_REASON) as string[]).includes(reason));

describe('a create refused because the namespace is being deleted', () => {
  it('re-creating a deleted CNPG Cluster there: no Warning, no failure condition, the normal requeue', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    expect(statusOf(sim, 'inventory').state).toBe('Provisioning.Cluster');
    const warnings = () => eventsOf(sim, 'inventory').filter((e) => e.type === 'Warning');
    expect(warnings()).toEqual([]);
    // The namespace's deletion removes the CNPG Cluster; pgfsm would create it again, and is refused.
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', 'namespaceTerminating', Number.POSITIVE_INFINITY);
    for (let i = 0; i < 3; i++) {
      const outcome = await sim.reconcileNow(key);
      expect(outcome.error).toBeUndefined();
      expect(outcome.requeue).toEqual({ kind: 'after', ms: expect.any(Number) });
      if (outcome.requeue.kind === 'after') expect(outcome.requeue.ms).toBeGreaterThanOrEqual(1_000);
    }
    expect(sim.api.get({ kind: 'Cluster', namespace: NS, name: 'inventory' })).toBeUndefined();
    expect(warnings()).toEqual([]);
    expect(failureReasons(sim)).toEqual([]);
    expect(conditionOf(sim, 'inventory', 'ClusterReady').reason).toBe('CNPGClusterPending');
    expect(statusOf(sim, 'inventory').state).toBe('Provisioning.Cluster');
  });

  it('the superuser Secret of a new cluster there is not created, quietly', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    sim.api.injectFault('Secret', 'create', 'namespaceTerminating', Number.POSITIVE_INFINITY);
    for (let i = 0; i < 3; i++) {
      const outcome = await sim.reconcileNow(key);
      expect(outcome.error).toBeUndefined();
      expect(['after', 'none']).toContain(outcome.requeue.kind);
    }
    expect(eventsOf(sim, 'inventory').filter((e) => e.type === 'Warning')).toEqual([]);
    expect(failureReasons(sim)).toEqual([]);
    expect(sim.api.get({ kind: 'Secret', namespace: NS, name: 'inventory-superuser' })).toBeUndefined();
  });

  it('unlike a refusal for any other reason, which warns and backs off', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', 'forbidden', 1);
    const outcome = await sim.reconcileNow(key);
    expect(outcome.requeue.kind).toBe('backoff');
    expect(eventsOf(sim, 'inventory').filter((e) => e.type === 'Warning')).not.toEqual([]);
  });
});
