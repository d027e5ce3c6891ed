/**
 * A status someone else writes is seen at once (issue 28): on the simulation (the shipped driver over the
 * in-memory API and its watches), a PostgresCluster whose status is written by another hand is woken by that
 * write, and its pass writes back what the world says; the echo of that write wakes nothing, and a writer that
 * keeps putting its own status back costs a pass a second, not a loop. `kubectl get`, GitOps health checks
 * and alerts read the status: until then a hand-written one stood until the periodic resync, ten minutes on.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { EventReason } from '../../src/operator/domain/vocabulary.ts';
import { STATUS_REPAIR_INTERVAL_MS } from '../../src/operator/driver/controller.ts';
import {
  clusterObject,
  getCluster,
  NS,
  reasonsOf,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const ref = { kind: 'PostgresCluster', namespace: NS, name: 'orders' };

/** A Ready cluster with nothing left to do: its requeues and the CNPG simulator's steps are behind it. */
async function idleReady(): Promise<Simulation> {
  const sim = simulationWith([clusterObject('orders')]);
  await untilReady(sim, 'orders');
  await sim.run(60_000);
  return sim;
}

/** Passes of the cluster while `ms` of virtual time run. */
async function passesWithin(sim: Simulation, ms: number): Promise<number> {
  const before = sim.passCount;
  await sim.run(ms);
  return sim.passCount - before;
}

describe('a status written by someone else', () => {
  it('is written back at once by one pass, whose own write wakes no other', async () => {
    const sim = await idleReady();
    const ready = statusOf(sim, 'orders');
    const reasons = reasonsOf(sim, 'orders').length;
    expect(await passesWithin(sim, 60_000)).toBe(0);

    sim.api.updateStatus(ref, { ...ready, state: 'Nope' });
    expect(await passesWithin(sim, 1_000)).toBe(1);
    // The stored state did not fit the world: recomputed from it, said once (test/contract/stored-state.test.ts),
    // and Ready since now.
    expect({ ...statusOf(sim, 'orders'), stateSince: ready.stateSince }).toEqual(ready);
    expect(reasonsOf(sim, 'orders').slice(reasons)).toEqual([EventReason.StoredStateDiscarded]);
    expect(await passesWithin(sim, 60_000)).toBe(0);
  });

  it('is written back whichever field it changed, the state kept', async () => {
    const sim = await idleReady();
    const ready = statusOf(sim, 'orders');
    const conditions = (ready.conditions ?? []).map((c) =>
      c.type === 'Ready' ? { ...c, status: 'False' as const, reason: 'ByHand' } : c,
    );
    sim.api.updateStatus(ref, { ...ready, phase: 'Failed', conditions, readyInstances: 0 });
    expect(await passesWithin(sim, 1_000)).toBe(1);
    const repaired = statusOf(sim, 'orders');
    // The Ready condition flipped twice: its transition time is the repair's, the rest is as it was.
    const timeless = (status: PostgresClusterStatus) => ({
      ...status,
      conditions: status.conditions?.map((c) => ({ ...c, lastTransitionTime: undefined })),
    });
    expect(timeless(repaired)).toEqual(timeless(ready));
  });

  it('wakes nothing when it changes no field a pass reads: labels, annotations', async () => {
    const sim = await idleReady();
    const cluster = getCluster(sim, 'orders') as PostgresCluster;
    const metadata = { ...cluster.metadata, labels: { team: 'a' }, annotations: { note: 'by hand' } };
    sim.api.put({ ...cluster, metadata } as unknown as StoredObject);
    expect(await passesWithin(sim, 60_000)).toBe(0);
  });

  it('put back each time by another writer costs a pass a second, and the status is right once it stops', async () => {
    const sim = await idleReady();
    const ready = statusOf(sim, 'orders');
    // Another controller that writes its own status over pgfsm's each time it sees pgfsm's (at the same instant,
    // so without a bound the two would loop within one instant, which the simulation fails as a hot loop).
    const theirs = { ...ready, state: 'Theirs' };
    const stop = sim.api.onChange(() => {
      const stored = getCluster(sim, 'orders');
      if (stored?.status?.state !== 'Theirs') sim.api.updateStatus(ref, theirs);
    });
    sim.api.updateStatus(ref, theirs);
    const fight = 10_000;
    const passes = await passesWithin(sim, fight);
    expect(passes).toBeGreaterThanOrEqual(fight / STATUS_REPAIR_INTERVAL_MS - 1);
    expect(passes).toBeLessThanOrEqual(fight / STATUS_REPAIR_INTERVAL_MS + 1);

    stop();
    sim.api.updateStatus(ref, theirs);
    await sim.run(STATUS_REPAIR_INTERVAL_MS);
    expect(statusOf(sim, 'orders').state).toBe(ready.state);
    expect(await passesWithin(sim, 60_000)).toBe(0);
  });
});
