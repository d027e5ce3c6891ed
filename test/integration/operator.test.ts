/**
 * pgfsm end to end against a real kube-apiserver and etcd: the operator runs with the ServiceAccount
 * token bound to deploy/rbac (the API server enforces the role), the CNPG simulator plays CNPG, and
 * the lifecycle engine's behaviour contract is checked on real objects, status and events.
 */

import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresClusterClass } from '../../src/operator/api/schema.ts';
import { CLASS_DELETION_EVENT_REASON, CLASS_FINALIZER } from '../../src/operator/domain/class-protection.ts';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import { ADOPT_ANNOTATION } from '../../src/operator/domain/vocabulary.ts';
import { type ControlPlane, describeControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  conditions,
  countOf,
  createClass,
  createCluster,
  eventsAbout,
  GROUP,
  getCluster,
  NS,
  type OperatorHandle,
  patchClass,
  patchSpec,
  runOperator,
  setUpWorld,
  sleep,
  stateOf,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

const cnpgCluster = async (name: string) =>
  (await world.custom.getNamespacedCustomObject({
    group: 'postgresql.cnpg.io',
    version: 'v1',
    namespace: NS,
    plural: 'clusters',
    name,
  })) as CnpgCluster;

const configMapData = async (name: string) =>
  (await world.core.readNamespacedConfigMap({ name, namespace: NS })).data ?? {};

const exists = async (read: () => Promise<unknown>) => {
  try {
    await read();
    return true;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  }
};

beforeAll(async () => {
  cp = await startControlPlane();
  console.log(describeControlPlane(cp));
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  await world.core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'app-password' }, stringData: { username: 'app', password: 'app-secret-value' } },
  });
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('pgfsm against a real API server', () => {
  it('takes a pooled cluster with a managed role to Ready, with the audit trail and events once', async () => {
    await createCluster(world, 'orders', {
      class: 'standard',
      instances: 2,
      connectionPoolerEnabled: true,
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
    });
    await untilState(world, 'orders', 'Ready');
    expect(await conditions(world, 'orders')).toEqual({
      Ready: 'True/AllComponentsReady',
      Reconciling: 'False/Ready',
      Stalled: 'False/Ready',
      SecretsReady: 'True/SuperUserSecretReady',
      ClusterReady: 'True/CNPGClusterHealthy',
      ManagedRolesReady: 'True/ManagedRolesReconciled',
      PoolerReady: 'True/AllInstancesReady',
      ConfigMapsReady: 'True/ConfigMapReconciled',
    });
    const cluster = await getCluster(world, 'orders');
    expect(cluster?.status?.connectionPoolerStatus).toEqual({ enabled: true });
    expect(cluster?.status?.resources?.secretRef).toEqual({ name: 'orders-superuser', key: 'password' });
    expect(cluster?.metadata.finalizers).toContain('pgfsm.io/finalizer');
    expect((await configMapData('orders-endpoints')).CLUSTER_POOLER_RW_ENDPOINT).toBe(
      'orders-pooler-rw.team-a.svc.cluster.local',
    );
    const cnpg = await cnpgCluster('orders');
    expect(cnpg.metadata.ownerReferences?.[0]?.uid).toBe(cluster?.metadata.uid);
    expect(cnpg.spec.managed?.roles?.map((r) => r.name)).toEqual(['app']);
    await sleep(1_000);
    const events = await eventsAbout(world, 'orders');
    expect(countOf(events, 'Ready')).toBe(1);
    expect(countOf(events, 'SuperuserSecretCreated')).toBe(1);
    expect(countOf(events, 'CNPGClusterCreated')).toBe(1);
    expect(countOf(events, 'PoolersCreated')).toBe(1);
    expect(countOf(events, 'EndpointsPublished')).toBe(1);
    expect(countOf(events, 'Degraded')).toBe(0);
    // What was done and that it is Ready; no event for a condition turning True.
    expect(events.map((e) => e.reason)).not.toContain('PoolerReady');
    // No secret value in the status, the ConfigMap or the events.
    const password = Buffer.from(
      (await world.core.readNamespacedSecret({ name: 'orders-superuser', namespace: NS })).data?.password ?? '',
      'base64',
    ).toString();
    expect(password).toHaveLength(32);
    const published = JSON.stringify([cluster?.status, await configMapData('orders-endpoints'), events]);
    expect(published).not.toContain(password);
    expect(published).not.toContain('app-secret-value');
  });

  it('writes nothing and announces nothing while a Ready cluster stays Ready', async () => {
    const before = (await getCluster(world, 'orders'))?.metadata.resourceVersion;
    const eventsBefore = await eventsAbout(world, 'orders');
    await sleep(4_000);
    expect((await getCluster(world, 'orders'))?.metadata.resourceVersion).toBe(before);
    expect(await eventsAbout(world, 'orders')).toEqual(eventsBefore);
  });

  it('degrades during a switchover and recovers, announcing each once', async () => {
    world.simulator.switchover(NS, 'orders', 3_000);
    await untilState(world, 'orders', 'Degraded');
    expect((await conditions(world, 'orders')).ClusterReady).toBe('False/CNPGSwitchover');
    expect((await conditions(world, 'orders')).PoolerReady).toBe('True/AllInstancesReady');
    await untilState(world, 'orders', 'Ready');
    await sleep(500);
    const events = await eventsAbout(world, 'orders');
    expect(countOf(events, 'Degraded')).toBe(1);
    expect(countOf(events, 'Ready')).toBe(2);
  });

  it('repairs drift of the ConfigMap and recreates a deleted one', async () => {
    const cm = await world.core.readNamespacedConfigMap({ name: 'orders-endpoints', namespace: NS });
    cm.data = { ...cm.data, DEFAULT_CLUSTER_PORT: '1' };
    await world.core.replaceNamespacedConfigMap({ name: 'orders-endpoints', namespace: NS, body: cm });
    await waitFor('port restored', async () =>
      (await configMapData('orders-endpoints')).DEFAULT_CLUSTER_PORT === '5432' ? true : undefined,
    );
    await world.core.deleteNamespacedConfigMap({ name: 'orders-endpoints', namespace: NS });
    await waitFor('configmap recreated', async () =>
      (await exists(() => configMapData('orders-endpoints'))) ? true : undefined,
    );
    await untilState(world, 'orders', 'Ready');
    // The edit is repaired as drift, the deletion said once as it is undone: each in one EndpointsRepaired. The
    // pass that saw it gone published it again at once, so Ready never changed in the status: no NotReady.
    const repaired = await waitFor('EndpointsRepaired for the deletion', async () => {
      const events = (await eventsAbout(world, 'orders')).filter((e) => e.reason === 'EndpointsRepaired');
      return events.some((e) => e.note?.includes('was deleted')) ? events : undefined;
    });
    const deleted = repaired.filter((e) => e.note?.includes('was deleted'));
    expect(deleted.map((e) => [e.type, e.count])).toEqual([['Normal', 1]]);
    expect(repaired.some((e) => e.note?.includes('DEFAULT_CLUSTER_PORT'))).toBe(true);
    expect(countOf(await eventsAbout(world, 'orders'), 'NotReady')).toBe(0);
  });

  it('recreates a deleted superuser Secret, with a fresh password and an event', async () => {
    const read = () => world.core.readNamespacedSecret({ name: 'orders-superuser', namespace: NS });
    const before = await read();
    await world.core.deleteNamespacedSecret({ name: 'orders-superuser', namespace: NS });
    const after = await waitFor('secret recreated', async () => {
      const secret = await read().catch(() => undefined);
      return secret && secret.metadata?.uid !== before.metadata?.uid ? secret : undefined;
    });
    expect(after.metadata?.ownerReferences?.[0]?.name).toBe('orders');
    expect(after.data?.password).toBeTruthy();
    await untilState(world, 'orders', 'Ready');
    await waitFor('a second SuperuserSecretCreated', async () =>
      countOf(await eventsAbout(world, 'orders'), 'SuperuserSecretCreated') === 2 ? true : undefined,
    );
  });

  it('repairs drift of the CNPG cluster and of a pooler made by another writer, keeping roles and their keys', async () => {
    const cnpgAt = { group: 'postgresql.cnpg.io', version: 'v1', namespace: NS, name: 'orders' };
    await world.custom.patchNamespacedCustomObject(
      {
        ...cnpgAt,
        plural: 'clusters',
        body: { spec: { instances: 5, postgresql: { parameters: { max_connections: '7' } } } },
      },
      mergePatch,
    );
    await world.custom.patchNamespacedCustomObject(
      {
        ...cnpgAt,
        name: 'orders-pooler-ro',
        plural: 'poolers',
        body: { spec: { instances: 7, pgbouncer: { poolMode: 'session', parameters: { max_client_conn: '500' } } } },
      },
      mergePatch,
    );
    await waitFor('CNPG spec repaired', async () =>
      (await cnpgCluster('orders')).spec.instances === 2 ? true : undefined,
    );
    const pooler = await waitFor('pooler repaired', async () => {
      const p = (await world.custom.getNamespacedCustomObject({
        ...cnpgAt,
        name: 'orders-pooler-ro',
        plural: 'poolers',
      })) as { spec: { instances: number; pgbouncer: { poolMode: string; parameters?: Record<string, string> } } };
      return p.spec.instances === 2 && p.spec.pgbouncer.poolMode === 'transaction' ? p : undefined;
    });
    // A key another writer owns survives server-side apply; ours are restored.
    expect(pooler.spec.pgbouncer.parameters?.max_client_conn).toBe('500');
    const cnpg = await cnpgCluster('orders');
    expect(cnpg.spec.managed?.roles?.map((r) => r.name)).toEqual(['app']);
    // orders sets no PostgreSQL parameters itself: max_connections belongs to whoever wrote it.
    expect(cnpg.spec.postgresql?.parameters?.max_connections).toBe('7');
    await untilState(world, 'orders', 'Ready');
    expect(countOf(await eventsAbout(world, 'orders'), 'CNPGClusterUpdated')).toBeGreaterThanOrEqual(1);
  });

  it('turns the pooler off: poolers deleted, PoolerDisabled, no pooler status, no pooler endpoints', async () => {
    await patchSpec(world, 'orders', { connectionPoolerEnabled: false });
    await waitFor('poolers gone', async () => {
      const list = (await world.custom.listNamespacedCustomObject({
        group: 'postgresql.cnpg.io',
        version: 'v1',
        namespace: NS,
        plural: 'poolers',
      })) as { items: unknown[] };
      return list.items.length === 0 ? true : undefined;
    });
    await untilState(world, 'orders', 'Ready');
    await waitFor('pooler endpoints gone', async () =>
      (await configMapData('orders-endpoints')).CLUSTER_POOLER_RW_ENDPOINT === undefined ? true : undefined,
    );
    expect((await conditions(world, 'orders')).PoolerReady).toBe('True/PoolerDisabled');
    expect((await getCluster(world, 'orders'))?.status?.connectionPoolerStatus).toBeUndefined();
  });

  it('removes a managed role taken out of the list', async () => {
    await patchSpec(world, 'orders', { managedRoles: [] });
    await waitFor('role absent', async () =>
      (await cnpgCluster('orders')).spec.managed?.roles?.[0]?.ensure === 'absent' ? true : undefined,
    );
    await untilState(world, 'orders', 'Ready');
  });

  it('rolls a class change out to every cluster of the class', async () => {
    await createCluster(world, 'inventory', { class: 'standard' });
    await untilState(world, 'inventory', 'Ready');
    await patchClass(world, 'standard', { spec: { config: { postgresqlConfig: { work_mem: '8MB' } } } });
    for (const name of ['orders', 'inventory']) {
      await waitFor(`${name} has work_mem`, async () =>
        (await cnpgCluster(name)).spec.postgresql?.parameters?.work_mem === '8MB' ? true : undefined,
      );
      await untilState(world, name, 'Ready');
    }
  });

  it('stops writing while suspended and continues when resumed', async () => {
    await patchSpec(world, 'inventory', { suspend: true });
    await untilState(world, 'inventory', 'Suspended');
    await world.core.deleteNamespacedConfigMap({ name: 'inventory-endpoints', namespace: NS });
    await sleep(3_000);
    expect(await exists(() => configMapData('inventory-endpoints'))).toBe(false);
    expect((await conditions(world, 'inventory')).ConfigMapsReady).toBe('False/ConfigMapPending');
    await patchSpec(world, 'inventory', { suspend: false });
    await untilState(world, 'inventory', 'Ready');
    expect(await exists(() => configMapData('inventory-endpoints'))).toBe(true);
  });

  it('deletes with Retain, keeping the data without owner references, and re-adopts them', async () => {
    const password = (await world.core.readNamespacedSecret({ name: 'inventory-superuser', namespace: NS })).data
      ?.password;
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresclusters',
      name: 'inventory',
    });
    await waitFor('inventory gone', async () => ((await getCluster(world, 'inventory')) ? undefined : true));
    // Garbage collection runs for real (kube-controller-manager): retained children must survive it.
    await sleep(2_000);
    expect((await cnpgCluster('inventory')).metadata.ownerReferences ?? []).toEqual([]);
    const secret = await world.core.readNamespacedSecret({ name: 'inventory-superuser', namespace: NS });
    expect(secret.metadata?.ownerReferences ?? []).toEqual([]);
    // Released and handed over in one patch: the annotation, not the labels, lets a new cluster take them back.
    expect(secret.metadata?.annotations?.[ADOPT_ANNOTATION]).toBe('true');
    expect((await cnpgCluster('inventory')).metadata.annotations?.[ADOPT_ANNOTATION]).toBe('true');
    expect(await exists(() => configMapData('inventory-endpoints'))).toBe(true);

    await createCluster(world, 'inventory', { class: 'standard' });
    await untilState(world, 'inventory', 'Ready');
    const uid = (await getCluster(world, 'inventory'))?.metadata.uid;
    expect((await cnpgCluster('inventory')).metadata.ownerReferences?.[0]?.uid).toBe(uid);
    expect((await world.core.readNamespacedSecret({ name: 'inventory-superuser', namespace: NS })).data?.password).toBe(
      password,
    );
    const adopted = (await eventsAbout(world, 'inventory')).filter(
      (e) => e.reason.endsWith('Adopted') && e.uid === uid,
    );
    expect(adopted.length).toBeGreaterThanOrEqual(3);
  });

  it('deletes with Delete: every child goes, then the object', async () => {
    await patchSpec(world, 'orders', { clusterDeletionPolicy: 'Delete' });
    await sleep(500);
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresclusters',
      name: 'orders',
    });
    await waitFor('orders gone', async () => ((await getCluster(world, 'orders')) ? undefined : true));
    expect(await exists(() => cnpgCluster('orders'))).toBe(false);
    expect(await exists(() => world.core.readNamespacedSecret({ name: 'orders-superuser', namespace: NS }))).toBe(
      false,
    );
    expect(await exists(() => configMapData('orders-endpoints'))).toBe(false);
  });

  it('keeps a class in use while it is deleted (Terminating), its cluster Ready, and lets it go with the cluster', async () => {
    const readClass = async () => {
      try {
        return (await world.custom.getClusterCustomObject({
          ...GROUP,
          plural: 'postgresclusterclasses',
          name: 'ephemeral',
        })) as PostgresClusterClass;
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    };
    await createClass(world, 'ephemeral');
    await createCluster(world, 'kept', { class: 'ephemeral', clusterDeletionPolicy: 'Delete' });
    await untilState(world, 'kept', 'Ready');
    await waitFor('the class protected', async () =>
      (await readClass())?.metadata.finalizers?.includes(CLASS_FINALIZER) ? true : undefined,
    );

    await world.custom.deleteClusterCustomObject({ ...GROUP, plural: 'postgresclusterclasses', name: 'ephemeral' });
    await waitFor('the cluster told', async () =>
      countOf(await eventsAbout(world, 'kept'), CLASS_DELETION_EVENT_REASON) > 0 ? true : undefined,
    );
    await sleep(1_500);
    const terminating = await readClass();
    expect(terminating?.metadata.deletionTimestamp).toBeDefined();
    expect(terminating?.metadata.finalizers).toEqual([CLASS_FINALIZER]);
    expect(await stateOf(world, 'kept')).toBe('Ready');
    expect((await conditions(world, 'kept')).Ready).toBe('True/AllComponentsReady');
    const events = await eventsAbout(world, 'kept');
    expect(countOf(events, CLASS_DELETION_EVENT_REASON)).toBe(1);
    expect(events.find((e) => e.reason === CLASS_DELETION_EVENT_REASON)?.note).toContain(
      'PostgresClusterClass ephemeral is being deleted; it stays until no PostgresCluster uses it: kept in team-a',
    );
    expect(countOf(events, 'ClusterClassNotFound')).toBe(0);

    await world.custom.deleteNamespacedCustomObject({
      ...GROUP,
      namespace: NS,
      plural: 'postgresclusters',
      name: 'kept',
    });
    await waitFor('kept gone', async () => ((await getCluster(world, 'kept')) ? undefined : true));
    await waitFor('the class gone', async () => ((await readClass()) ? undefined : true));
  });

  it('converges after the operator is restarted mid-pipeline', async () => {
    await operator?.stop();
    operator = undefined;
    await createCluster(world, 'restarted', { class: 'standard', instances: 3 });
    // Nobody reconciles: the cluster waits without a status.
    await sleep(1_000);
    expect(await stateOf(world, 'restarted')).toBeUndefined();
    operator = await runOperator(world);
    await untilState(world, 'restarted', 'Provisioning.Cluster');
    await operator.stop();
    operator = await runOperator(world);
    await untilState(world, 'restarted', 'Ready');
  });

  it('reports Stalled past the progress deadline and clears it when progress resumes', async () => {
    await operator?.stop();
    operator = await runOperator(world, { settings: { progressDeadlineMs: 3_000, requeueDelayMs: 1_000 } });
    world.simulator.poolerNeverReady(NS, 'slow-pooler-rw');
    await createCluster(world, 'slow', { class: 'standard', connectionPoolerEnabled: true });
    await untilState(world, 'slow', 'Provisioning.Pooler');
    await waitFor('Stalled', async () =>
      (await conditions(world, 'slow')).Stalled === 'True/ProvisioningPoolerDeadlineExceeded' ? true : undefined,
    );
    world.simulator.clearFaults();
    await untilState(world, 'slow', 'Ready');
    expect((await conditions(world, 'slow')).Stalled).toBe('False/Ready');
  });
});

