/**
 * The simulation the contract runs on is the shipped driver on a virtual clock: the same inputs give the
 * same run, the driver's own mapping, backoff and rate limits decide when a cluster is looked at, and a
 * machine that loops fails the run loudly.
 */
import { describe, expect, it } from 'vitest';
import type { ReconcileOutcome } from '../../src/operator/core/reconcile.ts';
import {
  clusterObject,
  NS,
  passwordSecret,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const fleet = () => [
  clusterObject('a', { instances: 2, connectionPoolerEnabled: true }),
  clusterObject('b', { managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }] }),
  clusterObject('c', { class: 'missing' }),
  passwordSecret('app-password', 'app'),
];

/** Each pass as `time name from→to requeue`, times relative to the start. */
function recorder() {
  const lines: string[] = [];
  let start: number | undefined;
  const onPass = (o: ReconcileOutcome, now: number) => {
    start ??= now;
    lines.push(`${now - start} ${o.key.name} ${o.from}→${o.to} ${o.requeue.kind}`);
  };
  return { lines, onPass };
}

/**
 * A cluster whose finalizer is already there, so that its first pass goes straight to the Secret and no
 * watch event of a write of its own wakes it besides the backoff under test.
 */
const withFinalizer = (cluster: StoredObject): StoredObject => ({
  ...cluster,
  metadata: { ...cluster.metadata, finalizers: ['pgfsm.io/finalizer'] },
});

