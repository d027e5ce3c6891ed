/**
 * The PostgresCluster controller: watch events → cluster keys (mapping.ts) → work queue → one reconcile
 * pass per key (src/operator/core/reconcile.ts) → the pass's requeue decision back into the queue. The
 * simulation (src/tools/simulation/simulation.ts) runs this very class on a virtual clock.
 *
 * Watch events enqueue at once, whether or not this replica leads: the queue de-duplicates, and only a
 * leader runs workers. The echoes of a cluster's own writes enqueue nothing (echoes.ts), and a status someone
 * else wrote enqueues its cluster at most once a second (`repairStatus`). On becoming leader every cached
 * cluster is enqueued, because nothing survives a restart or a hand-over except what is stored in the API.
 */
import { classOf } from '../core/errors.ts';
import type { ObjectVersion } from '../core/follow.ts';
import { type ClusterKey, keyString } from '../core/ports.ts';
import type { ReconcileOutcome, UnsentEvent } from '../core/reconcile.ts';
import type { KubeEvent } from '../domain/effects.ts';
import { CLASS_KEY_PREFIX, classesFor, classKeyString, isClassKey } from './class-protection.ts';
import {
  DATABASE_KEY_PREFIX,
  DatabaseSecretIndex,
  databaseKeyString,
  databasesFor,
  isDatabaseKey,
} from './database-mapping.ts';
import { Echoes } from './echoes.ts';
import { clusterFields, describeError, type Logger, transitionOf } from './logger.ts';
import { clustersFor, isStatusUpdate, type MappingLookups, RoleSecretIndex } from './mapping.ts';
import type { OperatorMetrics } from './metrics.ts';
import { allSources, type SourceEvent, type WatchSources } from './sources.ts';
import { WorkerPool } from './workers.ts';
import { type RetryClass, type RetryPolicy, realTimers, type Timers, WorkQueue } from './workqueue.ts';

export interface ControllerOptions {
  sources: WatchSources;
  /** One pass for one cluster: `reconcile(key, { ports, settings })`. */
  reconcile: (key: ClusterKey) => Promise<ReconcileOutcome>;
  workers: number;
  logger: Logger;
  metrics?: OperatorMetrics;
  timers?: Timers;
  /** Overrides of the queue's retry policies by class (defaults: RETRY_POLICIES in workqueue.ts). */
  retryPolicies?: Partial<Record<RetryClass, Partial<RetryPolicy>>>;
  /**
   * How often a leader re-enqueues every cluster as a safety net for missed watch events; 0 disables.
   * States such as Ready wait for events only, so without it a lost event would go unnoticed.
   */
  resyncPeriodMs?: number;
  /**
   * The randomness of the jitter (transient and throttled retries, resync), in [0, 1); default Math.random. The
   * simulation passes a seeded one so that the same inputs give the same run.
   */
  random?: () => number;
  /**
   * Keys with something still to send that the clusters' cache may not list any more (core/announcements.ts,
   * the Events of a cluster whose deletion ended while this replica could not send them): enqueued with every
   * cluster, so that a new term of the same replica sends them.
   */
  pendingKeys?: () => Iterable<string>;
  /**
   * One pass for one PostgresDatabase (core/database/reconcile.ts), on keys of their own in the same queue and
   * workers (database-mapping.ts). Without it, PostgresDatabases are not reconciled (the clusters still push
   * their roles).
   */
  reconcileDatabase?: (key: ClusterKey) => Promise<ReconcileOutcome>;
  /**
   * One pass for one PostgresClusterClass's protection (class-protection.ts), on keys of their own in the same
   * queue and workers. Without it, classes get no finalizer.
   */
  reconcileClass?: (name: string) => Promise<ReconcileOutcome>;
}

/**
 * How soon someone else's status may wake a cluster again after it last did (see `repairStatus`): the conflict
 * backoff's cap (workqueue.ts), the same bound on what a writer fighting the operator costs.
 */
export const STATUS_REPAIR_INTERVAL_MS = 1_000;

/** The cluster at the version the pass's own status write left it: the one status event that wakes nothing. */
const statusWrittenBy = ({ key, statusVersion }: ReconcileOutcome): ObjectVersion[] =>
  statusVersion === undefined ? [] : [{ kind: 'PostgresCluster', ...key, resourceVersion: statusVersion }];

