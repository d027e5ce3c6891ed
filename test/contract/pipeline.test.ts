/** Behaviour contract 1–6: gating, conditions, audit trail, phase and events, consumer contract. */
import { describe, expect, it } from 'vitest';
import { reconcile } from '../../src/operator/core/reconcile.ts';
import { EndpointKey } from '../../src/operator/domain/components/configmap.ts';
import { COMPONENTS, CONDITION_OF } from '../../src/operator/domain/vocabulary.ts';
import {
  clusterObject,
  conditionOf,
  conditionSummary,
  dataOf,
  editSpec,
  eventsOf,
  getCluster,
  NS,
  passwordSecret,
  reasonsOf,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';

const pooled = () =>
  clusterObject('orders', {
    instances: 3,
    connectionPoolerEnabled: true,
    managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
  });

describe('1. a step acts only when every earlier step is healthy (the Poolers excepted: they start with the CNPG Cluster)', () => {
  it('blocks later steps as Pending (never Failed) and waits with a plain requeue delay', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await sim.run(10_000);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Cluster');
    // Nothing of a later step exists yet but the Poolers, created once the CNPG Cluster exists so that PgBouncer
    // starts with PostgreSQL (assessment.ts, poolersAhead); the pooler step itself has not been reached.
    expect(
      sim.api
        .list('Pooler', NS)
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['orders-pooler-ro', 'orders-pooler-rw']);
    expect(sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' })).toBeUndefined();
    const c = conditionSummary(sim, 'orders');
    expect(c.SecretsReady).toBe('True/SuperUserSecretReady');
    expect(c.ClusterReady).toMatch(/^False\/CNPGCluster(Provisioning|Pending)$/);
    for (const later of ['ManagedRolesReady', 'ConfigMapsReady']) {
      expect(c[later]).toBe('False/WaitingForClusterReady');
    }
    // The Poolers, already there, say what they are: serving.
    expect(c.PoolerReady).toBe('True/AllInstancesReady');
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome.requeue).toEqual({ kind: 'after', ms: 15_000 });
    expect(outcome.error).toBeUndefined();
  });

  it('uses the configured requeue delay', async () => {
    const sim = simulationWith([clusterObject('inventory')], { settings: { requeueDelayMs: 2_000 } });
    await sim.run(5_000);
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'inventory' });
    expect(statusOf(sim, 'inventory').state).toBe('Provisioning.Cluster');
    expect(outcome.requeue).toEqual({ kind: 'after', ms: 2_000 });
  });

  it('passes several healthy steps in one tick', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await untilReady(sim, 'inventory');
    const ready = sim.passes.filter((p) => p.to === 'Ready' && p.from !== 'Ready');
    expect(ready).toHaveLength(1);
    // Roles (none) and pooler (disabled) are healthy: the pass that saw CNPG healthy went on to the
    // ConfigMap, applied it and, on the API server's answer, to Ready (core/follow.ts).
    expect(ready[0]?.from).toBe('Provisioning.Cluster');
    expect(ready[0]?.writes).toBe(1);
  });
});