describe('the simulation runs the shipped driver', () => {
  it('gives the same run for the same inputs', async () => {
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const { lines, onPass } = recorder();
      const sim = simulationWith(fleet(), { onPass });
      await sim.run(20 * 60_000);
      sim.cnpg.switchover(NS, 'a');
      sim.restartOperator();
      await sim.run(5 * 60_000);
      runs.push({ lines, events: sim.events.events, writes: sim.api.writes });
    }
    expect(runs[0]?.lines.length).toBeGreaterThan(20);
    expect(runs[1]).toEqual(runs[0]);
  });

  it('backs a persistently failing cluster off as the work queue does: 5 ms, doubling', async () => {
    const times: number[] = [];
    const sim = simulationWith([withFinalizer(clusterObject('orders'))], { onPass: (_o, now) => times.push(now) });
    sim.api.injectFault('Secret', 'create', 'forbidden', Number.POSITIVE_INFINITY);
    await sim.run(1_000);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    // Every pass fails (forbidden: the persistent class, controller-runtime's 5 ms start, capped at 5 min).
    expect(gaps.slice(0, 6)).toEqual([5, 10, 20, 40, 80, 160]);
  });

  it('backs a transient failure off from 50 ms, doubling, ±20 %, up to 30 s, on its own counter', async () => {
    const times: number[] = [];
    const sim = simulationWith([withFinalizer(clusterObject('orders'))], { onPass: (_o, now) => times.push(now) });
    sim.api.injectFault('Secret', 'create', 'unavailable', Number.POSITIVE_INFINITY);
    await sim.run(5 * 60_000);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    [50, 100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000].forEach((base, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
      expect(gaps[i]).toBeLessThanOrEqual(Math.ceil(base * 1.2));
    });
    // Capped: never more than 36 s between two tries while it lasts.
    expect(Math.max(...gaps)).toBeLessThanOrEqual(36_000);
    sim.api.clearFaults();
    await untilReady(sim, 'orders', 60_000);
  });

  it('retries a conflict after its own backoff (5 ms), not at the same instant', async () => {
    const passes: Array<{ at: number; requeue: string }> = [];
    const sim = simulationWith([clusterObject('orders')], {
      onPass: (o, now) => passes.push({ at: now, requeue: o.requeue.kind }),
    });
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    const mark = passes.length;
    sim.api.injectFault('PostgresCluster', 'updateStatus', 'conflict', 1);
    sim.cnpg.switchover(NS, 'orders', 60_000);
    await sim.run(1_000);
    const [conflict, retry] = passes.slice(mark);
    expect(conflict?.requeue).toBe('immediate');
    expect((retry?.at ?? 0) - (conflict?.at ?? 0)).toBe(5);
    expect(statusOf(sim, 'orders').state).toBe('Degraded');
  });

  it('wakes only the clusters whose roles name a changed password Secret', async () => {
    const sim = simulationWith([
      clusterObject('uses', { managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }] }),
      clusterObject('other'),
      passwordSecret('app-password', 'app'),
    ]);
    await untilReady(sim, 'uses');
    await untilReady(sim, 'other');
    await sim.run(60_000);
    const mark = sim.passes.length;
    const secret = sim.api.get({ kind: 'Secret', namespace: NS, name: 'app-password' }) as StoredObject;
    sim.api.put({ ...secret, stringData: { username: 'app', password: 'rotated' } });
    await sim.run(1);
    expect(sim.passes.slice(mark).map((p) => p.key.name)).toEqual(['uses']);
  });

  it('a restart is a new operator process: new queue, relist, every cluster looked at again', async () => {
    const sim = simulationWith([clusterObject('a'), clusterObject('b')]);
    await untilReady(sim, 'a');
    await untilReady(sim, 'b');
    await sim.run(60_000);
    const before = sim.controller;
    const mark = sim.passes.length;
    sim.restartOperator();
    expect(sim.controller).not.toBe(before);
    await sim.run(1);
    expect(sim.passes.slice(mark).map((p) => `${p.key.name} ${p.to}`)).toEqual(['a Ready', 'b Ready']);
  });

  it('runs PostgresDatabase passes as `pgfsm run` does, with CNPG’s Database controller simulated', async () => {
    const database = {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresDatabase',
      metadata: { name: 'shop', namespace: NS },
      spec: { cluster: 'orders', name: 'shop', owner: 'shop_owner', users: [{ name: 'reader', access: 'readOnly' }] },
    } as unknown as StoredObject;
    const sim = simulationWith([clusterObject('orders'), database]);
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    const stored = sim.api.get({ kind: 'PostgresDatabase', namespace: NS, name: 'shop' }) as StoredObject;
    expect((stored.status as { state?: string }).state).toBe('Ready');
    const cnpg = sim.api.get({ kind: 'Database', namespace: NS, name: 'shop' }) as StoredObject;
    expect(cnpg.status).toMatchObject({ applied: true, observedGeneration: cnpg.metadata.generation });
    expect(sim.databasePasses.map((p) => p.key.name)).toContain('shop');
    // Its Ready waits for nothing: a Ready database is passed again only when something it reads changes.
    const mark = sim.databasePassCount;
    await sim.run(60_000);
    expect(sim.databasePassCount).toBe(mark);
    // The database's own Secret, changed by hand, wakes it at once (driver/database-mapping.ts).
    const secret = sim.api.get({ kind: 'Secret', namespace: NS, name: 'shop-reader' }) as StoredObject;
    sim.api.put({ ...secret, metadata: { ...secret.metadata, labels: {} } });
    await sim.run(1);
    expect(sim.databasePassCount).toBeGreaterThan(mark);
  });

  it('fails the run loudly when one cluster loops', async () => {
    const sim: Simulation = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    // Another controller fights pgfsm over the endpoints ConfigMap: each repair is undone at once.
    sim.api.onChange(({ type, object }) => {
      if (type === 'deleted' || object.metadata.name !== 'orders-endpoints') return;
      const data = object.data as Record<string, string>;
      if (data.DEFAULT_CLUSTER_PORT !== '6543')
        sim.api.put({ ...object, data: { ...data, DEFAULT_CLUSTER_PORT: '6543' } });
    });
    const cm = sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' }) as StoredObject;
    sim.api.put({ ...cm, data: { ...(cm.data as object), DEFAULT_CLUSTER_PORT: '6543' } });
    await expect(sim.run(60_000)).rejects.toThrow(/hot loop: more than 50 passes for team-a\/orders/);
  });
});
