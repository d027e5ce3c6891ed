/** The metrics the operator exposes: controller-runtime names and labels, and the statechart series. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import type { ReconcileOutcome } from '../../../src/operator/core/reconcile.ts';
import { OperatorMetrics, resultOf } from '../../../src/operator/driver/metrics.ts';
import type { ObjectSource } from '../../../src/operator/driver/sources.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');

function source<T extends PostgresCluster>(resource: string, objects: T[] = []): ObjectSource<T> {
  return {
    resource,
    synced: true,
    lastSeen: NOW - 4_000,
    fresh: () => true,
    get: () => undefined,
    list: () => objects,
    on: () => () => {},
    start: () => {},
    stop: async () => {},
  };
}

const cluster = (name: string, state: string, since: string, stalled = false): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name },
  spec: { class: 'standard' },
  status: {
    state,
    stateSince: since,
    conditions: [
      { type: 'Stalled', status: stalled ? 'True' : 'False', reason: 'R', message: '', lastTransitionTime: since },
    ],
  },
});

const outcome = (o: Partial<ReconcileOutcome>): ReconcileOutcome => ({
  key: { namespace: 'team-a', name: 'inventory' },
  found: true,
  requeue: { kind: 'none' },
  statusWritten: false,
  writes: 0,
  events: [],
  ...o,
});

describe('resultOf', () => {
  it("classifies passes as controller-runtime's result label does", () => {
    expect(resultOf(outcome({}))).toBe('success');
    expect(resultOf(outcome({ requeue: { kind: 'after', ms: 15_000 } }))).toBe('requeue_after');
    expect(resultOf(outcome({ requeue: { kind: 'immediate' } }))).toBe('requeue');
    expect(resultOf(outcome({ requeue: { kind: 'backoff', error: 'x' } }))).toBe('requeue');
    expect(resultOf(outcome({ requeue: { kind: 'backoff', error: 'x' }, error: new Error('x') }))).toBe('error');
    expect(resultOf(undefined)).toBe('error');
  });
});

describe('OperatorMetrics', () => {
  it('exposes controller-runtime and workqueue series with controller="postgrescluster"', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false, now: () => NOW });
    m.setMaxConcurrentReconciles(2);
    const hooks = m.queueHooks();
    hooks.added?.();
    hooks.depth?.(3);
    hooks.retried?.();
    hooks.queued?.(0.01);
    hooks.worked?.(0.2);
    m.reconcileStarted()(outcome({ requeue: { kind: 'after', ms: 1000 } }));
    m.reconcileStarted()(outcome({ error: new Error('boom'), requeue: { kind: 'backoff', error: 'boom' } }));
    m.reconcileStarted()(undefined);
    const text = await m.registry.metrics();
    const c = 'controller="postgrescluster"';
    const q = `${c},name="postgrescluster"`;
    for (const line of [
      `controller_runtime_reconcile_total{${c},result="success"} 0`,
      `controller_runtime_reconcile_total{${c},result="requeue_after"} 1`,
      `controller_runtime_reconcile_total{${c},result="error"} 2`,
      `controller_runtime_reconcile_total{${c},result="requeue"} 0`,
      `controller_runtime_reconcile_errors_total{${c}} 2`,
      `controller_runtime_reconcile_time_seconds_count{${c}} 3`,
      `controller_runtime_max_concurrent_reconciles{${c}} 2`,
      `controller_runtime_active_workers{${c}} 0`,
      `workqueue_depth{${q}} 3`,
      `workqueue_adds_total{${q}} 1`,
      `workqueue_retries_total{${q}} 1`,
      `workqueue_work_duration_seconds_count{${q}} 1`,
      `workqueue_queue_duration_seconds_count{${q}} 1`,
      'pgfsm_leader 0',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).toMatch(/# TYPE controller_runtime_reconcile_time_seconds histogram/);
    expect(text).toMatch(/controller_runtime_reconcile_time_seconds_bucket\{le="60",controller="postgrescluster"\}/);
  });

  it('counts active workers while a pass runs', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    const done = m.reconcileStarted();
    expect(await m.registry.metrics()).toContain('controller_runtime_active_workers{controller="postgrescluster"} 1');
    done(outcome({}));
    expect(await m.registry.metrics()).toContain('controller_runtime_active_workers{controller="postgrescluster"} 0');
  });

  it('counts transitions by from and to, and not passes that stay', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    m.reconcileStarted()(outcome({ to: 'Pending' }));
    m.reconcileStarted()(outcome({ from: 'Pending', to: 'Provisioning.Cluster' }));
    m.reconcileStarted()(outcome({ from: 'Provisioning.Cluster', to: 'Provisioning.Cluster' }));
    const text = await m.registry.metrics();
    expect(text).toContain('pgfsm_transitions_total{from="",to="Pending"} 1');
    expect(text).toContain('pgfsm_transitions_total{from="Pending",to="Provisioning.Cluster"} 1');
    expect(text).not.toContain('to="Provisioning.Cluster",from="Provisioning.Cluster"');
    expect(text).not.toContain('pgfsm_transitions_total{from="Provisioning.Cluster"');
  });

  it('derives state, time in state and stalled from the cluster cache at scrape time', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false, now: () => NOW });
    const clusters = [
      cluster('inventory', 'Ready', '2026-11-30T11:59:00Z'),
      cluster('orders', 'Provisioning.Cluster', '2026-11-30T11:30:00Z', true),
    ];
    const src = source('postgresclusters', clusters);
    m.observeSources(src, [src]);
    m.setLeader(true);
    let text = await m.registry.metrics();
    expect(text).toContain('pgfsm_cluster_state{namespace="team-a",name="inventory",state="Ready"} 1');
    expect(text).toContain('pgfsm_cluster_state{namespace="team-a",name="orders",state="Provisioning.Cluster"} 1');
    expect(text).toContain('pgfsm_time_in_state_seconds{namespace="team-a",name="inventory",state="Ready"} 60');
    expect(text).toContain(
      'pgfsm_time_in_state_seconds{namespace="team-a",name="orders",state="Provisioning.Cluster"} 1800',
    );
    expect(text).toContain('pgfsm_stalled{namespace="team-a",name="inventory"} 0');
    expect(text).toContain('pgfsm_stalled{namespace="team-a",name="orders"} 1');
    expect(text).toContain('pgfsm_leader 1');
    expect(text).toContain('pgfsm_informer_synced{resource="postgresclusters"} 1');
    expect(text).toContain('pgfsm_informer_last_seen_age_seconds{resource="postgresclusters"} 4');

    // A cluster that moved on or went away leaves no stale series behind.
    clusters.splice(1, 1);
    clusters[0] = cluster('inventory', 'Deleting', '2026-11-30T12:00:00Z');
    text = await m.registry.metrics();
    expect(text).not.toContain('state="Ready"');
    expect(text).not.toContain('name="orders"');
    expect(text).toContain('pgfsm_cluster_state{namespace="team-a",name="inventory",state="Deleting"} 1');
  });

  it('includes process metrics unless told not to', async () => {
    expect(await new OperatorMetrics().registry.metrics()).toContain('process_cpu_seconds_total');
    expect(await new OperatorMetrics({ defaultMetrics: false }).registry.metrics()).not.toContain('process_cpu');
  });
});