describe('2. each step owns a condition; summary and kstatus conditions; generations and times', () => {
  it('publishes every condition with observedGeneration and keeps lastTransitionTime until a flip', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    const status = statusOf(sim, 'orders');
    const types = status.conditions?.map((c) => c.type).sort();
    expect(types).toEqual(['Ready', 'Reconciling', 'Stalled', ...COMPONENTS.map((c) => CONDITION_OF[c])].sort());
    expect(status.observedGeneration).toBe(1);
    for (const c of status.conditions ?? []) {
      expect(c.observedGeneration).toBe(1);
      expect(c.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      Ready: 'True/AllComponentsReady',
      Reconciling: 'False/Ready',
      Stalled: 'False/Ready',
      SecretsReady: 'True/SuperUserSecretReady',
      ClusterReady: 'True/CNPGClusterHealthy',
      ManagedRolesReady: 'True/ManagedRolesReconciled',
      PoolerReady: 'True/AllInstancesReady',
      ConfigMapsReady: 'True/ConfigMapReconciled',
    });
    const secretsSince = conditionOf(sim, 'orders', 'SecretsReady').lastTransitionTime;
    sim.cnpg.switchover(NS, 'orders');
    await sim.run(2_000);
    expect(conditionOf(sim, 'orders', 'SecretsReady').lastTransitionTime).toBe(secretsSince);
    expect(conditionOf(sim, 'orders', 'ClusterReady').lastTransitionTime).not.toBe(secretsSince);
  });

  it('stamps the new generation on every condition after a spec change', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await untilReady(sim, 'inventory');
    editSpec(sim, 'inventory', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '8MB' } }));
    await sim.run(1_000);
    const status = statusOf(sim, 'inventory');
    expect(status.observedGeneration).toBe(2);
    expect(new Set(status.conditions?.map((c) => c.observedGeneration))).toEqual(new Set([2]));
  });
});

describe('3. audit trail', () => {
  it('keeps every passed step True while CNPG switches over', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    sim.cnpg.switchover(NS, 'orders', 20_000);
    await sim.run(1_000);
    expect(statusOf(sim, 'orders').state).toBe('Degraded');
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      Ready: 'False/CNPGSwitchover',
      ClusterReady: 'False/CNPGSwitchover',
      SecretsReady: 'True/SuperUserSecretReady',
      ManagedRolesReady: 'True/ManagedRolesReconciled',
      PoolerReady: 'True/AllInstancesReady',
      ConfigMapsReady: 'True/ConfigMapReconciled',
    });
    expect(statusOf(sim, 'orders').conditions).toHaveLength(8);
  });
});

describe('4. phase and the Ready / Degraded events', () => {
  it('derives phase from the state alone, never flaps, and announces Ready once per entry', async () => {
    const phases: string[] = [];
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')], {
      onPass: () => {
        const phase = getCluster(sim, 'orders')?.status?.phase;
        if (phase && phases.at(-1) !== phase) phases.push(phase);
      },
    });
    await untilReady(sim, 'orders');
    // Pending is passed through, not stored: the first pass follows its finalizer write (core/follow.ts).
    expect(phases).toEqual(['Provisioning', 'Ready']);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'Ready')).toHaveLength(1);
    expect(reasonsOf(sim, 'orders')).not.toContain('Degraded');

    sim.cnpg.switchover(NS, 'orders', 10_000);
    await sim.run(60_000);
    expect(phases).toEqual(['Provisioning', 'Ready', 'Degraded', 'Ready']);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'Degraded')).toHaveLength(1);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'Ready')).toHaveLength(2);
    const degraded = eventsOf(sim, 'orders').find((e) => e.reason === 'Degraded');
    expect(degraded?.type).toBe('Warning');
  });
});

