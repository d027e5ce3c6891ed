/**
 * The Kubernetes adapters (src/operator/kubernetes) end to end against a real kube-apiserver with the pgfsm
 * CRDs and the test-only CNPG CRDs installed: every port method, the field-manager split of the CNPG
 * Cluster, drift repair by server-side apply, Secret values never leaving the adapter, Event series, and
 * the mapping of API failures onto port error classes.
 */
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  GROUP,
  type PostgresCluster,
  type PostgresClusterStatus,
  VERSION,
} from '../../src/operator/api/schema.ts';
import { type ErrorClass, PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import {
  CNPG_API_VERSION,
  type CnpgCluster,
  type ConfigMap,
  type ObjectRef,
  type Pooler,
} from '../../src/operator/domain/objects.ts';
import { childLabels, FINALIZER, ownerReferenceTo } from '../../src/operator/domain/vocabulary.ts';
import { kubernetesPorts, toPortError } from '../../src/operator/kubernetes/index.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { installCrds, PGFSM_CRDS } from '../../src/tools/install/manifests.ts';
import { ManualClock } from '../../src/tools/memory/ports.ts';

let controlPlane: ControlPlane | undefined;
let ports: Ports;
const clock = new ManualClock(Date.parse('2026-11-30T12:00:00.123Z'));
const namespace = `adapters-${Date.now().toString(36)}`;

function cp(): ControlPlane {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane;
}
const core = () => cp().kubeConfig.makeApiClient(CoreV1Api);
const custom = () => cp().kubeConfig.makeApiClient(CustomObjectsApi);
const apps = () => cp().kubeConfig.makeApiClient(AppsV1Api);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

beforeAll(async () => {
  controlPlane = await startControlPlane();
  // CNPG's real CRDs and webhooks come with the control plane.
  await installCrds(controlPlane.kubeConfig, PGFSM_CRDS);
  await core().createNamespace({ body: { metadata: { name: namespace } } });
  ports = kubernetesPorts(controlPlane.kubeConfig, { clock, reportingInstance: 'pgfsm-test' });
});

afterAll(async () => {
  await controlPlane?.stop();
});

const clusters = { group: GROUP, version: VERSION, plural: 'postgresclusters' };
const cnpgClusters = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' };

/** A real PostgresCluster: children must point at a live owner, or the garbage collector removes them. */
async function createPostgresCluster(name: string): Promise<PostgresCluster> {
  await custom().createNamespacedCustomObject({
    ...clusters,
    namespace,
    body: { apiVersion: API_VERSION, kind: 'PostgresCluster', metadata: { name }, spec: { class: 'standard' } },
  });
  const cluster = await ports.clusters.get({ namespace, name });
  if (!cluster) throw new Error(`PostgresCluster ${name} was not created`);
  return cluster;
}

/** The class of the PortError a call fails with. */
async function failure(call: Promise<unknown>): Promise<{ errorClass: ErrorClass; message: string }> {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(PortError);
    return { errorClass: (error as PortError).errorClass, message: (error as PortError).message };
  }
  throw new Error('the call succeeded');
}

const ref = (kind: string, name: string, apiVersion = CNPG_API_VERSION): ObjectRef => ({
  apiVersion,
  kind,
  namespace,
  name,
});

const configMap = (owner: PostgresCluster, name: string, data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels: childLabels(owner.metadata.name), ownerReferences: [ownerReferenceTo(owner)] },
  data,
});

/** CNPG's validating webhook refuses a Cluster without a storage size; the tests that do not care get 1Gi. */
const cnpgCluster = (owner: PostgresCluster, spec: CnpgCluster['spec']): CnpgCluster => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Cluster',
  metadata: {
    name: owner.metadata.name,
    namespace,
    labels: childLabels(owner.metadata.name),
    ownerReferences: [ownerReferenceTo(owner)],
  },
  spec: { storage: { size: '1Gi' }, ...spec },
});

/**
 * `spec` as it reads back after CloudNativePG's defaulting webhook (which the control plane runs): what we
 * wrote plus exactly CNPG's defaults, asked of the webhook itself with a server-side dry-run create.
 */
async function defaultedByCnpg(spec: CnpgCluster['spec']): Promise<CnpgCluster['spec']> {
  const probe = (await custom().createNamespacedCustomObject({
    ...cnpgClusters,
    namespace,
    dryRun: 'All',
    body: { apiVersion: CNPG_API_VERSION, kind: 'Cluster', metadata: { name: 'defaults-probe' }, spec },
  })) as CnpgCluster;
  return probe.spec;
}

const rolesOnly = (name: string, roles: NonNullable<CnpgCluster['spec']['managed']>['roles']): CnpgCluster => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Cluster',
  metadata: { name, namespace },
  spec: { managed: { roles } },
});

const condition = (type: string, status: 'True' | 'False', reason: string) => ({
  type,
  status,
  reason,
  message: `${type} is ${status}`,
  lastTransitionTime: '2026-11-30T12:00:00Z',
  observedGeneration: 1,
});

