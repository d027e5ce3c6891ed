/**
 * Prometheus metrics. The controller and work-queue series keep controller-runtime's names and labels, so
 * existing dashboards and alerts for Go operators work unchanged; the pgfsm_* series expose the
 * statechart. Per-cluster series are computed at scrape time from the cluster cache (the stored status
 * is the source of truth), so they survive restarts and vanish with the cluster.
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
import type { PostgresCluster } from '../api/schema.ts';
import type { ReconcileOutcome } from '../core/reconcile.ts';
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
  /** Also export process_* and nodejs_* metrics. */
  defaultMetrics?: boolean;
  now?: () => number;
}

const conditionTrue = (cluster: PostgresCluster, type: string) =>
  cluster.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;

export class OperatorMetrics {
  readonly registry = new Registry();
  readonly controller: string;
  private readonly now: () => number;
  private clusterSource: ObjectSource<PostgresCluster> | undefined;
  private sources: ObjectSource[] = [];

  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;
  private readonly maxConcurrent: Gauge<'controller'>;
  private readonly activeWorkers: Gauge<'controller'>;
  private readonly transitions: Counter<'from' | 'to'>;
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

    new Gauge({
      name: 'pgfsm_cluster_state',
      help: 'Current statechart state of each PostgresCluster (1 for the state it is in)',
      labelNames: ['namespace', 'name', 'state'],
      registers,
      collect() {
        this.reset();
        for (const c of self.clusters()) if (c.state) this.set(c.labels(c.state), 1);
      },
    });
    new Gauge({
      name: 'pgfsm_time_in_state_seconds',
      help: 'Seconds each PostgresCluster has been in its current statechart state',
      labelNames: ['namespace', 'name', 'state'],
      registers,
      collect() {
        this.reset();
        for (const c of self.clusters()) {
          if (c.state && c.since !== undefined) this.set(c.labels(c.state), Math.max(0, (self.now() - c.since) / 1000));
        }
      },
    });
    new Gauge({
      name: 'pgfsm_stalled',
      help: '1 when the Stalled condition of a PostgresCluster is True',
      labelNames: ['namespace', 'name'],
      registers,
      collect() {
        this.reset();
        for (const c of self.clusters()) this.set({ namespace: c.namespace, name: c.name }, c.stalled ? 1 : 0);
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
    const controller = this.controller;
    for (const result of ['success', 'error', 'requeue', 'requeue_after'] as const) {
      this.reconcileTotal.inc({ controller, result }, 0);
    }
    this.reconcileErrors.inc({ controller }, 0);
    this.activeWorkers.set({ controller }, 0);
    this.leader.set(0);
    const q = this.queueLabels();
    this.queue.depth.set(q, 0);
    this.queue.adds.inc(q, 0);
    this.queue.retries.inc(q, 0);
  }

  private queueLabels(): LabelValues<'controller' | 'name'> {
    return { controller: this.controller, name: this.controller };
  }

  /** Where the per-cluster series and the informer series are read from at scrape time. */
  observeSources(clusters: ObjectSource<PostgresCluster>, all: ObjectSource[]): void {
    this.clusterSource = clusters;
    this.sources = all;
  }

  private clusters() {
    return (this.clusterSource?.list() ?? []).map((cluster) => {
      const namespace = cluster.metadata.namespace;
      const name = cluster.metadata.name;
      const since = cluster.status?.stateSince ? Date.parse(cluster.status.stateSince) : Number.NaN;
      return {
        namespace,
        name,
        state: cluster.status?.state,
        since: Number.isNaN(since) ? undefined : since,
        stalled: conditionTrue(cluster, 'Stalled'),
        labels: (state: string) => ({ namespace, name, state }),
      };
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

  setMaxConcurrentReconciles(workers: number): void {
    this.maxConcurrent.set({ controller: this.controller }, workers);
  }

  setLeader(leading: boolean): void {
    this.leader.set(leading ? 1 : 0);
  }

  /** Call when a pass starts; call the returned function with its outcome (undefined if it threw). */
  reconcileStarted(): (outcome: ReconcileOutcome | undefined) => void {
    const controller = this.controller;
    const started = this.now();
    this.activeWorkers.inc({ controller });
    return (outcome) => {
      this.activeWorkers.dec({ controller });
      this.reconcileTime.observe({ controller }, (this.now() - started) / 1000);
      const result = resultOf(outcome);
      this.reconcileTotal.inc({ controller, result });
      if (result === 'error') this.reconcileErrors.inc({ controller });
      if (outcome?.to !== undefined && outcome.from !== outcome.to) {
        this.transitions.inc({ from: outcome.from ?? '', to: outcome.to });
      }
    };
  }
}