describe('5. events only on transitions', () => {
  it('says what it did and that the cluster is Ready, nothing more: no event for a condition turning True', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    expect(reasonsOf(sim, 'orders')).toEqual([
      'SuperuserSecretCreated',
      'CNPGClusterCreated',
      'PoolersCreated',
      'ManagedRolesApplied',
      'EndpointsPublished',
      'Ready',
    ]);
    const poolers = eventsOf(sim, 'orders').find((e) => e.reason === 'PoolersCreated');
    expect(poolers?.message).toBe('Poolers orders-pooler-rw and orders-pooler-ro created');
  });

  it('takes at most 5 events to Ready with the pooler, 4 without (no managed roles)', async () => {
    const sim = simulationWith([
      clusterObject('pooled', { connectionPoolerEnabled: true }),
      clusterObject('plain', { connectionPoolerEnabled: false }),
    ]);
    await untilReady(sim, 'pooled');
    await untilReady(sim, 'plain');
    expect(reasonsOf(sim, 'pooled')).toEqual([
      'SuperuserSecretCreated',
      'CNPGClusterCreated',
      'PoolersCreated',
      'EndpointsPublished',
      'Ready',
    ]);
    expect(reasonsOf(sim, 'plain')).toEqual([
      'SuperuserSecretCreated',
      'CNPGClusterCreated',
      'EndpointsPublished',
      'Ready',
    ]);
  });

  it('a Ready cluster reconciled 100 times produces no event and no write', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    const events = sim.events.events.length;
    const writes = sim.api.writes.length;
    for (let i = 0; i < 100; i++) {
      const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
      expect(outcome.requeue).toEqual({ kind: 'none' });
    }
    expect(sim.events.events.length).toBe(events);
    expect(sim.api.writes.length).toBe(writes);
  });

  it('emits EndpointsPublished on create and EndpointsRepaired on each drift repair, and Ready only once', async () => {
    const sim = simulationWith([clusterObject('inventory')]);
    await untilReady(sim, 'inventory');
    for (let i = 0; i < 2; i++) {
      const cm = sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'inventory-endpoints' });
      if (!cm) throw new Error('no configmap');
      sim.api.put({ ...cm, data: { ...(cm.data as object), [EndpointKey.port]: '9999' } });
      await sim.run(1_000);
    }
    const count = (reason: string) => reasonsOf(sim, 'inventory').filter((r) => r === reason).length;
    expect(count('EndpointsPublished')).toBe(1);
    expect(count('EndpointsRepaired')).toBe(2);
    expect(eventsOf(sim, 'inventory').find((e) => e.reason === 'EndpointsRepaired')?.message).toBe(
      'ConfigMap inventory-endpoints repaired: DEFAULT_CLUSTER_PORT set back to what pgfsm publishes',
    );
    // A repair from Ready that is Ready again within its pass changed nothing a person watches.
    expect(count('Ready')).toBe(1);
    const cm = { data: dataOf(sim, 'ConfigMap', 'inventory-endpoints') ?? {} };
    expect(cm?.data[EndpointKey.port]).toBe('5432');
  });

  it('says the endpoints were updated, not restored, when the pooler is switched off', async () => {
    const sim = simulationWith([clusterObject('inventory', { connectionPoolerEnabled: true })]);
    await untilReady(sim, 'inventory');
    editSpec(sim, 'inventory', (spec) => ({ ...spec, connectionPoolerEnabled: false }));
    await sim.run(5_000);
    await untilReady(sim, 'inventory');
    const updated = eventsOf(sim, 'inventory').filter((e) => e.reason === 'EndpointsUpdated');
    expect(updated.map((e) => e.message)).toEqual([
      'ConfigMap inventory-endpoints updated: pooler endpoints removed, the pooler is switched off',
    ]);
    expect(reasonsOf(sim, 'inventory')).not.toContain('EndpointsRepaired');
    expect(reasonsOf(sim, 'inventory').filter((r) => r === 'PoolerDeleted')).toHaveLength(2);
  });
});