describe('PostgresCluster and class ports', () => {
  it('get returns the cluster without managedFields, and undefined when it does not exist', async () => {
    const cluster = await createPostgresCluster('get-me');
    expect(cluster).toMatchObject({
      apiVersion: API_VERSION,
      kind: 'PostgresCluster',
      metadata: { name: 'get-me', namespace },
      spec: { class: 'standard' },
    });
    expect(cluster.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(cluster.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(cluster.metadata).not.toHaveProperty('managedFields');
    expect(await ports.clusters.get({ namespace, name: 'no-such-cluster' })).toBeUndefined();
    expect(await ports.clusters.get({ namespace: 'no-such-namespace', name: 'x' })).toBeUndefined();
  });

  it('classes.get reads a cluster-scoped class, and undefined when it does not exist', async () => {
    await custom().createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'postgresclusterclasses',
      body: {
        apiVersion: API_VERSION,
        kind: 'PostgresClusterClass',
        metadata: { name: 'standard' },
        spec: { provisioner: 'postgresql.cnpg.io', config: { instances: 2, storage: '1Gi' } },
      },
    });
    const cls = await ports.classes.get('standard');
    // The server applied the schema defaults.
    expect(cls?.spec).toMatchObject({ config: { instances: 2, storage: '1Gi', connectionPoolerEnabled: false } });
    expect(await ports.classes.get('no-such-class')).toBeUndefined();
  });

  it('addFinalizer/removeFinalizer write with the resourceVersion the core saw: a stale one is a conflict', async () => {
    const fresh = await createPostgresCluster('finalizers');
    await ports.clusters.addFinalizer(fresh, FINALIZER);
    const withFinalizer = await ports.clusters.get({ namespace, name: 'finalizers' });
    expect(withFinalizer?.metadata.finalizers).toEqual([FINALIZER]);

    // `fresh` is now stale: its resourceVersion is behind and it has no finalizer.
    expect((await failure(ports.clusters.addFinalizer(fresh, 'example.com/other'))).errorClass).toBe('conflict');
    const stale = {
      ...withFinalizer,
      metadata: { ...withFinalizer?.metadata, resourceVersion: fresh.metadata.resourceVersion },
    };
    expect((await failure(ports.clusters.removeFinalizer(stale as PostgresCluster, FINALIZER))).errorClass).toBe(
      'conflict',
    );
    expect((await ports.clusters.get({ namespace, name: 'finalizers' }))?.metadata.finalizers).toEqual([FINALIZER]);

    // Adding one that is already there writes nothing.
    await ports.clusters.addFinalizer(withFinalizer as PostgresCluster, FINALIZER);
    await ports.clusters.removeFinalizer(withFinalizer as PostgresCluster, FINALIZER);
    const without = await ports.clusters.get({ namespace, name: 'finalizers' });
    expect(without?.metadata.finalizers ?? []).toEqual([]);

    // A cluster that is gone needs no finalizer change.
    await custom().deleteNamespacedCustomObject({ ...clusters, namespace, name: 'finalizers' });
    await ports.clusters.removeFinalizer(withFinalizer as PostgresCluster, FINALIZER);
  });

  it('writeStatus persists the status on /status, replaces the conditions list and drops keys no longer set', async () => {
    const cluster = await createPostgresCluster('status');
    const first: PostgresClusterStatus = {
      observedGeneration: 1,
      phase: 'Provisioning',
      state: 'provisioning',
      conditions: [condition('Ready', 'False', 'Provisioning'), condition('Reconciling', 'True', 'Provisioning')],
      managedRolesStatus: { pending: ['app'], failed: { bad: 'cannot create' } },
    };
    await ports.clusters.writeStatus(cluster, first);
    const afterFirst = await ports.clusters.get({ namespace, name: 'status' });
    expect(afterFirst?.status).toEqual(first);
    // A status write is not a spec change.
    expect(afterFirst?.metadata.generation).toBe(cluster.metadata.generation);

    const second: PostgresClusterStatus = {
      observedGeneration: 1,
      phase: 'Ready',
      state: 'ready',
      conditions: [condition('Ready', 'True', 'ClusterReady')],
      managedRolesStatus: { reconciled: ['app'] },
    };
    await ports.clusters.writeStatus(afterFirst as PostgresCluster, second);
    expect((await ports.clusters.get({ namespace, name: 'status' }))?.status).toEqual(second);
    expect(
      (
        await failure(
          ports.clusters.writeStatus({ ...cluster, metadata: { ...cluster.metadata, name: 'gone' } }, second),
        )
      ).errorClass,
    ).toBe('notFound');
  });
});