export function parseKey(key: string): ClusterKey {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly pool: WorkerPool;
  private readonly timers: Timers;
  private readonly log: Logger;
  private readonly lookups: MappingLookups;
  /** Kept from the clusters' watch events before they are mapped (mapping.ts). */
  private readonly roleSecrets = new RoleSecretIndex();
  /** The same for the databases' connection Secrets, by name (database-mapping.ts). */
  private readonly databaseSecrets = new DatabaseSecretIndex();
  /** The events of a cluster's own followed writes, which wake it for nothing (echoes.ts). */
  private readonly echoes: Echoes;
  /** The same for its own status writes, kept apart: a status event that is no echo is someone else's. */
  private readonly statusEchoes = new Echoes();
  /** By key, when someone else's status last woke it (or will), for as long as that holds back the next. */
  private readonly statusRepairs = new Map<string, number>();
  private readonly random: () => number;
  private unsubscribers: Array<() => void> = [];
  private resyncHandle: unknown;

  constructor(private readonly options: ControllerOptions) {
    this.timers = options.timers ?? realTimers;
    this.log = options.logger;
    this.random = options.random ?? Math.random;
    this.queue = new WorkQueue({
      timers: this.timers,
      random: this.random,
      ...(options.metrics ? { hooks: options.metrics.queueHooks() } : {}),
      ...(options.retryPolicies ? { retryPolicies: options.retryPolicies } : {}),
    });
    this.echoes = new Echoes({ onEcho: () => options.metrics?.echoDropped() });
    this.pool = new WorkerPool(this.queue, options.workers, (key) => this.process(key));
    options.metrics?.setMaxConcurrentReconciles(options.workers);
    const { clusters, poolers } = options.sources;
    this.lookups = {
      clusters: (namespace) => clusters.list(namespace),
      pooler: (namespace, name) => poolers.get(namespace, name),
      clustersUsingSecret: (namespace, name) => this.roleSecrets.clustersUsing(namespace, name),
      database: (namespace, name) => options.sources.databases.get(namespace, name),
      databasesUsingSecret: (namespace, name) => this.databaseSecrets.using(namespace, name),
    };
  }

  get leading(): boolean {
    return this.pool.running;
  }

  /** Subscribes to every source; from now on a change enqueues the clusters it concerns at once. */
  watch(): void {
    if (this.unsubscribers.length > 0) return;
    this.unsubscribers = allSources(this.options.sources).map((source) =>
      source.on((event) => {
        const statusOnly = isStatusUpdate(event);
        const { namespace = '', name } = event.object.metadata ?? {};
        for (const key of this.keysFor(event)) {
          const queued = keyString(key);
          // A status change of a PostgresCluster is a repair of its own status; for a cluster restoring from it
          // (mapping.ts), a change of the world its pass reads.
          if (!statusOnly || key.namespace !== namespace || key.name !== name) {
            if (this.echoes.wakes(queued, event)) this.queue.add(queued);
          } else if (this.statusEchoes.wakes(queued, event)) this.repairStatus(queued);
        }
        for (const key of this.databaseKeysFor(event)) this.queue.add(databaseKeyString(key));
        if (this.options.reconcileClass) for (const name of classesFor(event)) this.queue.add(classKeyString(name));
      }),
    );
  }

  /**
   * The clusters one event concerns. The mapping guards every read of a cached object, but should it throw
   * anyway, that is this event's loss alone (the resync still covers it): it must not escape into the
   * informer's dispatch and cost the events after it.
   */
  private keysFor(event: SourceEvent): ClusterKey[] {
    try {
      this.roleSecrets.update(event);
      this.databaseSecrets.update(event);
      return clustersFor(event, this.lookups);
    } catch (error) {
      const { kind, metadata } = event.object;
      this.log.error(
        { reason: 'MappingThrew', kind, namespace: metadata?.namespace, name: metadata?.name, err: error },
        'mapping a watch event threw; it wakes no cluster until the resync',
      );
      return [];
    }
  }

  /** The PostgresDatabases one event concerns, when this controller reconciles them; never throws. */
  private databaseKeysFor(event: SourceEvent): ClusterKey[] {
    if (!this.options.reconcileDatabase) return [];
    try {
      const using = this.lookups.databasesUsingSecret;
      return databasesFor(event, (namespace) => this.options.sources.databases.list(namespace), using);
    } catch (error) {
      this.log.error(
        { reason: 'MappingThrew', kind: event.object.kind, err: error },
        'mapping a watch event to databases threw',
      );
      return [];
    }
  }

  /**
   * Someone else's status wakes the cluster at once: its pass writes back what the world says, and writes
   * nothing when the status already says it (core/reconcile.ts), so a writer that agrees with the operator
   * (another replica around a hand-over) costs one pass. One that keeps putting its own status back each time
   * the operator repairs it would make a loop as fast as the two can write: a second wake within
   * STATUS_REPAIR_INTERVAL_MS of the last waits out the rest of it, one pass and one write a second at most.
   */
  private repairStatus(key: string): void {
    const now = this.timers.now();
    // Kept only while they hold a wake back: those that no longer do go, oldest set first, up to one that does.
    for (const [earlier, at] of this.statusRepairs) {
      if (now - at < STATUS_REPAIR_INTERVAL_MS) break;
      this.statusRepairs.delete(earlier);
    }
    const last = this.statusRepairs.get(key);
    // A wake already due later covers this one too (asked again: a watch event may have taken it early).
    const due = last === undefined ? now : last > now ? last : Math.max(now, last + STATUS_REPAIR_INTERVAL_MS);
    this.statusRepairs.delete(key);
    this.statusRepairs.set(key, due);
    this.queue.addAfter(key, due - now);
  }

  /** Enqueues every cached cluster; returns how many. */
  enqueueAll(): number {
    const clusters = this.options.sources.clusters.list();
    for (const c of clusters) this.queue.add(keyString({ namespace: c.metadata.namespace, name: c.metadata.name }));
    if (this.options.reconcileDatabase) {
      for (const d of this.options.sources.databases.list()) {
        this.queue.add(databaseKeyString({ namespace: d.metadata.namespace, name: d.metadata.name }));
      }
    }
    if (this.options.reconcileClass) {
      for (const c of this.options.sources.classes.list()) this.queue.add(classKeyString(c.metadata.name));
    }
    // A cluster that is gone may still have Events to send (the end of its deletion): only its key's pass does.
    for (const key of this.options.pendingKeys?.() ?? []) this.queue.add(key);
    return clusters.length;
  }

  /** This replica leads: enqueue everything and run the workers. */
  startWorkers(): void {
    if (this.pool.running || this.queue.isShuttingDown) return;
    const count = this.enqueueAll();
    this.log.info({ clusters: count, workers: this.pool.count }, 'starting workers');
    this.pool.start();
    this.scheduleResync();
  }

  /** Leadership lost: stop taking keys and let the passes in flight finish. */
  async stopWorkers(): Promise<void> {
    this.cancelResync();
    if (!this.pool.running) return;
    await this.pool.stop();
    this.log.info('workers stopped');
  }

  /** Stops for good: no new work, in-flight passes finish, then resolves. */
  async shutDown(): Promise<void> {
    for (const off of this.unsubscribers.splice(0)) off();
    this.cancelResync();
    await this.queue.shutDown();
    await this.pool.stop();
  }

  private scheduleResync(): void {
    const period = this.options.resyncPeriodMs ?? 10 * 60_000;
    if (period <= 0) return;
    // Jitter, so that replicas restarted together do not resync in lockstep.
    const delay = period * (0.9 + 0.2 * this.random());
    this.resyncHandle = this.timers.setTimeout(() => {
      this.enqueueAll();
      this.scheduleResync();
    }, delay);
  }

  private cancelResync(): void {
    if (this.resyncHandle !== undefined) this.timers.clearTimeout(this.resyncHandle);
    this.resyncHandle = undefined;
  }

  private async process(key: string): Promise<void> {
    const finished = this.options.metrics?.reconcileStarted(key);
    this.echoes.started(key);
    this.statusEchoes.started(key);
    let outcome: ReconcileOutcome;
    try {
      outcome = await this.passOf(key);
    } catch (error) {
      // reconcile() reports errors in its outcome; a throw is a bug, retried with backoff like a panic.
      this.passEnded(key);
      finished?.(undefined);
      this.log.error({ ...clusterFields(parseKey(key)), reason: 'ReconcileThrew', err: error }, 'reconcile threw');
      this.queue.addRetry(key, 'persistent');
      return;
    }
    // Before the key is done: an event the pass did not see queues it again once it is (workqueue.ts).
    this.passEnded(key, outcome);
    finished?.(outcome);
    this.report(outcome);
    this.schedule(key, outcome);
  }

  /** The pass a queued key stands for: a PostgresDatabase's or a PostgresCluster's. */
  private passOf(key: string): Promise<ReconcileOutcome> {
    const { reconcileDatabase, reconcileClass } = this.options;
    if (reconcileClass && isClassKey(key)) return reconcileClass(key.slice(CLASS_KEY_PREFIX.length));
    if (reconcileDatabase && isDatabaseKey(key))
      return reconcileDatabase(parseKey(key.slice(DATABASE_KEY_PREFIX.length)));
    return this.options.reconcile(parseKey(key));
  }

  /** Wakes `key` again for what the events held during its pass showed that the pass did not write itself. */
  private passEnded(key: string, outcome?: ReconcileOutcome): void {
    const woken = this.echoes.ended(key, outcome?.followed);
    const repair = this.statusEchoes.ended(key, outcome ? statusWrittenBy(outcome) : []);
    if (woken) this.queue.add(key);
    else if (repair) this.repairStatus(key);
  }

  /**
   * The outcome's requeue decision, applied to the queue. Each retry class backs off on its own counter
   * (workqueue.ts RETRY_POLICIES); a clean pass resets them all.
   */
  private schedule(key: string, outcome: ReconcileOutcome): void {
    const { requeue } = outcome;
    // Gone: nothing to retry but the Events the end of its deletion could not send yet, after a transient
    // backoff that keeps its count (core/reconcile.ts bounds the tries). A backoff requeue keeps its count
    // too, or a backoff state would loop at 5 ms.
    if (!outcome.found) {
      if (requeue.kind === 'transient') this.queue.addRetry(key, 'transient');
      else this.queue.forget(key);
      return;
    }
    if (outcome.error === undefined && requeue.kind !== 'backoff') this.queue.forget(key);
    switch (requeue.kind) {
      case 'none':
        this.queue.forget(key);
        return;
      case 'immediate':
        // Like controller-runtime's Requeue: at once (the first retry waits 5 ms), but a conflict that
        // keeps coming back backs off (up to 1 s) instead of hammering the API server.
        this.queue.addRetry(key, 'conflict');
        return;
      case 'after':
        this.queue.addAfter(key, requeue.ms);
        return;
      case 'transient':
        this.queue.addRetry(key, 'transient');
        return;
      case 'throttled':
        this.queue.addRetry(key, 'throttled', requeue.retryAfterMs);
        return;
      case 'backoff':
        this.queue.addRetry(key, 'persistent');
        return;
    }
  }

  /** What the event delivery (event-delivery.ts) sent, and could not send, of one object's Events. */
  reportDelivery(key: ClusterKey, sent: KubeEvent[], unsent: UnsentEvent[]): void {
    this.logEvents(clusterFields(key), sent, unsent);
  }

  /** Only what was sent is logged as an event: the log must not claim an event the cluster does not show. */
  private logEvents(fields: object, sent: KubeEvent[], unsent: UnsentEvent[]): void {
    for (const event of sent) {
      const line = { ...fields, reason: event.reason, action: event.action, detail: event.message };
      if (event.type === 'Warning') this.log.warn(line, 'event');
      else this.log.info(line, 'event');
    }
    for (const { event, error } of unsent) {
      // Named by its reason and action only: the line says which event is missing, not what it said.
      const line = { ...fields, reason: 'EventNotSent', eventReason: event.reason, action: event.action };
      this.log.warn({ ...line, error: describeError(error) }, 'event not sent');
    }
  }

  private report(outcome: ReconcileOutcome): void {
    const fields = { ...clusterFields(outcome.key), ...(outcome.to ? { state: outcome.to } : {}) };
    if (!outcome.found) {
      this.log.debug(fields, 'cluster not found; forgetting it');
      return;
    }
    if (outcome.to !== undefined && outcome.from !== outcome.to) {
      this.log.info({ ...fields, transition: transitionOf(outcome.from, outcome.to) }, 'transition');
    }
    // Events handed over to be sent later are logged when they are (reportDelivery).
    if (!outcome.handedOver) this.logEvents(fields, outcome.events, outcome.unsent ?? []);
    if (outcome.error !== undefined) {
      const line = { ...fields, reason: classOf(outcome.error), error: describeError(outcome.error) };
      this.log.warn({ ...line, requeue: outcome.requeue.kind }, 'reconcile failed');
    } else {
      this.log.debug(
        { ...fields, requeue: outcome.requeue, writes: outcome.writes, statusWritten: outcome.statusWritten },
        'reconciled',
      );
    }
  }
}
