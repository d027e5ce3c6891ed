/** The controller: events enqueue at once, only a leader reconciles, and each outcome drives the queue. */
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { PortError } from '../../../src/operator/core/errors.ts';
import type { ClusterKey } from '../../../src/operator/core/ports.ts';
import type { ReconcileOutcome, Requeue } from '../../../src/operator/core/reconcile.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { Controller, STATUS_REPAIR_INTERVAL_MS } from '../../../src/operator/driver/controller.ts';
import type { ObjectSource, SourceEvent, WatchSources } from '../../../src/operator/driver/sources.ts';

class FakeSource<T extends KubeObject> implements ObjectSource<T> {
  synced = true;
  lastSeen = 0;
  private readonly objects = new Map<string, T>();
  private readonly listeners = new Set<(e: SourceEvent<T>) => void>();
  constructor(readonly resource: string) {}
  fresh = () => true;
  get = (namespace: string, name: string) => this.objects.get(`${namespace}/${name}`);
  list = (namespace?: string) =>
    [...this.objects.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  on(listener: (e: SourceEvent<T>) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  start() {}
  async stop() {}
  /** Stores the object and notifies, as an informer would. */
  put(object: T): void {
    const key = `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const old = this.objects.get(key);
    this.objects.set(key, object);
    for (const l of this.listeners) l(old ? { type: 'update', object, old } : { type: 'add', object });
  }
}

const sources = () => ({
  clusters: new FakeSource<PostgresCluster>('postgresclusters'),
  classes: new FakeSource('postgresclusterclasses'),
  cnpgClusters: new FakeSource('clusters'),
  poolers: new FakeSource('poolers'),
  secrets: new FakeSource('secrets'),
  configMaps: new FakeSource('configmaps'),
  deployments: new FakeSource('deployments'),
});

const pgc = (name: string, generation = 1): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'ns', name, generation, resourceVersion: String(generation) },
  spec: { class: 'standard' },
});

const outcomeFor = (key: ClusterKey, requeue: Requeue, extra: Partial<ReconcileOutcome> = {}): ReconcileOutcome => ({
  key,
  found: true,
  requeue,
  statusWritten: false,
  writes: 0,
  events: [],
  ...extra,
});

let src: ReturnType<typeof sources>;
let passes: string[];
let decide: (key: ClusterKey) => ReconcileOutcome | Promise<ReconcileOutcome>;
let controller: Controller;

function makeController(resyncPeriodMs = 0, random?: () => number): Controller {
  return new Controller({
    sources: src as unknown as WatchSources,
    reconcile: async (key) => {
      passes.push(key.name);
      return decide(key);
    },
    workers: 2,
    logger: pino({ level: 'silent' }),
    resyncPeriodMs,
    ...(random ? { random } : {}),
  });
}

/** Lets workers pick up and finish whatever is due, with timers advanced by `ms`. */
const settle = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

beforeEach(() => {
  vi.useFakeTimers();
  src = sources();
  passes = [];
  decide = (key) => outcomeFor(key, { kind: 'none' });
  controller = makeController();
  controller.watch();
});
afterEach(async () => {
  await controller.shutDown();
  vi.useRealTimers();
});

describe('Controller', () => {
  it('on becoming leader enqueues every cached cluster (nothing lives only in memory)', async () => {
    src.clusters.put(pgc('a'));
    src.clusters.put(pgc('b'));
    await settle();
    expect(passes).toEqual([]);
    controller.startWorkers();
    await settle();
    expect(passes.sort()).toEqual(['a', 'b']);
  });

  it('a watch event is reconciled at once, with no poll in between', async () => {
    controller.startWorkers();
    await settle();
    src.clusters.put(pgc('a'));
    await settle();
    expect(passes).toEqual(['a']);
    // A label does not wake it (a pass never reads the cluster's own); a spec change does.
    src.clusters.put({ ...pgc('a'), metadata: { ...pgc('a').metadata, labels: { team: 'a' } } });
    await settle();
    expect(passes).toEqual(['a']);
    src.clusters.put(pgc('a', 2));
    await settle();
    expect(passes).toEqual(['a', 'a']);
  });

  it('maps child events to their cluster', async () => {
    controller.startWorkers();
    src.secrets.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: 'ns', name: 'x-superuser', labels: { 'pgfsm.io/cluster': 'x' } },
    });
    await settle();
    expect(passes).toEqual(['x']);
  });

  it('an event at a version the pass followed wakes nothing, while it runs or after; any other event still wakes', async () => {
    const configMap = (name: string, resourceVersion: string, cluster = name) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: 'ns', name: `${name}-config`, resourceVersion, labels: { 'pgfsm.io/cluster': cluster } },
    });
    const followed = (name: string, resourceVersion: string) => [
      { kind: 'ConfigMap', namespace: 'ns', name: `${name}-config`, resourceVersion },
    ];
    let release: () => void = () => {};
    decide = (key) =>
      key.name === 'a' && passes.length === 1
        ? new Promise((resolve) => {
            release = () => resolve(outcomeFor(key, { kind: 'none' }, { followed: followed('a', '7') }));
          })
        : outcomeFor(key, { kind: 'none' }, key.name === 'b' ? { followed: followed('b', '3') } : {});
    controller.startWorkers();
    src.clusters.put(pgc('a'));
    await settle();
    // The echo of the pass's own write comes while it runs: held, then dropped by the outcome.
    src.configMaps.put(configMap('a', '7'));
    release();
    await settle();
    expect(passes).toEqual(['a']);
    // The object's next version is someone else's change: it wakes.
    src.configMaps.put(configMap('a', '8'));
    await settle();
    expect(passes).toEqual(['a', 'a']);

    // An echo that comes after the pass is dropped too, once; another cluster's pass covers nothing of this one's.
    src.clusters.put(pgc('b'));
    await settle();
    expect(passes).toEqual(['a', 'a', 'b']);
    src.configMaps.put(configMap('b', '3'));
    await settle();
    expect(passes).toEqual(['a', 'a', 'b']);
    src.configMaps.put(configMap('b', '3', 'a'));
    await settle();
    expect(passes).toEqual(['a', 'a', 'b', 'a']);
  });

  describe('a status that only changed', () => {
    /** The cluster `a` with `state` in its status, at `resourceVersion` (the generation stays 1). */
    const withStatus = (state: string, resourceVersion: string): PostgresCluster => ({
      ...pgc('a'),
      metadata: { ...pgc('a').metadata, resourceVersion },
      status: { state } as PostgresCluster['status'],
    });

    it('wakes the cluster when someone else wrote it; the echo of its own status write, while its pass runs or after, does not', async () => {
      let release: () => void = () => {};
      // The first pass writes Ready at version 5 and is held open; every later one writes Ready at the next version.
      decide = (key) =>
        passes.length === 1
          ? new Promise((resolve) => {
              release = () => resolve(outcomeFor(key, { kind: 'none' }, { statusWritten: true, statusVersion: '5' }));
            })
          : outcomeFor(key, { kind: 'none' }, { statusWritten: true, statusVersion: String(passes.length + 5) });
      controller.startWorkers();
      src.clusters.put(pgc('a'));
      await settle();
      // The watch delivers the status write before its answer: held, then recognised once the pass ends.
      src.clusters.put(withStatus('Ready', '5'));
      release();
      await settle();
      expect(passes).toEqual(['a']);

      // Written by hand: the cluster is woken at once, and the echo of the status its pass writes back is not.
      src.clusters.put(withStatus('Failed', '6'));
      await settle();
      expect(passes).toEqual(['a', 'a']);
      src.clusters.put(withStatus('Ready', '7'));
      await settle();
      expect(passes).toEqual(['a', 'a']);
    });

    it('someone who keeps writing it back wakes the cluster once a second at most, not as fast as both can write', async () => {
      decide = (key) =>
        outcomeFor(key, { kind: 'none' }, { statusWritten: true, statusVersion: `own-${passes.length}` });
      controller.startWorkers();
      src.clusters.put(pgc('a'));
      await settle();
      expect(passes).toEqual(['a']);
      // Every millisecond for two seconds, another writer's status (the operator's own answers never match it).
      for (let ms = 0; ms < 2_000; ms++) {
        src.clusters.put(withStatus(ms % 2 ? 'Failed' : 'Pending', `their-${ms}`));
        await settle(1);
      }
      await settle(STATUS_REPAIR_INTERVAL_MS);
      // The first at once, then one at the end of each interval the writes went on into.
      expect(passes.length - 1).toBe(3);
      // A spec change is no status: it wakes the cluster at once, whatever the status writes hold back.
      const before = passes.length;
      src.clusters.put({ ...pgc('a', 2), status: { state: 'Failed' } as PostgresCluster['status'] });
      await settle();
      expect(passes.length).toBe(before + 1);
    });

    it('a standby queues what it sees without passing it; on becoming leader every cluster is passed anyway', async () => {
      src.clusters.put(pgc('a'));
      src.clusters.put(withStatus('Failed', '2'));
      await settle(STATUS_REPAIR_INTERVAL_MS);
      expect(passes).toEqual([]);
      controller.startWorkers();
      await settle();
      expect(passes).toEqual(['a']);
    });
  });

  it('a mapping that throws for one event is logged and costs no other event', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    await controller.shutDown();
    controller = new Controller({
      sources: src as unknown as WatchSources,
      reconcile: async (key) => {
        passes.push(key.name);
        return decide(key);
      },
      workers: 2,
      logger,
      resyncPeriodMs: 0,
    });
    controller.watch();
    controller.startWorkers();
    // A class event reads every cached cluster; make that lookup throw once, as a bug in it would.
    const list = src.clusters.list;
    src.clusters.list = () => {
      src.clusters.list = list;
      throw new TypeError("Cannot read properties of undefined (reading 'class')");
    };
    expect(() =>
      src.classes.put({
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresClusterClass',
        metadata: { name: 'standard' },
      }),
    ).not.toThrow();
    src.secrets.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: 'ns', name: 'x-superuser', labels: { 'pgfsm.io/cluster': 'x' } },
    });
    await settle();
    expect(passes).toEqual(['x']);
    expect(lines).toEqual([
      expect.objectContaining({ reason: 'MappingThrew', kind: 'PostgresClusterClass', name: 'standard' }),
    ]);
  });

  it('a standby keeps caches and queue but never reconciles; stepping down stops the passes', async () => {
    src.clusters.put(pgc('a'));
    await settle(60_000);
    expect(passes).toEqual([]);
    controller.startWorkers();
    await settle();
    expect(passes).toEqual(['a']);
    await controller.stopWorkers();
    expect(controller.leading).toBe(false);
    src.clusters.put(pgc('a', 2));
    await settle(60_000);
    expect(passes).toEqual(['a']);
  });

  it('requeue none forgets the key; requeue after comes back after the delay, not before', async () => {
    decide = (key) => outcomeFor(key, passes.length === 1 ? { kind: 'after', ms: 15_000 } : { kind: 'none' });
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle();
    expect(passes).toEqual(['a']);
    await settle(14_999);
    expect(passes).toEqual(['a']);
    await settle(1);
    expect(passes).toEqual(['a', 'a']);
    await settle(60_000);
    expect(passes).toEqual(['a', 'a']);
    expect(controller.queue.numRequeues('ns/a')).toBe(0);
  });

  it('errors back off exponentially per key, and the first clean pass forgets the failures', async () => {
    let failing = 4;
    decide = (key) =>
      failing-- > 0
        ? outcomeFor(key, { kind: 'backoff', error: 'x' }, { error: new PortError('other', 'boom') })
        : outcomeFor(key, { kind: 'none' });
    const times: number[] = [];
    const start = Date.now();
    const reconcile = decide;
    decide = (key) => {
      times.push(Date.now() - start);
      return reconcile(key);
    };
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(1000);
    expect(times).toEqual([0, 5, 15, 35, 75]);
    expect(controller.queue.numRequeues('ns/a')).toBe(0);
  });

  it('a 429 comes back when its Retry-After says (+ up to 20 %), and without one as a transient error', async () => {
    let failing = 3;
    const times: number[] = [];
    const start = Date.now();
    decide = (key) => {
      times.push(Date.now() - start);
      failing--;
      if (failing < 0) return outcomeFor(key, { kind: 'none' });
      const error = new PortError('tooManyRequests', 'slow down', undefined, failing > 0 ? 2_000 : undefined);
      return outcomeFor(
        key,
        { kind: 'throttled', ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}), error },
        { error },
      );
    };
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(10_000);
    expect(times).toHaveLength(4);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    // Retry-After: 2 s twice (never sooner, at most 20 % later); then none: the third 429 in a row backs
    // off as a transient error would after two failures, 200 ms ± 20 %.
    for (const gap of gaps.slice(0, 2)) {
      expect(gap).toBeGreaterThanOrEqual(2_000);
      expect(gap).toBeLessThanOrEqual(2_400);
    }
    expect(gaps[2]).toBeGreaterThanOrEqual(160);
    expect(gaps[2]).toBeLessThanOrEqual(240);
    expect(controller.queue.numRequeues('ns/a')).toBe(0);
  });

  it('transient errors back off from 50 ms on their own counter, not the conflicts’', async () => {
    const outcomes: Array<[Requeue, PortError]> = [
      [{ kind: 'immediate' }, new PortError('conflict', 'modified')],
      [{ kind: 'immediate' }, new PortError('conflict', 'modified')],
      [{ kind: 'immediate' }, new PortError('conflict', 'modified')],
      [{ kind: 'transient', error: 'reset' }, new PortError('unavailable', 'ECONNRESET')],
    ];
    const times: number[] = [];
    const start = Date.now();
    decide = (key) => {
      times.push(Date.now() - start);
      const next = outcomes.shift();
      return next ? outcomeFor(key, next[0], { error: next[1] }) : outcomeFor(key, { kind: 'none' });
    };
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(1_000);
    expect(times).toHaveLength(5);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    expect(gaps.slice(0, 3)).toEqual([5, 10, 20]);
    // The first transient failure: 50 ms ± 20 %, whatever conflicts came before.
    expect(gaps[3]).toBeGreaterThanOrEqual(40);
    expect(gaps[3]).toBeLessThanOrEqual(60);
    expect(controller.queue.numRequeues('ns/a')).toBe(0);
  });

  it('a backoff state without error keeps growing its delay instead of looping at the base delay', async () => {
    decide = (key) => outcomeFor(key, { kind: 'backoff', error: new Error('state Failed') });
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(1000);
    // 0, 5, 15, 35, 75, 155, 315, 635 ms: eight passes in the first second, not two hundred.
    expect(passes).toHaveLength(8);
    expect(controller.queue.numRequeues('ns/a')).toBe(8);
  });

  it('an immediate requeue (conflict) runs again within milliseconds', async () => {
    decide = (key) =>
      passes.length === 1
        ? outcomeFor(key, { kind: 'immediate' }, { error: new PortError('conflict', 'modified') })
        : outcomeFor(key, { kind: 'none' });
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(10);
    expect(passes).toEqual(['a', 'a']);
  });

  it('a conflict that keeps coming back backs off instead of hammering the API server', async () => {
    decide = (key) => outcomeFor(key, { kind: 'immediate' }, { error: new PortError('conflict', 'modified') });
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(1_000);
    // 5 ms doubling: about 8 passes in the first second, not thousands.
    expect(passes.length).toBeGreaterThan(3);
    expect(passes.length).toBeLessThan(12);
  });

  it('a cluster that is gone is forgotten and not requeued', async () => {
    decide = (key) => outcomeFor(key, { kind: 'none' }, { found: false });
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(60_000);
    expect(passes).toEqual(['a']);
  });

  it('a reconcile that throws is retried with backoff', async () => {
    decide = (key) => {
      if (passes.length < 3) throw new Error('bug');
      return outcomeFor(key, { kind: 'none' });
    };
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle(100);
    expect(passes).toEqual(['a', 'a', 'a']);
  });

  it('re-enqueues every cluster each resync period while leading', async () => {
    await controller.shutDown();
    controller = makeController(60_000);
    controller.watch();
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle();
    expect(passes).toEqual(['a']);
    await settle(70_000);
    expect(passes).toEqual(['a', 'a']);
  });

  it('takes its jitter from the injected random source (the simulation seeds it)', async () => {
    await controller.shutDown();
    // random() = 0 gives the shortest resync (0.9 of the period) and a 429 retry exactly at its Retry-After.
    controller = makeController(100_000, () => 0);
    controller.watch();
    src.clusters.put(pgc('a'));
    decide = (key) =>
      outcomeFor(
        key,
        passes.length === 1 ? { kind: 'throttled', retryAfterMs: 10_000, error: new Error('429') } : { kind: 'none' },
      );
    controller.startWorkers();
    await settle();
    await settle(9_999);
    expect(passes).toEqual(['a']);
    await settle(1);
    expect(passes).toEqual(['a', 'a']);
    await settle(90_000 - 10_000 - 1);
    expect(passes).toEqual(['a', 'a']);
    await settle(1);
    expect(passes).toEqual(['a', 'a', 'a']);
  });

  it('shutDown stops taking work and waits for the passes in flight', async () => {
    let release: () => void = () => {};
    decide = (key) => new Promise((resolve) => (release = () => resolve(outcomeFor(key, { kind: 'none' }))));
    src.clusters.put(pgc('a'));
    controller.startWorkers();
    await settle();
    expect(passes).toEqual(['a']);
    let done = false;
    const stopping = controller.shutDown().then(() => {
      done = true;
    });
    src.clusters.put(pgc('b'));
    await settle();
    expect(done).toBe(false);
    release();
    await stopping;
    expect(done).toBe(true);
    expect(passes).toEqual(['a']);
  });
});