describe('SecretPort', () => {
  it('creates a basic-auth Secret with a generated password, and get returns key names only', async () => {
    const owner = await createPostgresCluster('secret-owner');
    const secretRef = ref('Secret', 'secret-owner-superuser', 'v1');
    await ports.secrets.create({
      ref: secretRef,
      username: 'postgres',
      labels: childLabels('secret-owner'),
      owner: ownerReferenceTo(owner),
    });
    const stored = await core().readNamespacedSecret({ namespace, name: secretRef.name });
    const password = Buffer.from(stored.data?.password ?? '', 'base64').toString();
    expect(password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(stored.type).toBe('kubernetes.io/basic-auth');

    // kubectl apply would keep the whole object, values included, in this annotation.
    await core().patchNamespacedSecret(
      {
        namespace,
        name: secretRef.name,
        body: {
          metadata: {
            annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(stored.data) },
          },
        },
      },
      mergePatch,
    );

    const view = await ports.secrets.get(secretRef);
    expect(view).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      keys: ['password', 'username'],
      metadata: {
        name: secretRef.name,
        labels: childLabels('secret-owner'),
        ownerReferences: [ownerReferenceTo(owner)],
      },
    });
    const serialized = JSON.stringify(view);
    expect(serialized).not.toContain(password);
    expect(serialized).not.toContain(stored.data?.password);
    expect(serialized).not.toContain('last-applied-configuration');
    expect(view).not.toHaveProperty('data');
    expect(view).not.toHaveProperty('stringData');
    expect(await ports.secrets.get(ref('Secret', 'no-such-secret', 'v1'))).toBeUndefined();

    // Creating it again is a conflict (AlreadyExists), and the password is not regenerated.
    const again = await failure(
      ports.secrets.create({ ref: secretRef, username: 'postgres', labels: {}, owner: ownerReferenceTo(owner) }),
    );
    expect(again.errorClass).toBe('conflict');
    const still = await core().readNamespacedSecret({ namespace, name: secretRef.name });
    expect(still.data?.password).toBe(stored.data?.password);
  });
});

