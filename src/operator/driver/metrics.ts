/**
 * Prometheus metrics. The controller and work-queue series keep controller-runtime's names and labels, so
 * existing dashboards and alerts for Go operators work unchanged; the pgfsm_* series expose the
 * statechart. Per-cluster series are computed at scrape time from the cluster cache (the stored status
 * is the source of truth), so they survive restarts and vanish with the cluster.
 *
 * PostgresDatabases have the same series under their own names (`pgfsm_database_*`, from the databases'
 * cache) and their passes count under `controller="postgresdatabase"`, as a second controller-runtime
 * controller would: one queue and one worker pool serve both kinds (its `workqueue_*` series keep the
 * cluster controller's name), but a database pass never counts as a cluster's, nor its transitions as a
 * cluster's (the two machines share state names such as `Ready` and `Provisioning.Cluster`).
 */
import {
  Counter,
  collectDefaultMetrics,
  exponentialBuckets,
  Gauge,
  Histogram,
  type LabelValues,
  Registry,
} from 'prom-client';
import type { Condition, PostgresCluster, PostgresDatabase } from '../api/schema.ts';
import type { ReconcileOutcome } from '../core/reconcile.ts';
import { type BuildInfo, buildInfo } from './build-info.ts';
import { isDatabaseKey } from './database-mapping.ts';
import type { ObjectSource } from './sources.ts';
import type { WorkQueueHooks } from './workqueue.ts';

export type ReconcileResult = 'success' | 'error' | 'requeue' | 'requeue_after';

/** controller-runtime's classification of a pass. */
export function resultOf(outcome: ReconcileOutcome | undefined): ReconcileResult {
  if (!outcome || outcome.error !== undefined) return 'error';
  switch (outcome.requeue.kind) {
    case 'none':
      return 'success';
    case 'after':
      return 'requeue_after';
    default:
      return 'requeue';
  }
}

// controller-runtime's reconcile_time_seconds buckets (5 ms … 60 s).
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2,
  2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: 10 ns … 10 s by powers of ten.
const QUEUE_BUCKETS = exponentialBuckets(1e-8, 10, 10);

export interface MetricsOptions {
  /** The `controller` label (and the work queue's `name`). */
  controller?: string;
  /** The `controller` label of PostgresDatabase passes. */
  databaseController?: string;
  /** Also export process_* and nodejs_* metrics. */
  defaultMetrics?: boolean;
  now?: () => number;
  /** What `pgfsm_build_info` reports; this process's own (build-info.ts) unless given. */
  build?: BuildInfo;
}

/** The resource of the PostgresDatabase informer, where `observeSources` finds it by default. */
export const DATABASES_RESOURCE = 'postgresdatabases';

/** What the per-object series read of a PostgresCluster or a PostgresDatabase: its stored status. */
interface Stateful {
  metadata: { namespace?: string; name: string };
  status?: { state?: string; stateSince?: string; conditions?: Condition[] };
}

const conditionTrue = (object: Stateful, type: string) =>
  object.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;

/** One object's per-object series: its state, since when, and whether it is stalled. */
function tracked(object: Stateful) {
  const namespace = object.metadata.namespace ?? '';
  const name = object.metadata.name;
  const since = object.status?.stateSince ? Date.parse(object.status.stateSince) : Number.NaN;
  return {
    namespace,
    name,
    state: object.status?.state,
    since: Number.isNaN(since) ? undefined : since,
    stalled: conditionTrue(object, 'Stalled'),
    labels: (state: string) => ({ namespace, name, state }),
  };
}

/** The names of one kind's per-object series. */
interface StateSeries {
  kind: string;
  state: string;
  timeInState: string;
  stalled: string;
}

