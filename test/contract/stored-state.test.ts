/**
 * The world decides what is destroyed; the stored state is only a hint. A `status.state` written by hand
 * (anyone with `postgresclusters/status` patch rights can) into a live, Ready cluster deletes nothing,
 * releases nothing, keeps the finalizer, earns one Warning naming the value, and the cluster goes on
 * from the state the world implies — including later spec edits after a hand-written final state.
 */
import { describe, expect, it } from 'vitest';
import { lifecycleChart } from '../../machines/chart.ts';
import { storableStates } from '../../machines/state-path.ts';
import { isDeletingState } from '../../machines/states.ts';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { EventReason } from '../../src/operator/domain/vocabulary.ts';
import {
  clusterObject,
  editSpec,
  eventsOf,
  getCluster,
  NS,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const key = { namespace: NS, name: 'orders' };
const CHILDREN = [
  { kind: 'Secret', name: 'orders-superuser' },
  { kind: 'Cluster', name: 'orders' },
  { kind: 'Pooler', name: 'orders-pooler-rw' },
  { kind: 'Pooler', name: 'orders-pooler-ro' },
  { kind: 'ConfigMap', name: 'orders-endpoints' },
];
/** State names come from the machine package: the first deletion step, the final state. */
const FIRST_DELETION_STEP = storableStates().find(isDeletingState) as string;
const FINAL = lifecycleChart.states.find((s) => s.type === 'final')?.path as string;

/** Writes `state` into the stored status of the cluster, leaving the rest of the status as pgfsm wrote it. */
function tamper(sim: Simulation, state: string) {
  const cluster = getCluster(sim, 'orders') as PostgresCluster;
  sim.api.updateStatus({ kind: 'PostgresCluster', ...key }, { ...cluster.status, state });
}

async function readyWithDeletePolicy() {
  const sim = simulationWith([
    clusterObject('orders', { connectionPoolerEnabled: true, clusterDeletionPolicy: 'Delete' }),
  ]);
  await untilReady(sim, 'orders');
  return sim;
}

const eventsSince = (sim: Simulation, mark: number) => eventsOf(sim, 'orders').slice(mark);

describe('a status.state written by hand into a live cluster', () => {
  it(`${FIRST_DELETION_STEP} with policy Delete: every child stays, the finalizer stays, one Warning, Ready again`, async () => {
    const sim = await readyWithDeletePolicy();
    const writes = sim.api.writes.length;
    const events = eventsOf(sim, 'orders').length;
    const ready = statusOf(sim, 'orders').state;
    tamper(sim, FIRST_DELETION_STEP);
    await sim.reconcileNow(key);
    await sim.run(5 * 60_000);

    for (const c of CHILDREN) {
      expect(sim.api.get({ kind: c.kind, namespace: NS, name: c.name }), `${c.kind} ${c.name}`).toBeDefined();
    }
    const destructive = sim.api.writes
      .slice(writes)
      .filter((w) => w.verb === 'delete' || (w.kind !== 'PostgresCluster' && w.verb === 'update'));
    expect(destructive).toEqual([]);
    expect(getCluster(sim, 'orders')?.metadata.finalizers).toEqual(['pgfsm.io/finalizer']);
    expect(statusOf(sim, 'orders').state).toBe(ready);

    const after = eventsSince(sim, events);
    expect(after.map((e) => `${e.type}/${e.reason}`)).toEqual([`Warning/${EventReason.StoredStateDiscarded}`]);
    expect(after[0]?.message).toContain(JSON.stringify(FIRST_DELETION_STEP));
    expect(after[0]?.message).toContain('deletionTimestamp');
  });

  it(`${FINAL} does not freeze the cluster: a later spec edit is applied`, async () => {
    const sim = await readyWithDeletePolicy();
    const events = eventsOf(sim, 'orders').length;
    tamper(sim, FINAL);
    await sim.reconcileNow(key);
    await sim.run(60_000);
    expect(eventsSince(sim, events).map((e) => e.reason)).toEqual([EventReason.StoredStateDiscarded]);
    expect(statusOf(sim, 'orders').state).not.toBe(FINAL);

    editSpec(sim, 'orders', (spec) => ({ ...spec, instances: 2 }));
    await sim.run(5_000);
    await untilReady(sim, 'orders');
    const cnpg = sim.api.get({ kind: 'Cluster', namespace: NS, name: 'orders' }) as { spec?: { instances?: number } };
    expect(cnpg.spec?.instances).toBe(2);
    for (const c of CHILDREN) expect(sim.api.get({ kind: c.kind, namespace: NS, name: c.name })).toBeDefined();
  });

  it('every state and some garbage: nothing destroyed, no announcement but the one Warning when it does not fit', async () => {
    const compound = lifecycleChart.states.filter((s) => s.type === 'compound').map((s) => s.path);
    for (const state of [...storableStates(), FINAL, ...compound, '', 'Nope', 'Provisioning.Nope']) {
      const sim = await readyWithDeletePolicy();
      const writes = sim.api.writes.length;
      const events = eventsOf(sim, 'orders').length;
      tamper(sim, state);
      await sim.reconcileNow(key);
      await sim.run(2 * 60_000);
      const after = eventsSince(sim, events).map((e) => e.reason);
      // Ready written over Ready is the one value that fits: nothing at all happens.
      expect(after, state).toEqual(state === statusOf(sim, 'orders').state ? [] : [EventReason.StoredStateDiscarded]);
      expect(
        sim.api.writes.slice(writes).filter((w) => w.verb === 'delete'),
        state,
      ).toEqual([]);
      expect(getCluster(sim, 'orders')?.metadata.finalizers, state).toEqual(['pgfsm.io/finalizer']);
    }
  });
});