describe('CnpgClusterPort', () => {
  it('applies the cluster and the roles as two field managers that never drop each other', async () => {
    const owner = await createPostgresCluster('pg');
    const target = ref('Cluster', 'pg');
    await ports.cnpgClusters.apply(
      cnpgCluster(owner, {
        instances: 1,
        imageName: 'ghcr.io/cloudnative-pg/postgresql:17',
        storage: { size: '1Gi' },
        postgresql: { parameters: { max_connections: '100', work_mem: '4MB' } },
      }),
      'cluster',
    );
    await ports.cnpgClusters.apply(rolesOnly('pg', [{ name: 'app', ensure: 'present', login: true }]), 'managedRoles');

    const both = await ports.cnpgClusters.get(target);
    expect(both?.spec).toEqual(
      await defaultedByCnpg({
        instances: 1,
        imageName: 'ghcr.io/cloudnative-pg/postgresql:17',
        storage: { size: '1Gi' },
        postgresql: { parameters: { max_connections: '100', work_mem: '4MB' } },
        managed: { roles: [{ name: 'app', ensure: 'present', login: true }] },
      }),
    );
    // CNPG's defaulting fills in more than we wrote, but never overrides what we wrote.
    expect(both?.spec.imageName).toBe('ghcr.io/cloudnative-pg/postgresql:17');
    expect(both?.metadata.ownerReferences).toEqual([ownerReferenceTo(owner)]);
    expect(both?.metadata).not.toHaveProperty('managedFields');

    const raw = (await custom().getNamespacedCustomObject({ ...cnpgClusters, namespace, name: 'pg' })) as {
      metadata: { managedFields: { manager: string; operation: string }[] };
    };
    expect(raw.metadata.managedFields.map((f) => `${f.manager}/${f.operation}`).sort()).toEqual([
      'pgfsm-roles/Apply',
      'pgfsm/Apply',
    ]);

    // Re-applying the cluster part (without roles) keeps the roles; fields left out of it disappear.
    await ports.cnpgClusters.apply(
      cnpgCluster(owner, {
        instances: 2,
        storage: { size: '2Gi' },
        postgresql: { parameters: { max_connections: '100' } },
      }),
      'cluster',
      await ports.cnpgClusters.get(target),
    );
    const reapplied = await ports.cnpgClusters.get(target);
    expect(reapplied?.spec).toEqual(
      await defaultedByCnpg({
        instances: 2,
        storage: { size: '2Gi' },
        postgresql: { parameters: { max_connections: '100' } },
        managed: { roles: [{ name: 'app', ensure: 'present', login: true }] },
      }),
    );
    // Our image left out: CNPG's default image, not ours, is what remains.
    expect(reapplied?.spec.imageName).not.toBe('ghcr.io/cloudnative-pg/postgresql:17');
    expect(reapplied?.spec.postgresql?.parameters).not.toHaveProperty('work_mem');

    // And the roles part replaces the roles without touching the cluster fields.
    await ports.cnpgClusters.apply(
      rolesOnly('pg', [{ name: 'app', ensure: 'absent' }, { name: 'report' }]),
      'managedRoles',
    );
    expect((await ports.cnpgClusters.get(target))?.spec).toEqual(
      await defaultedByCnpg({
        ...reapplied?.spec,
        managed: { roles: [{ name: 'app', ensure: 'absent' }, { name: 'report' }] },
      }),
    );
  });

  it('repairs drift of our fields (forcing, as the controller) and leaves the status CNPG writes alone', async () => {
    const owner = await createPostgresCluster('drift');
    const target = ref('Cluster', 'drift');
    const desired = cnpgCluster(owner, { instances: 3, storage: { size: '1Gi' } });
    await ports.cnpgClusters.apply(desired, 'cluster');
    await ports.cnpgClusters.apply(rolesOnly('drift', [{ name: 'app' }]), 'managedRoles');
    // CNPG reports status on the subresource; a human edits our fields (ownership moves to them).
    await custom().patchNamespacedCustomObjectStatus(
      {
        ...cnpgClusters,
        namespace,
        name: 'drift',
        body: { status: { phase: 'Cluster in healthy state', readyInstances: 3 } },
      },
      mergePatch,
    );
    await custom().patchNamespacedCustomObject(
      {
        ...cnpgClusters,
        namespace,
        name: 'drift',
        fieldManager: 'kubectl-edit',
        body: { spec: { instances: 1, managed: { roles: [{ name: 'intruder' }] } } },
      },
      mergePatch,
    );
    await ports.cnpgClusters.apply(desired, 'cluster', await ports.cnpgClusters.get(target));
    await ports.cnpgClusters.apply(rolesOnly('drift', [{ name: 'app' }]), 'managedRoles');
    const repaired = await ports.cnpgClusters.get(target);
    expect(repaired?.spec).toEqual(
      await defaultedByCnpg({ instances: 3, storage: { size: '1Gi' }, managed: { roles: [{ name: 'app' }] } }),
    );
    expect(repaired?.status).toEqual({ phase: 'Cluster in healthy state', readyInstances: 3 });
  });

  it('does not force the roles onto a Cluster pgfsm does not control: the conflict surfaces', async () => {
    // Somebody else's CNPG Cluster, with roles of their own.
    await custom().patchNamespacedCustomObject(
      {
        ...cnpgClusters,
        namespace,
        name: 'foreign',
        fieldManager: 'someone-else',
        body: {
          apiVersion: CNPG_API_VERSION,
          kind: 'Cluster',
          metadata: { name: 'foreign' },
          spec: { instances: 1, storage: { size: '1Gi' }, managed: { roles: [{ name: 'theirs' }] } },
        },
      },
      apply,
    );
    const conflict = await failure(ports.cnpgClusters.apply(rolesOnly('foreign', [{ name: 'ours' }]), 'managedRoles'));
    expect(conflict.errorClass).toBe('conflict');
    expect(conflict.message).toContain('Cluster');
    expect((await ports.cnpgClusters.get(ref('Cluster', 'foreign')))?.spec.managed?.roles).toEqual(
      (await defaultedByCnpg({ storage: { size: '1Gi' }, managed: { roles: [{ name: 'theirs' }] } })).managed?.roles,
    );

    // Roles alone never create a Cluster.
    const missing = await failure(ports.cnpgClusters.apply(rolesOnly('absent', [{ name: 'ours' }]), 'managedRoles'));
    expect(missing.errorClass).toBe('notFound');
    expect(await ports.cnpgClusters.get(ref('Cluster', 'absent'))).toBeUndefined();
  });

  it('refuses to take over a Cluster controlled by another PostgresCluster, as a conflict', async () => {
    // Every PostgresCluster applies as the same field manager, so a forced apply alone would swap the
    // controller reference; the adapter checks the live controller first.
    const theirs = await createPostgresCluster('their-owner');
    const ours = await createPostgresCluster('taken');
    await ports.cnpgClusters.apply(cnpgCluster(theirs, { instances: 1 }), 'cluster');
    const takeover = cnpgCluster(ours, { instances: 5 });
    takeover.metadata.name = 'their-owner';
    const seen = await ports.cnpgClusters.get(ref('Cluster', 'their-owner'));
    const refused = await failure(ports.cnpgClusters.apply(takeover, 'cluster', seen));
    expect(refused.errorClass).toBe('conflict');
    expect(refused.message).toContain('controlled by PostgresCluster/their-owner');
    // Seen absent, it is created only if absent: the write itself fails.
    const unseen = await failure(ports.cnpgClusters.apply(takeover, 'cluster'));
    expect(unseen.errorClass).toBe('conflict');
    expect(unseen.message).toContain('(only if absent): HTTP 409 Conflict');
    const live = await ports.cnpgClusters.get(ref('Cluster', 'their-owner'));
    expect(live?.spec.instances).toBe(1);
    expect(live?.metadata.ownerReferences).toEqual([ownerReferenceTo(theirs)]);
  });

  it('adopts an orphaned Cluster (no controller) by forcing our fields', async () => {
    const owner = await createPostgresCluster('orphan');
    await custom().createNamespacedCustomObject({
      ...cnpgClusters,
      namespace,
      fieldManager: 'kubectl-create',
      body: {
        apiVersion: CNPG_API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'orphan' },
        spec: { instances: 7, storage: { size: '1Gi' } },
      },
    });
    const orphan = await ports.cnpgClusters.get(ref('Cluster', 'orphan'));
    await ports.cnpgClusters.apply(cnpgCluster(owner, { instances: 2 }), 'cluster', orphan);
    const adopted = await ports.cnpgClusters.get(ref('Cluster', 'orphan'));
    expect(adopted?.spec.instances).toBe(2);
    expect(adopted?.metadata.ownerReferences).toEqual([ownerReferenceTo(owner)]);
  });
});

