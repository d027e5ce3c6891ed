/**
 * A replica that loses the lease mid-pass (its writes refused with `notLeader` by the fenced ports) ends
 * the pass there: no status write, no Warning about a failed write, nothing requeued — what is left to do is
 * the next leader's, which enqueues every cluster when it starts. The reports of the writes the pass did make
 * wait in this process's outbox, for its own next term (the driver drops them if another replica led).
 */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { clusterObject, getCluster, NS, simulationWith, untilReady } from '../../src/tools/fixtures/simulation.ts';
import { override } from './support/faulty-ports.ts';

describe('a pass whose write is refused because the replica no longer leads', () => {
  it('writes no status, says nothing and leaves the cluster to the new leader', async () => {
    let leading = true;
    const refuse = (what: string) => {
      if (!leading) throw new PortError('notLeader', `${what} refused: not the leader`);
    };
    const fenced = (ports: Ports): Ports => ({
      ...ports,
      secrets: override(ports.secrets, {
        create: async (template: Parameters<Ports['secrets']['create']>[0]) => {
          refuse('create Secret');
          return ports.secrets.create(template);
        },
      }),
    });
    const sim = simulationWith([], { ports: fenced });
    leading = false;
    sim.api.create(clusterObject('orders'));
    // The first pass adds the finalizer (not fenced in this world) and goes on to create the Secret.
    const first = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    const second = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(second.requeue).toEqual({ kind: 'none' });
    expect(second.error).toBeUndefined();
    expect(second.statusWritten).toBe(false);
    expect(second.events).toEqual([]);
    expect(sim.events.events.map((e) => e.reason)).not.toContain('SuperUserSecretFailed');
    expect(getCluster(sim, 'orders')?.status?.conditions ?? []).not.toContainEqual(
      expect.objectContaining({ reason: 'SuperUserSecretFailed' }),
    );
    expect(first.found && second.found).toBe(true);
  });
});

describe('a pass that made writes before the refusal', () => {
  it('keeps their reports, and the next pass after the replica leads again sends them, once', async () => {
    let leading = true;
    let applied = 0;
    const fenced = (ports: Ports): Ports => ({
      ...ports,
      poolers: override(ports.poolers, {
        apply: async (...args: Parameters<Ports['poolers']['apply']>) => {
          if (!leading) throw new PortError('notLeader', 'apply Pooler refused: not the leader');
          const answer = await ports.poolers.apply(...args);
          // The lease is lost right after the first Pooler has been applied: the second is refused.
          if (++applied === 1) leading = false;
          return answer;
        },
      }),
    });
    const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true })], { ports: fenced });
    await sim.run(60_000);
    expect(applied).toBe(1);
    const created = () => sim.events.events.filter((e) => e.reason === 'PoolersCreated');
    expect(created()).toEqual([]);

    leading = true;
    await sim.reconcileNow({ namespace: NS, name: 'orders' });
    await untilReady(sim, 'orders');
    // Both Poolers announced, each once: the one applied before the refusal too.
    expect(
      created()
        .map((e) => e.message)
        .sort(),
    ).toEqual([expect.stringContaining('orders-pooler-ro'), expect.stringContaining('orders-pooler-rw')]);
  });
});
