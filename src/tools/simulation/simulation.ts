/**
 * A deterministic, discrete-event run of the real reconcile core against the in-memory API and the CNPG
 * simulator, on a virtual clock. It behaves like the operator's work queue (one pass per key at a time,
 * watch events trigger a pass at once, requeue delays, per-key backoff), so a whole lifecycle of
 * simulated minutes runs in milliseconds and the same inputs always give the same run.
 */

import type { ClusterKey, Ports } from '../../operator/core/ports.ts';
import { keyString } from '../../operator/core/ports.ts';
import { type ReconcileOutcome, reconcile } from '../../operator/core/reconcile.ts';
import { defaultSettings, type Settings } from '../../operator/domain/observation.ts';
import { CLUSTER_LABEL } from '../../operator/domain/vocabulary.ts';
import { throttleDelay } from '../../operator/driver/workqueue.ts';
import { type Change, MemoryApiServer } from '../memory/api-server.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../memory/ports.ts';
import { CnpgSimulator, defaultDelays, type SimulatorDelays } from './cnpg-simulator.ts';
import { Heap } from './heap.ts';

export interface SimulationOptions {
  start?: number;
  settings?: Partial<Settings>;
  delays?: Partial<SimulatorDelays>;
  /** Called after every reconcile pass. */
  onPass?: (outcome: ReconcileOutcome, now: number) => void;
}

/** More passes than this for one key at one instant means the operator is stuck in a hot loop. */
const MAX_PASSES_PER_INSTANT = 50;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 5 * 60_000;

/**
 * A key due at `at`. `seq` is its place in the queue: given when the key is queued while absent, kept when
 * only its time moves earlier (as a Map keeps the place of a key whose value is replaced), so that keys
 * due at the same instant run in the order they were queued in.
 */
interface Due {
  key: ClusterKey;
  at: number;
  seq: number;
}

export class Simulation {
  readonly clock: ManualClock;
  readonly api: MemoryApiServer;
  readonly events: MemoryEventSink;
  ports: Ports;
  readonly cnpg: CnpgSimulator;
  readonly settings: Settings;
  readonly passes: ReconcileOutcome[] = [];
  private readonly due = new Map<string, Due>();
  /**
   * The entries of `due` by (at, seq), to take the next one in O(log n) rather than sort every due key on
   * every step (quadratic in the fleet). An entry whose key has since been dequeued or moved is stale:
   * it no longer matches `due` and is dropped when it comes up.
   */
  private readonly queue = new Heap<Due & { id: string }>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  private queued = 0;
  private readonly failures = new Map<string, number>();
  private readonly onPass: SimulationOptions['onPass'];

  constructor(options: SimulationOptions = {}) {
    this.clock = new ManualClock(options.start ?? Date.parse('2026-11-30T12:00:00Z'));
    this.api = new MemoryApiServer(() => this.clock.now());
    this.events = new MemoryEventSink(this.clock);
    this.ports = memoryPorts(this.api, this.clock, this.events);
    this.settings = { ...defaultSettings, ...options.settings };
    this.cnpg = new CnpgSimulator(this.api, this.clock, { ...defaultDelays, ...options.delays });
    this.onPass = options.onPass;
    this.api.onChange((change) => this.onChange(change));
  }

  /** Watch semantics: a change to a cluster or to anything it owns triggers a pass now. */
  private onChange(change: Change): void {
    const { object } = change;
    const namespace = object.metadata.namespace ?? '';
    if (object.kind === 'PostgresCluster') {
      if (!change.statusOnly) this.enqueue({ namespace, name: object.metadata.name });
      return;
    }
    if (object.kind === 'PostgresClusterClass') {
      for (const c of this.api.list('PostgresCluster')) {
        if ((c as { spec?: { class?: string } }).spec?.class === object.metadata.name) {
          this.enqueue({ namespace: c.metadata.namespace ?? '', name: c.metadata.name });
        }
      }
      return;
    }
    const owner = (object.metadata.ownerReferences ?? []).find((o) => o.kind === 'PostgresCluster');
    const name = owner?.name ?? object.metadata.labels?.[CLUSTER_LABEL] ?? this.ownerOfPoolerDeployment(object);
    if (name) this.enqueue({ namespace, name });
    // Password Secrets of managed roles belong to no cluster: wake every cluster in the namespace.
    if (object.kind === 'Secret' && !name) {
      for (const c of this.api.list('PostgresCluster', namespace)) this.enqueue({ namespace, name: c.metadata.name });
    }
  }