const CLUSTER_SERIES: StateSeries = {
  kind: 'PostgresCluster',
  state: 'pgfsm_cluster_state',
  timeInState: 'pgfsm_time_in_state_seconds',
  stalled: 'pgfsm_stalled',
};
const DATABASE_SERIES: StateSeries = {
  kind: 'PostgresDatabase',
  state: 'pgfsm_database_state',
  timeInState: 'pgfsm_database_time_in_state_seconds',
  stalled: 'pgfsm_database_stalled',
};

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly controller: string;
  readonly databaseController: string;
  private readonly now: () => number;
  private clusterSource: ObjectSource<PostgresCluster> | undefined;
  private databaseSource: ObjectSource<PostgresDatabase> | undefined;
  private sources: ObjectSource[] = [];

  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly maxConcurrent: Gauge<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly transitions: Counter<'from' | 'to'>;
  private readonly databaseTransitions: Counter<'from' | 'to'>;
  private readonly echoes: Counter;
  private readonly leader: Gauge;
  private readonly queue: {
    depth: Gauge<'controller' | 'name'>;
    adds: Counter<'controller' | 'name'>;
    retries: Counter<'controller' | 'name'>;
    work: Histogram<'controller' | 'name'>;
    wait: Histogram<'controller' | 'name'>;
  };

  constructor(options: MetricsOptions = {}) {
    this.controller = options.controller ?? 'postgrescluster';
    this.databaseController = options.databaseController ?? 'postgresdatabase';
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    const self = this;
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });

    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.maxConcurrent = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    const queueLabels = ['controller', 'name'] as const;
    this.queue = {
      depth: new Gauge({
        name: 'workqueue_depth',
        help: 'Current depth of workqueue',
        labelNames: queueLabels,
        registers,
      }),
      adds: new Counter({
        name: 'workqueue_adds_total',
        help: 'Total number of adds handled by workqueue',
        labelNames: queueLabels,
        registers,
      }),
      retries: new Counter({
        name: 'workqueue_retries_total',
        help: 'Total number of retries handled by workqueue',
        labelNames: queueLabels,
        registers,
      }),
      work: new Histogram({
        name: 'workqueue_work_duration_seconds',
        help: 'How long in seconds processing an item from workqueue takes',
        labelNames: queueLabels,
        buckets: QUEUE_BUCKETS,
        registers,
      }),
      wait: new Histogram({
        name: 'workqueue_queue_duration_seconds',
        help: 'How long in seconds an item stays in workqueue before being requested',
        labelNames: queueLabels,
        buckets: QUEUE_BUCKETS,
        registers,
      }),
    };
    this.transitions = new Counter({
      name: 'pgfsm_transitions_total',
      help: 'Statechart transitions taken by reconcile passes',
      labelNames: ['from', 'to'],
      registers,
    });
    this.databaseTransitions = new Counter({
      name: 'pgfsm_database_transitions_total',
      help: 'PostgresDatabase statechart transitions taken by reconcile passes',
      labelNames: ['from', 'to'],
      registers,
    });
    this.echoes = new Counter({
      name: 'pgfsm_watch_echoes_total',
      help: "Watch events that woke no reconcile: each showed a version the cluster's own pass had already followed",
      registers,
    });
    this.leader = new Gauge({
      name: 'pgfsm_leader',
      help: '1 while this replica holds the leader lease and runs reconciles',
      registers,
    });
    // As Go programs' `*_build_info`: always 1, the build in its labels, to join on or to alert on a mixed rollout.
    const build = options.build ?? buildInfo();
    new Gauge({
      name: 'pgfsm_build_info',
      help: "1, labelled with pgfsm's version, the Node.js version and the XState version this process runs",
      labelNames: ['version', 'node_version', 'xstate'],
      registers,
    }).set({ version: build.version, node_version: build.nodeVersion, xstate: build.xstate }, 1);

    this.stateSeries(CLUSTER_SERIES, () => self.clusterSource);
    this.stateSeries(DATABASE_SERIES, () => self.databaseSource);
    // A timestamp rather than an age: `time() - pgfsm_backup_last_success_timestamp_seconds > 26 * 3600` alerts on
    // a missed nightly backup, and the series does not move between backups.
    new Gauge({
      name: 'pgfsm_backup_last_success_timestamp_seconds',
      help: 'When the last base backup of a backed-up PostgresCluster completed (status.backup.lastSuccessfulBackupTime)',
      labelNames: ['namespace', 'name'],
      registers,
      collect() {
        this.reset();
        for (const cluster of self.clusterSource?.list() ?? []) {
          const at = Date.parse(cluster.status?.backup?.lastSuccessfulBackupTime ?? '');
          if (!Number.isFinite(at)) continue;
          this.set({ namespace: cluster.metadata.namespace, name: cluster.metadata.name }, at / 1000);
        }
      },
    });
    new Gauge({
      name: 'pgfsm_informer_synced',
      help: '1 once the cache of a watched resource holds its first complete list',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const s of self.sources) this.set({ resource: s.resource }, s.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'pgfsm_informer_last_seen_age_seconds',
      help: 'Seconds since the watch of a resource last showed a sign of life',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const s of self.sources) {
          if (s.lastSeen > 0) this.set({ resource: s.resource }, Math.max(0, (self.now() - s.lastSeen) / 1000));
        }
      },
    });

    // Present from the start, as controller-runtime does, so rate() sees the first increment.
    for (const controller of [this.controller, this.databaseController]) {
      for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) {
        this.reconcileTotal.inc({ controller, result }, 0);
      }
      this.reconcileErrors.inc({ controller }, 0);
      this.activeWorkers.set({ controller }, 0);
    }
    this.leader.set(0);
    const q = this.queueLabels();
    this.queue.depth.set(q, 0);
    this.queue.adds.inc(q, 0);
    this.queue.retries.inc(q, 0);
  }

  private queueLabels(): LabelValues<'controller' | 'name'> {
    return { controller: this.controller, name: this.controller };
  }

  /**
   * Where the per-object series and the informer series are read from at scrape time. The databases' cache
   * is the informer of `postgresdatabases` among `all` unless given.
   */
  observeSources(
    clusters: ObjectSource<PostgresCluster>,
    all: ObjectSource[],
    databases?: ObjectSource<PostgresDatabase>,
  ): void {
    this.clusterSource = clusters;
    this.databaseSource =
      databases ?? (all.find((s) => s.resource === DATABASES_RESOURCE) as ObjectSource<PostgresDatabase> | undefined);
    this.sources = all;
  }

  /** A kind's state, time-in-state and stalled gauges, computed from its cache at scrape time. */
  private stateSeries(names: StateSeries, source: () => { list(): Stateful[] } | undefined): void {
    const registers = [this.registry];
    const self = this;
    const objects = () => (source()?.list() ?? []).map(tracked);
    new Gauge({
      name: names.state,
      help: `Current statechart state of each ${names.kind} (1 for the state it is in)`,
      labelNames: ['namespace', 'name', 'state'],
      registers,
      collect() {
        this.reset();
        for (const o of objects()) if (o.state) this.set(o.labels(o.state), 1);
      },
    });
    new Gauge({
      name: names.timeInState,
      help: `Seconds each ${names.kind} has been in its current statechart state`,
      labelNames: ['namespace', 'name', 'state'],
      registers,
      collect() {
        this.reset();
        for (const o of objects()) {
          if (o.state && o.since !== undefined) this.set(o.labels(o.state), Math.max(0, (self.now() - o.since) / 1000));
        }
      },
    });
    new Gauge({
      name: names.stalled,
      help: `1 when the Stalled condition of a ${names.kind} is True`,
      labelNames: ['namespace', 'name'],
      registers,
      collect() {
        this.reset();
        for (const o of objects()) this.set({ namespace: o.namespace, name: o.name }, o.stalled ? 1 : 0);
      },
    });
  }

  queueHooks(): WorkQueueHooks {
    const labels = this.queueLabels();
    return {
      depth: (n) => this.queue.depth.set(labels, n),
      added: () => this.queue.adds.inc(labels),
      retried: () => this.queue.retries.inc(labels),
      queued: (s) => this.queue.wait.observe(labels, s),
      worked: (s) => this.queue.work.observe(labels, s),
    };
  }

  /** A watch event recognised as the echo of a followed write (echoes.ts): it woke no pass. */
  echoDropped(): void {
    this.echoes.inc();
  }

  /** The worker pool is shared: either kind may use all of it. */
  setMaxConcurrentReconciles(workers: number): void {
    for (const controller of [this.controller, this.databaseController])
      this.maxConcurrent.set({ controller }, workers);
  }

  setLeader(leading: boolean): void {
    this.leader.set(leading ? 1 : 0);
  }

  /**
   * Call when a pass starts, with its queue key; call the returned function with its outcome (undefined if it
   * threw). A `PostgresDatabase:` key (database-mapping.ts) counts under the database controller and its
   * transitions; any other key, or none, is a cluster's pass.
   */
  reconcileStarted(key?: string): (outcome: ReconcileOutcome | undefined) => void {
    const database = key !== undefined && isDatabaseKey(key);
    const controller = database ? this.databaseController : this.controller;
    const transitions = database ? this.databaseTransitions : this.transitions;
    const started = this.now();
    this.activeWorkers.inc({ controller });
    return (outcome) => {
      this.activeWorkers.dec({ controller });
      this.reconcileTime.observe({ controller }, (this.now() - started) / 1000);
      const result = resultOf(outcome);
      this.reconcileTotal.inc({ controller, result });
      if (result === 'error') this.reconcileErrors.inc({ controller });
      if (outcome?.to !== undefined && outcome.from !== outcome.to) {
        transitions.inc({ from: outcome.from ?? '', to: outcome.to });
      }
    };
  }
}