describe('PoolerPort', () => {
  it('applies a Pooler and views it with the ready replicas of its Deployment (0 without one)', async () => {
    const owner = await createPostgresCluster('pooled');
    const pooler: Pooler = {
      apiVersion: CNPG_API_VERSION,
      kind: 'Pooler',
      metadata: { name: 'pooled-pooler-rw', namespace, ownerReferences: [ownerReferenceTo(owner)] },
      spec: { cluster: { name: 'pooled' }, type: 'rw', instances: 2, pgbouncer: { poolMode: 'transaction' } },
    };
    const poolerRef = ref('Pooler', 'pooled-pooler-rw');
    await ports.poolers.apply(pooler);
    expect(await ports.poolers.view(poolerRef)).toMatchObject({ pooler: { spec: pooler.spec }, readyReplicas: 0 });

    // What CNPG would run for it; no deployment controller runs here, so the status is whatever we write.
    const labels = { app: 'pooled-pooler-rw' };
    await apps().createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'pooled-pooler-rw', labels },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'pgbouncer', image: 'pgbouncer:1' }] } },
        },
      },
    });
    await apps().patchNamespacedDeploymentStatus(
      {
        namespace,
        name: 'pooled-pooler-rw',
        body: { status: { replicas: 2, readyReplicas: 2, availableReplicas: 2 } },
      },
      mergePatch,
    );
    const view = await ports.poolers.view(poolerRef);
    expect(view?.readyReplicas).toBe(2);
    // CNPG's real Pooler CRD defaults `pgbouncer.paused` (a schema default; CNPG has no Pooler defaulting webhook).
    expect(view?.pooler.spec).toEqual({ ...pooler.spec, pgbouncer: { ...pooler.spec.pgbouncer, paused: false } });
    expect(await ports.poolers.view(ref('Pooler', 'no-such-pooler'))).toBeUndefined();

    await ports.poolers.delete(poolerRef);
    expect(await ports.poolers.view(poolerRef)).toBeUndefined();
  });
});

describe('ConfigMapPort', () => {
  it('re-apply restores our keys after drift, keeps keys another manager added, and drops keys we no longer set', async () => {
    const owner = await createPostgresCluster('endpoints');
    const target = ref('ConfigMap', 'endpoints-endpoints', 'v1');
    const desired = configMap(owner, target.name, {
      host: 'endpoints-rw',
      port: '5432',
      poolerHost: 'endpoints-pooler-rw',
    });
    await ports.configMaps.apply(desired);
    expect((await ports.configMaps.get(target))?.data).toEqual(desired.data);

    await core().patchNamespacedConfigMap(
      {
        namespace,
        name: target.name,
        fieldManager: 'kubectl-edit',
        body: { data: { host: 'somewhere-else', extra: 'theirs' } },
      },
      mergePatch,
    );
    await ports.configMaps.apply(desired, await ports.configMaps.get(target));
    expect((await ports.configMaps.get(target))?.data).toEqual({ ...desired.data, extra: 'theirs' });

    const { poolerHost: _dropped, ...fewer } = desired.data ?? {};
    await ports.configMaps.apply({ ...desired, data: fewer }, await ports.configMaps.get(target));
    expect((await ports.configMaps.get(target))?.data).toEqual({ ...fewer, extra: 'theirs' });
  });
  it('applies conditionally on the resourceVersion the pass saw: a write in between is a conflict', async () => {
    const owner = await createPostgresCluster('raced');
    const target = ref('ConfigMap', 'raced', 'v1');
    const desired = configMap(owner, 'raced', { host: 'raced-rw' });
    await ports.configMaps.apply(desired);
    const snapshot = await ports.configMaps.get(target);
    await core().patchNamespacedConfigMap(
      { namespace, name: 'raced', fieldManager: 'someone-else', body: { data: { other: 'x' } } },
      mergePatch,
    );
    // The pass decided on the snapshot; the write comes after someone else's.
    const error = await failure(ports.configMaps.apply({ ...desired, data: { host: 'changed' } }, snapshot));
    expect(error.errorClass).toBe('conflict');
    expect((await ports.configMaps.get(target))?.data).toEqual({ host: 'raced-rw', other: 'x' });
  });
});

