/** Behaviour contract 7, 8, 14: failed writes, error classes, progress deadlines. */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../src/operator/core/errors.ts';
import {
  clusterObject,
  conditionOf,
  conditionSummary,
  NS,
  reasonsOf,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';

const key = { namespace: NS, name: 'inventory' };

describe('7. status is persisted on every outcome', () => {
  it('stores the failed condition of a failed apply before returning the error', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    expect(statusOf(sim, 'inventory').state).toBe('Provisioning.Cluster');
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', 'forbidden', 1);
    const outcome = await sim.reconcileNow(key);
    expect(outcome.statusWritten).toBe(true);
    expect(outcome.requeue.kind).toBe('backoff');
    expect(conditionOf(sim, 'inventory', 'ClusterReady')).toMatchObject({
      status: 'False',
      reason: 'ClusterApplyFailed',
      message: expect.stringContaining('injected forbidden'),
    });
    expect(conditionSummary(sim, 'inventory').Ready).toBe('False/ClusterApplyFailed');
    // The event of the failed write is not emitted; one Warning is.
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'CNPGClusterCreated')).toHaveLength(1);
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'ClusterApplyFailed')).toHaveLength(1);
  });

  it('warns once per new failure, not once per retry', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', 'forbidden', 5);
    for (let i = 0; i < 5; i++) await sim.reconcileNow(key);
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'ClusterApplyFailed')).toHaveLength(1);
    await sim.reconcileNow(key);
    expect(sim.api.get({ kind: 'Cluster', namespace: NS, name: 'inventory' })).toBeDefined();
    expect(conditionOf(sim, 'inventory', 'ClusterReady').reason).not.toBe('ClusterApplyFailed');
  });
});

describe('8. error classes', () => {
  const failOnce = async (errorClass: ConstructorParameters<typeof PortError>[0]) => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', errorClass, 1);
    return sim.reconcileNow(key);
  };

  it('requeues a conflict at once', async () => {
    expect((await failOnce('conflict')).requeue).toEqual({ kind: 'immediate' });
  });

  it('requeues tooManyRequests throttled: after its Retry-After, else as a transient error', async () => {
    expect((await failOnce('tooManyRequests')).requeue.kind).toBe('throttled');
  });

  it.each(['serverTimeout', 'timeout', 'unavailable'] as const)(
    'requeues %s as transient: a short backoff, capped at seconds',
    async (c) => {
      expect((await failOnce(c)).requeue.kind).toBe('transient');
    },
  );

  it.each(['forbidden', 'notFound', 'other'] as const)('backs off on %s', async (c) => {
    expect((await failOnce(c)).requeue.kind).toBe('backoff');
  });

  it('never hides a business error behind a status-write conflict', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await sim.run(1_000);
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
    sim.api.injectFault('Cluster', 'apply', 'forbidden', 1);
    sim.api.injectFault('PostgresCluster', 'updateStatus', 'conflict', 1);
    const outcome = await sim.reconcileNow(key);
    expect(outcome.requeue.kind).toBe('backoff');
    expect(outcome.error).toBeInstanceOf(PortError);
    expect((outcome.error as PortError).errorClass).toBe('forbidden');
  });

  it('a status-write conflict alone requeues at once and announces nothing twice', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await untilReady(sim, 'inventory');
    sim.cnpg.switchover(NS, 'inventory', 60_000);
    sim.api.injectFault('PostgresCluster', 'updateStatus', 'conflict', 1);
    const first = await sim.reconcileNow(key);
    expect(first.requeue).toEqual({ kind: 'immediate' });
    expect(statusOf(sim, 'inventory').state).toBe('Ready');
    await sim.reconcileNow(key);
    expect(statusOf(sim, 'inventory').state).toBe('Degraded');
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'Degraded')).toHaveLength(1);
  });
});

describe('14. progress deadline', () => {
  it('turns Stalled True naming the state past the deadline and clears it when progress resumes', async () => {
    const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true })], {
      settings: { progressDeadlineMs: 5 * 60_000 },
    });
    sim.cnpg.poolerNeverReady(NS, 'orders-pooler-rw');
    await sim.run(4 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Pooler');
    expect(conditionOf(sim, 'orders', 'Stalled').status).toBe('False');
    await sim.run(3 * 60_000);
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      Stalled: 'True/ProvisioningPoolerDeadlineExceeded',
      Reconciling: 'False/Provisioning',
    });
    expect(conditionOf(sim, 'orders', 'Stalled').message).toContain('rw pooler has 0/2 ready instances');
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Pooler');
    sim.cnpg.clearFaults();
    await untilReady(sim, 'orders');
    expect(conditionSummary(sim, 'orders').Stalled).toBe('False/Ready');
  });

  it('looks again exactly when the deadline passes', async () => {
    const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true })], {
      settings: { progressDeadlineMs: 60_000, requeueDelayMs: 600_000 },
    });
    sim.cnpg.poolerNeverReady(NS, 'orders-pooler-rw');
    sim.cnpg.poolerNeverReady(NS, 'orders-pooler-ro');
    await sim.run(4 * 60_000);
    expect(conditionOf(sim, 'orders', 'Stalled').reason).toBe('ProvisioningPoolerDeadlineExceeded');
  });
});

describe('CNPG faults from the simulator', () => {
  it('a failover degrades the cluster and it recovers without a human', async () => {
    const sim = simulationWith([clusterObject('inventory', { instances: 3 })]);
    await untilReady(sim, 'inventory');
    sim.cnpg.failover(NS, 'inventory', 30_000);
    await sim.run(1_000);
    expect(statusOf(sim, 'inventory').state).toBe('Degraded');
    expect(conditionSummary(sim, 'inventory').ClusterReady).toBe('False/CNPGFailingOver');
    expect(statusOf(sim, 'inventory').readyInstances).toBe(2);
    await untilReady(sim, 'inventory');
    expect(statusOf(sim, 'inventory').currentPrimary).toBe('inventory-2');
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'Degraded')).toHaveLength(1);
  });

  it('an unrecoverable cluster is Failed and Stalled with one Warning, and leaves Failed when CNPG recovers', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await untilReady(sim, 'inventory');
    sim.cnpg.unrecoverable(NS, 'inventory');
    await sim.run(10 * 60_000);
    expect(statusOf(sim, 'inventory').state).toBe('Failed.Cluster');
    expect(conditionSummary(sim, 'inventory')).toMatchObject({
      Ready: 'False/CNPGUnrecoverable',
      Stalled: 'True/CNPGUnrecoverable',
      Reconciling: 'False/Failed',
    });
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'CNPGUnrecoverable')).toHaveLength(1);
    sim.cnpg.recover(NS, 'inventory');
    await untilReady(sim, 'inventory');
    expect(conditionSummary(sim, 'inventory').Stalled).toBe('False/Ready');
  });
});