describe('two replicas', () => {
  it('only the leader reconciles; when it stops, the standby takes over', async () => {
    await operator?.stop();
    operator = undefined;
    const a = await runOperator(world, { identity: 'replica-a', leaderElect: true });
    await sleep(1_500);
    const b = await runOperator(world, { identity: 'replica-b', leaderElect: true });
    try {
      await createCluster(world, 'ha-one', { class: 'standard' });
      await untilState(world, 'ha-one', 'Ready');
      const first = await eventsAbout(world, 'ha-one');
      expect(new Set(first.map((e) => e.reportingInstance))).toEqual(new Set(['replica-a']));
      await a.stop();
      await createCluster(world, 'ha-two', { class: 'standard' });
      await untilState(world, 'ha-two', 'Ready');
      const second = await eventsAbout(world, 'ha-two');
      expect(new Set(second.map((e) => e.reportingInstance))).toEqual(new Set(['replica-b']));
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describe('RBAC', () => {
  it('the operator identity is really the ServiceAccount, and it cannot do more than the role allows', async () => {
    const core = world.operatorKc.makeApiClient(CoreV1Api);
    await expect(core.listNamespace()).rejects.toMatchObject({ code: 403 });
    await expect(core.deleteNamespace({ name: NS })).rejects.toMatchObject({ code: 403 });
  });
});