describe('ownership and deletion', () => {
  it('setOwner adds or replaces our reference, releaseOwner removes the one with that uid', async () => {
    const owner = await createPostgresCluster('owner');
    const other = await createPostgresCluster('other');
    const target = ref('ConfigMap', 'owned', 'v1');
    await ports.configMaps.apply(configMap(owner, 'owned', { a: '1' }));
    const secretRef = ref('Secret', 'owned-secret', 'v1');
    await ports.secrets.create({ ref: secretRef, username: 'u', labels: {}, owner: ownerReferenceTo(owner) });

    const otherRef = { ...ownerReferenceTo(other), controller: false };
    await ports.configMaps.setOwner(target, otherRef);
    expect((await ports.configMaps.get(target))?.metadata.ownerReferences).toEqual([ownerReferenceTo(owner), otherRef]);

    // Same uid again: replaced, not duplicated; and no write when nothing changes.
    await ports.configMaps.setOwner(target, { ...otherRef, blockOwnerDeletion: false });
    const before = await ports.configMaps.get(target);
    expect(before?.metadata.ownerReferences).toEqual([
      ownerReferenceTo(owner),
      { ...otherRef, blockOwnerDeletion: false },
    ]);
    await ports.configMaps.setOwner(target, { ...otherRef, blockOwnerDeletion: false });
    expect((await ports.configMaps.get(target))?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);

    await ports.configMaps.releaseOwner(target, owner.metadata.uid ?? '');
    expect((await ports.configMaps.get(target))?.metadata.ownerReferences).toEqual([
      { ...otherRef, blockOwnerDeletion: false },
    ]);
    await ports.configMaps.releaseOwner(target, other.metadata.uid ?? '');
    expect((await ports.configMaps.get(target))?.metadata.ownerReferences ?? []).toEqual([]);

    // The same through the Secret port, which patches metadata only.
    await ports.secrets.releaseOwner(secretRef, owner.metadata.uid ?? '');
    expect((await ports.secrets.get(secretRef))?.metadata.ownerReferences ?? []).toEqual([]);
    await ports.secrets.setOwner(secretRef, ownerReferenceTo(other));
    expect((await ports.secrets.get(secretRef))?.metadata.ownerReferences).toEqual([ownerReferenceTo(other)]);

    // On a missing object both are no-ops, as in memory.
    await ports.configMaps.setOwner(ref('ConfigMap', 'missing', 'v1'), ownerReferenceTo(owner));
    await ports.configMaps.releaseOwner(ref('ConfigMap', 'missing', 'v1'), owner.metadata.uid ?? '');
  });

  it('delete removes each kind, and deleting what is already gone succeeds', async () => {
    const owner = await createPostgresCluster('doomed');
    await ports.configMaps.apply(configMap(owner, 'doomed-endpoints', { a: '1' }));
    await ports.cnpgClusters.apply(cnpgCluster(owner, { instances: 1 }), 'cluster');
    const secretRef = ref('Secret', 'doomed-superuser', 'v1');
    await ports.secrets.create({ ref: secretRef, username: 'u', labels: {}, owner: ownerReferenceTo(owner) });

    for (const [port, target] of [
      [ports.configMaps, ref('ConfigMap', 'doomed-endpoints', 'v1')],
      [ports.cnpgClusters, ref('Cluster', 'doomed')],
      [ports.secrets, secretRef],
      [ports.poolers, ref('Pooler', 'doomed-pooler-rw')],
    ] as const) {
      await port.delete(target);
      expect(await port.get(target)).toBeUndefined();
      await port.delete(target);
    }
  });
});