describe('6. consumer contract', () => {
  it('publishes no ref to an object it does not control, nor a secretRef to a Secret without the key', async () => {
    const foreign = [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'someone', uid: 'uid-x', controller: true }];
    const sim = simulationWith([
      clusterObject('orders'),
      // A Secret of pgfsm's name without a password, and a CNPG Cluster someone else controls.
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orders-superuser', namespace: NS }, data: {} },
    ] as never);
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Secret');
    expect(statusOf(sim, 'orders').resources).toBeUndefined();

    sim.api.delete({ kind: 'Secret', namespace: NS, name: 'orders-superuser' });
    sim.api.create({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'orders', namespace: NS, ownerReferences: foreign },
      spec: { instances: 1 },
    } as never);
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(statusOf(sim, 'orders').provisionerRef).toBeUndefined();
    expect(statusOf(sim, 'orders').resources).toEqual({ secretRef: { name: 'orders-superuser', key: 'password' } });
  });

  it('publishes refs, pooler status and endpoints; never a secret value', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    // The Poolers serve (they start with the CNPG Cluster) while the cluster still provisions: enabled says so, and the
    // endpoints wait for the ConfigMap step.
    await sim.run(10_000);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.Cluster');
    expect(statusOf(sim, 'orders').connectionPoolerStatus).toEqual({ enabled: true });
    expect(sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' })).toBeUndefined();
    await untilReady(sim, 'orders');
    const status = statusOf(sim, 'orders');
    expect(status.connectionPoolerStatus).toEqual({ enabled: true });
    expect(status.provisionerRef).toMatchObject({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      name: 'orders',
    });
    expect(status.resources).toEqual({
      secretRef: { name: 'orders-superuser', key: 'password' },
      configMapRef: { name: 'orders-endpoints' },
    });
    expect(status.readyInstances).toBe(3);
    const cm = { data: dataOf(sim, 'ConfigMap', 'orders-endpoints') ?? {} };
    expect(cm?.data).toEqual({
      CLUSTER_RW_ENDPOINT: 'orders-rw.team-a.svc.cluster.local',
      CLUSTER_RO_ENDPOINT: 'orders-ro.team-a.svc.cluster.local',
      CLUSTER_R_ENDPOINT: 'orders-r.team-a.svc.cluster.local',
      DEFAULT_CLUSTER_PORT: '5432',
      SUPER_USER_NAME: 'postgres',
      SUPER_USER_SECRET_REF: 'orders-superuser',
      CLUSTER_POOLER_RW_ENDPOINT: 'orders-pooler-rw.team-a.svc.cluster.local',
      CLUSTER_POOLER_RO_ENDPOINT: 'orders-pooler-ro.team-a.svc.cluster.local',
    });
    // The generated password appears nowhere but in its Secret.
    const password = Buffer.from(dataOf(sim, 'Secret', 'orders-superuser')?.password ?? '', 'base64').toString();
    expect(password).toMatch(/^[A-Za-z0-9]{32}$/);
    const everythingElse = JSON.stringify([
      sim.api.list('PostgresCluster'),
      sim.api.list('ConfigMap'),
      sim.api.list('Cluster'),
      sim.api.list('Pooler'),
      sim.events.events,
      sim.passes,
    ]);
    expect(everythingElse).not.toContain(password);
    expect(everythingElse).not.toContain('pw-app');
  });

  it('drops connectionPoolerStatus and reports PoolerDisabled when the pooler is off', async () => {
    const sim = simulationWith([pooled(), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    editSpec(sim, 'orders', (spec) => ({ ...spec, connectionPoolerEnabled: false }));
    await untilReady(sim, 'orders');
    await sim.run(10_000);
    const status = statusOf(sim, 'orders');
    expect(status.connectionPoolerStatus).toBeUndefined();
    expect(conditionOf(sim, 'orders', 'PoolerReady')).toMatchObject({ status: 'True', reason: 'PoolerDisabled' });
    expect(sim.api.list('Pooler', NS)).toHaveLength(0);
    // Deleted poolers are announced as deleted, never as "ready"; no event is named after a condition.
    expect(reasonsOf(sim, 'orders')).not.toContain('PoolerReady');
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'PoolerDeleted')).toHaveLength(2);
    const cm = { data: dataOf(sim, 'ConfigMap', 'orders-endpoints') ?? {} };
    expect(cm?.data[EndpointKey.poolerRw]).toBeUndefined();
  });

  it('the reconcile core finds nothing to do for a cluster that does not exist', async () => {
    const sim = simulationWith([]);
    const outcome = await reconcile({ namespace: NS, name: 'ghost' }, { ports: sim.ports, settings: sim.settings });
    expect(outcome).toMatchObject({ found: false, requeue: { kind: 'none' }, writes: 0 });
  });
});
