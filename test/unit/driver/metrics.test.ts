/** The metrics the operator exposes: controller-runtime names and labels, and the statechart series. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresDatabase } from '../../../src/operator/api/schema.ts';
import type { ReconcileOutcome } from '../../../src/operator/core/reconcile.ts';
import { buildInfo } from '../../../src/operator/driver/build-info.ts';
import { databaseKeyString } from '../../../src/operator/driver/database-mapping.ts';
import { OperatorMetrics, resultOf } from '../../../src/operator/driver/metrics.ts';
import type { ObjectSource } from '../../../src/operator/driver/sources.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');

function source<T extends PostgresCluster | PostgresDatabase>(resource: string, objects: T[] = []): ObjectSource<T> {
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

const database = (name: string, state: string, since: string, stalled = false): PostgresDatabase => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresDatabase',
  metadata: { namespace: 'team-a', name },
  spec: { cluster: 'orders', name: 'app', owner: 'app' },
  status: {
    state,
    stateSince: since,
    conditions: [
      { type: 'Stalled', status: stalled ? 'True' : 'False', reason: 'R', message: '', lastTransitionTime: since },
    ],
  },
});

/** The queue keys the controller hands `reconcileStarted`: `namespace/name`, and `PostgresDatabase:namespace/name`. */
const CLUSTER_KEY = 'team-a/inventory';
const DATABASE_KEY = databaseKeyString({ namespace: 'team-a', name: 'orders-app' });

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

  it('counts database passes under controller="postgresdatabase", and cluster passes as before', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false, now: () => NOW });
    m.setMaxConcurrentReconciles(4);
    // Present from the start for both controllers, so rate() sees the first increment.
    let text = await m.registry.metrics();
    for (const controller of ['postgrescluster', 'postgresdatabase']) {
      const c = `controller="${controller}"`;
      expect(text).toContain(`controller_runtime_reconcile_total{${c},result="success"} 0`);
      expect(text).toContain(`controller_runtime_reconcile_errors_total{${c}} 0`);
      expect(text).toContain(`controller_runtime_active_workers{${c}} 0`);
      // One pool serves both kinds: either may use every worker.
      expect(text).toContain(`controller_runtime_max_concurrent_reconciles{${c}} 4`);
    }

    const dbPass = m.reconcileStarted(DATABASE_KEY);
    text = await m.registry.metrics();
    expect(text).toContain('controller_runtime_active_workers{controller="postgresdatabase"} 1');
    expect(text).toContain('controller_runtime_active_workers{controller="postgrescluster"} 0');
    dbPass(outcome({ key: { namespace: 'team-a', name: 'orders-app' }, requeue: { kind: 'after', ms: 1000 } }));
    m.reconcileStarted(DATABASE_KEY)(undefined);
    m.reconcileStarted(CLUSTER_KEY)(outcome({}));
    m.reconcileStarted()(outcome({}));

    text = await m.registry.metrics();
    const db = 'controller="postgresdatabase"';
    const cl = 'controller="postgrescluster"';
    for (const line of [
      `controller_runtime_reconcile_total{${db},result="requeue_after"} 1`,
      `controller_runtime_reconcile_total{${db},result="error"} 1`,
      `controller_runtime_reconcile_total{${db},result="success"} 0`,
      `controller_runtime_reconcile_errors_total{${db}} 1`,
      `controller_runtime_reconcile_time_seconds_count{${db}} 2`,
      `controller_runtime_active_workers{${db}} 0`,
      `controller_runtime_reconcile_total{${cl},result="success"} 2`,
      `controller_runtime_reconcile_total{${cl},result="requeue_after"} 0`,
      `controller_runtime_reconcile_total{${cl},result="error"} 0`,
      `controller_runtime_reconcile_errors_total{${cl}} 0`,
      `controller_runtime_reconcile_time_seconds_count{${cl}} 2`,
      // The work queue is one, named after the cluster controller.
      'workqueue_depth{controller="postgrescluster",name="postgrescluster"} 0',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).not.toContain('name="postgresdatabase"');
  });

  it("counts a database's transitions apart from the clusters' (the machines share state names)", async () => {
    const m = new OperatorMetrics({ defaultMetrics: false });
    m.reconcileStarted(DATABASE_KEY)(outcome({ to: 'Pending' }));
    m.reconcileStarted(DATABASE_KEY)(outcome({ from: 'Pending', to: 'Provisioning.Cluster' }));
    m.reconcileStarted(DATABASE_KEY)(outcome({ from: 'Provisioning.Cluster', to: 'Provisioning.Cluster' }));
    m.reconcileStarted(CLUSTER_KEY)(outcome({ from: 'Pending', to: 'Provisioning.Secret' }));
    const text = await m.registry.metrics();
    expect(text).toContain('pgfsm_database_transitions_total{from="",to="Pending"} 1');
    expect(text).toContain('pgfsm_database_transitions_total{from="Pending",to="Provisioning.Cluster"} 1');
    expect(text).not.toContain('pgfsm_database_transitions_total{from="Provisioning.Cluster"');
    expect(text).not.toContain('pgfsm_database_transitions_total{from="Pending",to="Provisioning.Secret"}');
    expect(text).toContain('pgfsm_transitions_total{from="Pending",to="Provisioning.Secret"} 1');
    expect(text).not.toContain('pgfsm_transitions_total{from="",to="Pending"}');
    expect(text).not.toContain('pgfsm_transitions_total{from="Pending",to="Provisioning.Cluster"}');
  });

  it('derives database state, time in state and stalled from the databases cache at scrape time', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false, now: () => NOW });
    const databases = [
      database('orders-app', 'Ready', '2026-11-30T11:59:00Z'),
      database('billing-app', 'Provisioning.Roles', '2026-11-30T11:30:00Z', true),
      // A database the operator has not reconciled yet: no state, so no state series, but a stalled 0.
      { ...database('fresh', 'Pending', '2026-11-30T12:00:00Z'), status: undefined },
    ];
    // A cluster of the same name: its series and the database's never mix.
    const clusters = [cluster('orders-app', 'Provisioning.Cluster', '2026-11-30T11:00:00Z')];
    const clusterSource = source('postgresclusters', clusters);
    const databaseSource = source('postgresdatabases', databases);
    // Found among every source by its resource, as the operator passes them (allSources).
    m.observeSources(clusterSource, [clusterSource, databaseSource as unknown as ObjectSource]);
    let text = await m.registry.metrics();
    expect(text).toContain('pgfsm_database_state{namespace="team-a",name="orders-app",state="Ready"} 1');
    expect(text).toContain('pgfsm_database_state{namespace="team-a",name="billing-app",state="Provisioning.Roles"} 1');
    expect(text).not.toMatch(/pgfsm_database_state\{[^}]*name="fresh"/);
    expect(text).toContain(
      'pgfsm_database_time_in_state_seconds{namespace="team-a",name="orders-app",state="Ready"} 60',
    );
    expect(text).toContain(
      'pgfsm_database_time_in_state_seconds{namespace="team-a",name="billing-app",state="Provisioning.Roles"} 1800',
    );
    expect(text).toContain('pgfsm_database_stalled{namespace="team-a",name="orders-app"} 0');
    expect(text).toContain('pgfsm_database_stalled{namespace="team-a",name="billing-app"} 1');
    expect(text).toContain('pgfsm_database_stalled{namespace="team-a",name="fresh"} 0');
    expect(text).toContain('pgfsm_informer_synced{resource="postgresdatabases"} 1');
    // The cluster series hold the clusters only, with their labels unchanged.
    expect(text).toContain('pgfsm_cluster_state{namespace="team-a",name="orders-app",state="Provisioning.Cluster"} 1');
    expect(text).not.toContain('pgfsm_cluster_state{namespace="team-a",name="orders-app",state="Ready"}');
    expect(text).not.toContain('pgfsm_cluster_state{namespace="team-a",name="billing-app"');
    expect(text).not.toContain('pgfsm_stalled{namespace="team-a",name="billing-app"}');
    expect(text).toContain('pgfsm_stalled{namespace="team-a",name="orders-app"} 0');

    // A database that moved on or went away leaves no stale series behind.
    databases.splice(1, 2);
    databases[0] = database('orders-app', 'Deleting.Database', '2026-11-30T12:00:00Z');
    text = await m.registry.metrics();
    expect(text).not.toContain('name="billing-app"');
    expect(text).not.toMatch(/pgfsm_database_state\{[^}]*state="Ready"/);
    expect(text).toContain('pgfsm_database_state{namespace="team-a",name="orders-app",state="Deleting.Database"} 1');
  });

  it('reads the databases from the source it is given, and exports none without one', async () => {
    const m = new OperatorMetrics({ defaultMetrics: false, now: () => NOW });
    const clusterSource = source('postgresclusters', []);
    m.observeSources(clusterSource, [clusterSource]);
    expect(await m.registry.metrics()).not.toMatch(/^pgfsm_database_state\{/m);
    const given = source('databases-under-test', [database('orders-app', 'Ready', '2026-11-30T11:59:00Z')]);
    m.observeSources(clusterSource, [clusterSource], given);
    expect(await m.registry.metrics()).toContain(
      'pgfsm_database_state{namespace="team-a",name="orders-app",state="Ready"} 1',
    );
  });

  it('includes process metrics unless told not to', async () => {
    expect(await new OperatorMetrics().registry.metrics()).toContain('process_cpu_seconds_total');
    expect(await new OperatorMetrics({ defaultMetrics: false }).registry.metrics()).not.toContain('process_cpu');
  });

  it("exports pgfsm_build_info = 1 with pgfsm's version, Node's and XState's", async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
      dependencies: { xstate: string };
    };
    expect(buildInfo()).toEqual({
      version: pkg.version,
      nodeVersion: process.version,
      xstate: pkg.dependencies.xstate,
    });
    const text = await new OperatorMetrics({ defaultMetrics: false }).registry.metrics();
    expect(text).toContain('# TYPE pgfsm_build_info gauge');
    expect(text).toContain(
      `pgfsm_build_info{version="${pkg.version}",node_version="${process.version}",xstate="${pkg.dependencies.xstate}"} 1`,
    );
    const given = new OperatorMetrics({
      defaultMetrics: false,
      build: { version: '9.9.9', nodeVersion: 'v22.0.0', xstate: '5.0.0' },
    });
    expect(await given.registry.metrics()).toContain(
      'pgfsm_build_info{version="9.9.9",node_version="v22.0.0",xstate="5.0.0"} 1',
    );
  });
});