describe('EventSink', () => {
  async function eventsFor(reason: string): Promise<EventsV1Event[]> {
    const list = await cp().kubeConfig.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
    return list.items.filter((e) => e.reason === reason);
  }

  it('creates one events.k8s.io/v1 Event and turns repeats into a series on the same object', async () => {
    const cluster = await createPostgresCluster('eventful');
    const event = {
      type: 'Normal' as const,
      reason: 'CNPGClusterCreated',
      action: 'CreateCNPGCluster',
      message: 'CNPG cluster eventful created',
    };
    await ports.events.emit(cluster, event);
    const [created, ...more] = await eventsFor('CNPGClusterCreated');
    expect(more).toEqual([]);
    expect(created).toMatchObject({
      regarding: {
        apiVersion: API_VERSION,
        kind: 'PostgresCluster',
        namespace,
        name: 'eventful',
        uid: cluster.metadata.uid,
      },
      reason: 'CNPGClusterCreated',
      action: 'CreateCNPGCluster',
      note: 'CNPG cluster eventful created',
      type: 'Normal',
      reportingController: 'pgfsm',
      reportingInstance: 'pgfsm-test',
    });
    expect(created?.series).toBeUndefined();
    // client-node leaves MicroTime as the wire string: exactly six fractional digits.
    expect(String(created?.eventTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(String(created?.eventTime)).toBe('2026-11-30T12:00:00.123000Z');

    clock.advance(60_000);
    await ports.events.emit(cluster, event);
    clock.advance(60_000);
    await ports.events.emit(cluster, event);
    const [bumped, ...none] = await eventsFor('CNPGClusterCreated');
    expect(none).toEqual([]);
    expect(bumped?.metadata?.name).toBe(created?.metadata?.name);
    expect(bumped?.series?.count).toBe(3);
    expect(String(bumped?.series?.lastObservedTime)).toBe('2026-11-30T12:02:00.123000Z');

    // Another note is another Event; a repeat after the six-minute window starts a new one.
    await ports.events.emit(cluster, { ...event, message: 'something else' });
    expect(await eventsFor('CNPGClusterCreated')).toHaveLength(2);
    clock.advance(7 * 60_000);
    await ports.events.emit(cluster, event);
    const all = await eventsFor('CNPGClusterCreated');
    expect(all).toHaveLength(3);
    expect(
      all
        .filter((e) => e.note === event.message)
        .map((e) => e.series?.count ?? 1)
        .sort(),
    ).toEqual([1, 3]);
  });

  it('throws a PortError when the Event cannot be written', async () => {
    const cluster = await createPostgresCluster('no-events');
    const elsewhere = { ...cluster, metadata: { ...cluster.metadata, namespace: 'no-such-namespace' } };
    const lost = await failure(
      ports.events.emit(elsewhere, { type: 'Warning', reason: 'X', action: 'Y', message: 'z' }),
    );
    expect(lost.errorClass).toBe('notFound');
  });
});

describe('error mapping', () => {
  it('apply into a namespace that does not exist is notFound', async () => {
    const owner = await createPostgresCluster('lost');
    const lost = configMap(owner, 'lost', { a: '1' });
    lost.metadata.namespace = 'no-such-namespace';
    const error = await failure(ports.configMaps.apply(lost));
    expect(error.errorClass).toBe('notFound');
    expect(error.message).toMatch(/^apply ConfigMap no-such-namespace\/lost \(only if absent\): HTTP 404 NotFound/);
  });

  it('a schema violation is rejected, with the field named', async () => {
    const owner = await createPostgresCluster('bad-pooler');
    const error = await failure(
      ports.poolers.apply({
        apiVersion: CNPG_API_VERSION,
        kind: 'Pooler',
        metadata: { name: 'bad-pooler', namespace, ownerReferences: [ownerReferenceTo(owner)] },
        spec: { cluster: { name: 'bad-pooler' }, type: 'bogus' as 'rw', pgbouncer: {} },
      }),
    );
    expect(error.errorClass).toBe('rejected');
    expect(error.message).toContain('spec.type');
  });

  it("a Cluster CNPG's validating webhook denies is rejected, with CNPG's own words", async () => {
    const owner = await createPostgresCluster('reserved');
    const error = await failure(
      ports.cnpgClusters.apply(
        cnpgCluster(owner, { instances: 1, managed: { roles: [{ name: 'postgres', ensure: 'present' }] } }),
        'cluster',
      ),
    );
    expect(error.errorClass).toBe('rejected');
    expect(error.message).toContain('admission webhook "vcluster.cnpg.io" denied the request');
    expect(error.message).toContain('This role is reserved for operator use');
  });

  it('a ServiceAccount without permissions is forbidden, and a Secret error repeats nothing the server said', async () => {
    await core().createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'nobody' } } });
    const token = await cp().tokenFor({ namespace, name: 'nobody' });
    const denied = kubernetesPorts(cp().kubeConfigForToken(token), { clock });
    const cluster = await createPostgresCluster('guarded');

    const calls: (() => Promise<unknown>)[] = [
      () => denied.clusters.get({ namespace, name: 'guarded' }),
      () => denied.clusters.addFinalizer(cluster, FINALIZER),
      () => denied.clusters.writeStatus(cluster, { phase: 'Ready' }),
      () => denied.classes.get('standard'),
      () => denied.configMaps.get(ref('ConfigMap', 'x', 'v1')),
      () => denied.configMaps.delete(ref('ConfigMap', 'x', 'v1')),
      () => denied.cnpgClusters.get(ref('Cluster', 'x')),
      () => denied.poolers.view(ref('Pooler', 'x')),
      () => denied.events.emit(cluster, { type: 'Normal', reason: 'R', action: 'A', message: 'm' }),
    ];
    for (const call of calls) expect((await failure(call())).errorClass).toBe('forbidden');
    const secret = await failure(denied.secrets.get(ref('Secret', 'x', 'v1')));
    expect(secret.errorClass).toBe('forbidden');
    expect(secret.message).toBe(`get Secret ${namespace}/x: HTTP 403 Forbidden`);
  });

  it('a create in a namespace being deleted is namespaceTerminating, for every child kind; reads and status writes still work', async () => {
    // A PostgresCluster holding our finalizer keeps its namespace Terminating for as long as the test needs.
    const doomed = `${namespace}-doomed`;
    await core().createNamespace({ body: { metadata: { name: doomed } } });
    await custom().createNamespacedCustomObject({
      ...clusters,
      namespace: doomed,
      body: {
        apiVersion: API_VERSION,
        kind: 'PostgresCluster',
        metadata: { name: 'last', finalizers: [FINALIZER] },
        spec: { class: 'standard' },
      },
    });
    const owner = await ports.clusters.get({ namespace: doomed, name: 'last' });
    if (!owner) throw new Error('PostgresCluster last was not created');
    await core().deleteNamespace({ name: doomed });
    const child = <T extends { metadata: { namespace?: string } }>(object: T): T => ({
      ...object,
      metadata: { ...object.metadata, namespace: doomed },
    });
    const creates: Array<[string, () => Promise<unknown>]> = [
      [
        'create Secret',
        () =>
          ports.secrets.create({
            ref: { ...ref('Secret', 'last-superuser', 'v1'), namespace: doomed },
            username: 'postgres',
            labels: childLabels('last'),
            owner: ownerReferenceTo(owner),
          }),
      ],
      ['apply ConfigMap', () => ports.configMaps.apply(child(configMap(owner, 'last-config', { a: '1' })))],
      ['apply Cluster', () => ports.cnpgClusters.apply(child(cnpgCluster(owner, { instances: 1 })), 'cluster')],
    ];
    // The admission plugin sees the namespace's phase through its informer: wait until it refuses.
    const deadline = Date.now() + 20_000;
    let first = await failure(creates[0]?.[1]() ?? Promise.resolve());
    while (first.errorClass !== 'namespaceTerminating' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      first = await failure(creates[0]?.[1]() ?? Promise.resolve());
    }
    expect(first).toEqual({
      errorClass: 'namespaceTerminating',
      message: `create Secret ${doomed}/last-superuser: HTTP 403 Forbidden`,
    });
    for (const [what, create] of creates.slice(1)) {
      const error = await failure(create());
      expect(error.errorClass, what).toBe('namespaceTerminating');
      expect(error.message, what).toContain('because it is being terminated');
    }
    // What a pass still does there works: reading and writing the status.
    const cluster = await ports.clusters.get({ namespace: doomed, name: 'last' });
    if (!cluster) throw new Error('PostgresCluster last is gone');
    await ports.clusters.writeStatus(cluster, { phase: 'Provisioning' });
    expect(await ports.configMaps.get({ ...ref('ConfigMap', 'last-config', 'v1'), namespace: doomed })).toBeUndefined();
    // Let the namespace go.
    const latest = await ports.clusters.get({ namespace: doomed, name: 'last' });
    if (latest) await ports.clusters.removeFinalizer(latest, FINALIZER);
  });

  it('maps status codes and transport failures onto error classes, without response bodies', () => {
    const api = (code: number, body: object) => new ApiException(code, 'x', JSON.stringify(body), {});
    const classOf = (error: unknown, sensitive = false) => toPortError(error, { what: 'op', sensitive }).errorClass;
    expect(classOf(api(409, { reason: 'Conflict' }))).toBe('conflict');
    expect(classOf(api(429, { reason: 'TooManyRequests' }))).toBe('tooManyRequests');
    expect(classOf(api(500, { reason: 'ServerTimeout' }))).toBe('serverTimeout');
    expect(classOf(api(504, { reason: 'Timeout' }))).toBe('serverTimeout');
    expect(classOf(api(500, { reason: 'InternalError' }))).toBe('unavailable');
    expect(classOf(api(404, { reason: 'NotFound' }))).toBe('notFound');
    expect(classOf(api(422, { reason: 'Invalid' }))).toBe('rejected');
    expect(classOf(api(400, { reason: 'BadRequest' }))).toBe('rejected');
    expect(classOf(api(403, { reason: 'Forbidden' }))).toBe('forbidden');
    // The NamespaceLifecycle refusal, by its cause, or by its message when the details are lost; not a 401 or a
    // namespace merely named in an RBAC denial.
    const terminating = 'unable to create new content in namespace ns because it is being terminated';
    const cause = { reason: 'NamespaceTerminating', message: terminating, field: 'metadata.namespace' };
    expect(classOf(api(403, { reason: 'Forbidden', details: { causes: [cause] } }), true)).toBe('namespaceTerminating');
    expect(classOf(api(403, { reason: 'Forbidden', message: `secrets "x" is forbidden: ${terminating}` }))).toBe(
      'namespaceTerminating',
    );
    expect(
      classOf(api(403, { reason: 'Forbidden', message: 'User "x" cannot create secrets in namespace "ns"' })),
    ).toBe('forbidden');
    expect(classOf(api(403, { reason: 'Forbidden', details: { causes: [null, { reason: 7 }] } }))).toBe('forbidden');
    expect(classOf(api(401, {}))).toBe('forbidden');
    expect(classOf(api(503, {}))).toBe('unavailable');
    expect(classOf(Object.assign(new Error('connect'), { code: 'ETIMEDOUT' }))).toBe('timeout');
    expect(classOf(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe('unavailable');
    expect(classOf(Object.assign(new Error('network timeout'), { name: 'FetchError', type: 'request-timeout' }))).toBe(
      'timeout',
    );
    expect(classOf(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('unavailable');

    const leaky = api(422, { reason: 'Invalid', message: 'data[password]: Invalid value: "hunter2"' });
    expect(toPortError(leaky, { what: 'create Secret a/b', sensitive: true }).message).toBe(
      'create Secret a/b: HTTP 422 Invalid',
    );
    expect(toPortError(leaky, { what: 'apply ConfigMap a/b' }).message).not.toContain('HTTP-Code');
  });
});