  private ownerOfPoolerDeployment(object: Change['object']): string | undefined {
    const pooler = (object.metadata.ownerReferences ?? []).find((o) => o.kind === 'Pooler');
    if (!pooler) return undefined;
    const found = this.api.get({ kind: 'Pooler', namespace: object.metadata.namespace ?? '', name: pooler.name });
    return found?.metadata.labels?.[CLUSTER_LABEL];
  }

  enqueue(key: ClusterKey, at = this.clock.now()): void {
    const id = keyString(key);
    const current = this.due.get(id);
    if (current && at >= current.at) return;
    const seq = current?.seq ?? ++this.queued;
    this.due.set(id, { key, at, seq });
    this.queue.push({ id, key, at, seq });
  }

  /** The key due first (ties: the one queued first), without taking it. */
  private nextDue(): Due | undefined {
    for (;;) {
      const top = this.queue.peek();
      if (!top) return undefined;
      const current = this.due.get(top.id);
      if (current && current.at === top.at && current.seq === top.seq) return current;
      this.queue.pop();
    }
  }

  private schedule(outcome: ReconcileOutcome): void {
    const id = keyString(outcome.key);
    if (!outcome.found) {
      this.due.delete(id);
      return;
    }
    const now = this.clock.now();
    const { requeue } = outcome;
    if (requeue.kind !== 'backoff' && requeue.kind !== 'throttled') this.failures.delete(id);
    switch (requeue.kind) {
      case 'none':
        return;
      case 'immediate':
        this.enqueue(outcome.key, now);
        return;
      case 'after':
        this.enqueue(outcome.key, now + requeue.ms);
        return;
      case 'throttled': {
        // As the work queue does, without its jitter: the simulation stays deterministic.
        const n = (this.failures.get(id) ?? 0) + 1;
        this.failures.set(id, n);
        this.enqueue(outcome.key, now + throttleDelay(n - 1, requeue.ms, BACKOFF_MAX_MS));
        return;
      }
      case 'backoff': {
        const n = (this.failures.get(id) ?? 0) + 1;
        this.failures.set(id, n);
        this.enqueue(outcome.key, now + Math.min(BACKOFF_BASE_MS * 2 ** (n - 1), BACKOFF_MAX_MS));
        return;
      }
    }
  }

  /** One pass for a key, now (as a worker would run it). */
  async reconcileNow(key: ClusterKey): Promise<ReconcileOutcome> {
    this.due.delete(keyString(key));
    const outcome = await reconcile(key, { ports: this.ports, settings: this.settings });
    this.passes.push(outcome);
    this.onPass?.(outcome, this.clock.now());
    this.schedule(outcome);
    return outcome;
  }

  /**
   * The operator process restarts: its work queue, backoff counters and ports are gone, the stored
   * objects stay. Like a real restart it then relists and enqueues every cluster.
   */
  restartOperator(): void {
    this.due.clear();
    this.queue.clear();
    this.failures.clear();
    this.ports = memoryPorts(this.api, this.clock, this.events);
    for (const c of this.api.list('PostgresCluster'))
      this.enqueue({ namespace: c.metadata.namespace ?? '', name: c.metadata.name });
  }

  /** Runs every pass and every simulator change due up to `until` (virtual ms), in time order. */
  async runUntil(until: number): Promise<void> {
    let instant = Number.NaN;
    const passesAtInstant = new Map<string, number>();
    for (;;) {
      this.cnpg.advance();
      const nextKey = this.nextDue();
      const nextSim = this.cnpg.nextEventAt();
      const next = Math.min(nextKey?.at ?? Number.POSITIVE_INFINITY, nextSim ?? Number.POSITIVE_INFINITY);
      if (next > until) break;
      if (next > this.clock.now()) this.clock.set(next);
      if (!nextKey || nextKey.at > this.clock.now()) continue;
      if (this.clock.now() !== instant) {
        instant = this.clock.now();
        passesAtInstant.clear();
      }
      const id = keyString(nextKey.key);
      const passes = (passesAtInstant.get(id) ?? 0) + 1;
      passesAtInstant.set(id, passes);
      if (passes > MAX_PASSES_PER_INSTANT) {
        throw new Error(`hot loop: more than ${MAX_PASSES_PER_INSTANT} passes at one instant for ${id}`);
      }
      await this.reconcileNow(nextKey.key);
    }
    if (this.clock.now() < until) this.clock.set(until);
    this.cnpg.advance();
  }

  /** Runs for `ms` of virtual time from now. */
  run(ms: number): Promise<void> {
    return this.runUntil(this.clock.now() + ms);
  }
}
