/**
 * Real CloudNativePG (CNPG_VERSION) in the loop (the control plane runs it by default):
 * - its real CRDs, from its Go module: every status field the simulator writes and pgfsm reads survives them
 *   (a structural schema silently prunes unknown fields);
 * - its real admission webhooks judge every Cluster and Pooler written anywhere;
 * - its real controller, in the one namespace it watches, reconciles what pgfsm writes: the Services it creates
 *   are exactly the hosts pgfsm would publish, and the phase it reports while it waits for its first instance
 *   (no kubelet runs pods here) is read by pgfsm as provisioning.
 */
import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Service,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { observeCluster } from '../../src/operator/core/observe.ts';
import { CnpgPhase } from '../../src/operator/domain/components/cnpg-phases.ts';
import { desiredConfigMap, EndpointKey } from '../../src/operator/domain/components/configmap.ts';
import { desiredPooler, POOLER_TYPES, poolerRef, poolersServing } from '../../src/operator/domain/components/pooler.ts';
import { mergeConfig } from '../../src/operator/domain/config.ts';
import {
  CNPG_API_VERSION,
  type CnpgCluster,
  type CnpgClusterStatus,
  type KubeObject,
  POOLER_NAME_LABEL,
  type Pooler,
} from '../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../src/operator/domain/observation.ts';
import { kubernetesPorts } from '../../src/operator/kubernetes/index.ts';
import { selectedBy, WATCH_SHAPES } from '../../src/operator/kubernetes/watch-sources.ts';
import {
  CNPG_VERSION,
  type ControlPlane,
  cnpgCrdFiles,
  describeControlPlane,
  startControlPlane,
} from '../../src/tools/control-plane/index.ts';
import { readCrds } from '../../src/tools/install/manifests.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import {
  createClass,
  createCluster,
  GROUP,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  sleep,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

let cp: ControlPlane | undefined;
let world: World | undefined;
let operator: OperatorHandle | undefined;

const the = <T>(value: T | undefined, what: string): T => {
  if (value === undefined) throw new Error(`${what} is not set up (see the beforeAll error)`);
  return value;
};
const control = () => the(cp, 'the control plane');
const cnpg = () => the(control().cnpg, 'CloudNativePG');
const w = () => the(world, 'the e2e world');

/** A namespace where nobody but the test writes CNPG status. */
const UNTOUCHED = 'cnpg-status-roundtrip';

/** A namespace where the test plays CNPG's controller by hand, one status write at a time. */
const BY_HAND = 'cnpg-by-hand';
/** How long pgfsm must hold back Ready when CNPG has not reacted: far longer than a pass takes. */
const NOT_TAKEN_UP_MS = 2_000;

/** Every write the simulator sends, in order. */
const simulatorWrites: Array<{ object: StoredObject; statusOnly: boolean }> = [];

beforeAll(async () => {
  cp = await startControlPlane();
  console.log(describeControlPlane(cp));
  world = await setUpWorld(cp, { simulatorIgnores: [UNTOUCHED, BY_HAND] });
  const api = world.simulatorApi;
  const put = api.put.bind(api);
  api.put = (object, statusOnly = false) => {
    simulatorWrites.push({ object: structuredClone(object), statusOnly });
    put(object, statusOnly);
  };
  await createClass(world, 'standard');
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

const cnpgClusters = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' };
const cnpgPoolers = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'poolers' };

/** What the API server says when it refuses a write: its HTTP code and message. */
async function refusal(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    return { code: error.code, message: String((body as { message?: unknown }).message) };
  }
  throw new Error('the write was accepted');
}

describe('CloudNativePG on the local control plane', () => {
  it(`runs CloudNativePG ${CNPG_VERSION}: the binary's own version, its real CRDs, its webhooks registered`, async () => {
    expect(cnpg().version).toBe(CNPG_VERSION);
    expect(control().binaries.versions.cnpg).toBe(CNPG_VERSION);
    expect(cnpg().moduleDir.endsWith(`/github.com/cloudnative-pg/cloudnative-pg@${CNPG_VERSION}`)).toBe(true);
    expect(cnpg().crds).toEqual(expect.arrayContaining(['clusters.postgresql.cnpg.io', 'poolers.postgresql.cnpg.io']));
    // The CRD served is CNPG's own, with its full structural schema (no preserve-unknown-fields stand-in).
    const served = await control()
      .kubeConfig.makeApiClient(ApiextensionsV1Api)
      .readCustomResourceDefinition({ name: 'clusters.postgresql.cnpg.io' });
    const file = the(
      cnpgCrdFiles(cnpg().moduleDir).find((f) => f.endsWith('_clusters.yaml')),
      'the clusters CRD file',
    );
    const fromModule = readCrds([file])[0]?.spec.versions[0]?.schema?.openAPIV3Schema?.properties;
    const properties = served.spec.versions[0]?.schema?.openAPIV3Schema?.properties;
    expect(Object.keys(properties?.spec?.properties ?? {}).sort()).toEqual(
      Object.keys(fromModule?.spec?.properties ?? {}).sort(),
    );
    expect(Object.keys(properties?.status?.properties ?? {}).sort()).toEqual(
      Object.keys(fromModule?.status?.properties ?? {}).sort(),
    );
    expect(Object.keys(properties?.spec?.properties ?? {}).length).toBeGreaterThan(50);
    expect(properties?.status?.properties?.managedRolesStatus).toBeDefined();
    expect(served.spec.preserveUnknownFields ?? false).toBe(false);
    expect(properties?.spec?.x_kubernetes_preserve_unknown_fields).toBeUndefined();
  });

  it("refuses a Cluster with a reserved role name, written directly, with CNPG's own message", async () => {
    const refused = await refusal(
      w().custom.createNamespacedCustomObject({
        ...cnpgClusters,
        namespace: NS,
        body: {
          apiVersion: CNPG_API_VERSION,
          kind: 'Cluster',
          metadata: { name: 'reserved-role' },
          spec: { instances: 1, storage: { size: '1Gi' }, managed: { roles: [{ name: 'postgres' }] } },
        },
      }),
    );
    expect(refused.code).toBe(422);
    expect(refused.message).toContain('admission webhook "vcluster.cnpg.io" denied the request');
    expect(refused.message).toContain('This role is reserved for operator use');
  });

  it("defaults a plain Cluster with CNPG's own defaulting, and refuses a reserved pgbouncer parameter", async () => {
    const defaulted = (await w().custom.createNamespacedCustomObject({
      ...cnpgClusters,
      namespace: NS,
      dryRun: 'All',
      body: {
        apiVersion: CNPG_API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'plain' },
        spec: { instances: 1, storage: { size: '1Gi' } },
      },
    })) as CnpgCluster;
    expect(defaulted.spec.imageName).toMatch(/^ghcr\.io\/cloudnative-pg\/postgresql:/);
    expect(defaulted.spec.primaryUpdateMethod).toBe('restart');

    const refused = await refusal(
      w().custom.createNamespacedCustomObject({
        ...cnpgPoolers,
        namespace: NS,
        body: {
          apiVersion: CNPG_API_VERSION,
          kind: 'Pooler',
          metadata: { name: 'reserved-parameter' },
          spec: {
            cluster: { name: 'plain' },
            type: 'rw',
            instances: 1,
            pgbouncer: { poolMode: 'session', parameters: { listen_port: '6543' } },
          },
        },
      }),
    );
    expect(refused.code).toBe(422);
    expect(refused.message).toContain('vpooler.cnpg.io');
    expect(refused.message).toContain('Invalid or reserved parameter');
  });
});

describe("CNPG's real schema keeps what the simulator writes and pgfsm reads", () => {
  it('round-trips every field of the Cluster and Pooler status pgfsm reads, through the status subresource', async () => {
    // Required<…>: a field added to pgfsm's view of CNPG's status does not compile here until it is tried.
    const status = {
      phase: CnpgPhase.Healthy,
      phaseReason: 'Creating primary instance roundtrip-1',
      instances: 3,
      readyInstances: 2,
      currentPrimary: 'roundtrip-1',
      writeService: 'roundtrip-rw',
      readService: 'roundtrip-r',
      image: 'ghcr.io/cloudnative-pg/postgresql:17',
      managedRolesStatus: {
        byStatus: { reconciled: ['app'], 'pending-reconciliation': ['report'], reserved: ['postgres'] },
        cannotReconcile: { broken: ['could not create role broken: permission denied'] },
      },
      conditions: [
        {
          type: 'ContinuousArchiving',
          status: 'False',
          reason: 'ContinuousArchivingFailing',
          message: 'unexpected failure invoking barman-cloud-wal-archive: exit status 4',
          lastTransitionTime: '2026-12-01T10:00:00Z',
        },
      ],
    } satisfies Required<CnpgClusterStatus>;
    const poolerStatus = { instances: 2 } satisfies Required<NonNullable<Pooler['status']>>;

    // In a namespace where neither the simulator nor CNPG's controller writes status: only ours is there.
    await w().core.createNamespace({ body: { metadata: { name: UNTOUCHED } } });
    await w().custom.createNamespacedCustomObject({
      ...cnpgClusters,
      namespace: UNTOUCHED,
      body: {
        apiVersion: CNPG_API_VERSION,
        kind: 'Cluster',
        metadata: { name: 'roundtrip' },
        spec: { instances: 3, storage: { size: '1Gi' } },
      },
    });
    await w().custom.patchNamespacedCustomObjectStatus(
      {
        ...cnpgClusters,
        namespace: UNTOUCHED,
        name: 'roundtrip',
        body: [{ op: 'add', path: '/status', value: status }],
      },
      undefined,
    );
    const stored = (await w().custom.getNamespacedCustomObject({
      ...cnpgClusters,
      namespace: UNTOUCHED,
      name: 'roundtrip',
    })) as CnpgCluster;
    expect(stored.status).toEqual(status);

    await w().custom.createNamespacedCustomObject({
      ...cnpgPoolers,
      namespace: UNTOUCHED,
      body: {
        apiVersion: CNPG_API_VERSION,
        kind: 'Pooler',
        metadata: { name: 'roundtrip-pooler' },
        spec: { cluster: { name: 'roundtrip' }, type: 'rw', instances: 2, pgbouncer: { poolMode: 'transaction' } },
      },
    });
    await w().custom.patchNamespacedCustomObjectStatus(
      {
        ...cnpgPoolers,
        namespace: UNTOUCHED,
        name: 'roundtrip-pooler',
        body: [{ op: 'add', path: '/status', value: poolerStatus }],
      },
      undefined,
    );
    const pooler = (await w().custom.getNamespacedCustomObject({
      ...cnpgPoolers,
      namespace: UNTOUCHED,
      name: 'roundtrip-pooler',
    })) as Pooler;
    expect(pooler.status).toEqual(poolerStatus);
  });

  it('keeps every status the simulator wrote during a lifecycle with roles, a role CNPG cannot reconcile and poolers', async () => {
    await w().core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'lifecycle-app' }, stringData: { username: 'app', password: 'not-logged' } },
    });
    await createCluster(w(), 'lifecycle', {
      class: 'standard',
      connectionPoolerEnabled: true,
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'lifecycle-app' } }, { name: 'report' }],
    });
    // The whole way to Ready: phases, ready instances, reconciled roles, both poolers.
    await untilState(w(), 'lifecycle', 'Ready', 60_000);
    // Then a role CNPG cannot reconcile: `cannotReconcile` in the managed roles status.
    w().simulator.roleCannotReconcile(NS, 'lifecycle', 'report', 'could not create role report: permission denied');
    await waitFor(
      'a role CNPG cannot reconcile, reported',
      async () => {
        const cnpgCluster = (await w().custom.getNamespacedCustomObject({
          ...cnpgClusters,
          namespace: NS,
          name: 'lifecycle',
        })) as CnpgCluster;
        return cnpgCluster.status?.managedRolesStatus?.cannotReconcile?.report ? true : undefined;
      },
      60_000,
    );
    await w().simulatorApi.idle();
    expect(w().simulatorApi.failures).toEqual([]);

    // The last status the simulator wrote to each Cluster and Pooler is what the API server kept, to the field.
    const last = new Map<string, StoredObject>();
    for (const { object, statusOnly } of simulatorWrites) {
      if (statusOnly && (object.kind === 'Cluster' || object.kind === 'Pooler') && object.metadata.namespace === NS) {
        last.set(`${object.kind}/${object.metadata.name}`, object);
      }
    }
    const lifecycle = [...last.keys()].filter((k) => k.includes('/lifecycle'));
    expect(lifecycle).toEqual(
      expect.arrayContaining(['Cluster/lifecycle', 'Pooler/lifecycle-pooler-rw', 'Pooler/lifecycle-pooler-ro']),
    );
    const fieldsWritten = new Set<string>();
    for (const [key, written] of last) {
      if (!key.includes('/lifecycle')) continue;
      const stored = (await w().custom.getNamespacedCustomObject({
        ...(written.kind === 'Cluster' ? cnpgClusters : cnpgPoolers),
        namespace: NS,
        name: written.metadata.name,
      })) as StoredObject;
      expect(stored.status, key).toMatchObject(written.status as object);
      for (const field of Object.keys(written.status ?? {})) fieldsWritten.add(`${written.kind}.${field}`);
    }
    // What pgfsm reads was among what the simulator wrote (so the comparison above covered it).
    expect([...fieldsWritten].sort()).toEqual(
      expect.arrayContaining([
        'Cluster.currentPrimary',
        'Cluster.instances',
        'Cluster.managedRolesStatus',
        'Cluster.phase',
        'Cluster.readyInstances',
        'Pooler.instances',
      ]),
    );
  });
});

describe('a new image pgfsm applies, before CNPG has looked at it (CNPG played by hand)', () => {
  const name = 'byhand';
  const cnpgOf = async () =>
    (await w().custom.getNamespacedCustomObject({ ...cnpgClusters, namespace: BY_HAND, name })) as CnpgCluster;
  /** A JSON patch of the CNPG Cluster's status, as CNPG's controller writes it. */
  const writeStatus = (operations: object[]) =>
    w().custom.patchNamespacedCustomObjectStatus(
      { ...cnpgClusters, namespace: BY_HAND, name, body: operations },
      undefined,
    );

  it('is not Ready while CNPG still reports the old image healthy, and is once CNPG names the new one', async () => {
    await w().core.createNamespace({ body: { metadata: { name: BY_HAND } } });
    await w().custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: BY_HAND,
      plural: 'postgresclusters',
      body: {
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresCluster',
        metadata: { name, namespace: BY_HAND },
        spec: { class: 'standard' },
      },
    });
    const created = await waitFor('the CNPG Cluster pgfsm creates', () => cnpgOf().catch(() => undefined));
    const oldImage = the(created.spec.imageName, 'the image pgfsm asked for');
    expect(oldImage).toMatch(/:17$/);
    // CNPG's controller, once its pods run: healthy, every instance ready, on the image it has taken up.
    const healthy = {
      phase: CnpgPhase.Healthy,
      instances: 1,
      readyInstances: 1,
      currentPrimary: `${name}-1`,
      writeService: `${name}-rw`,
      readService: `${name}-r`,
      image: oldImage,
    };
    await writeStatus([{ op: 'add', path: '/status', value: healthy }]);
    await untilStateIn(BY_HAND, name, 'Ready', 60_000);

    // A new PostgreSQL version: pgfsm applies the new image, and CNPG (nobody, here) has not reacted.
    await w().custom.patchNamespacedCustomObject(
      { ...GROUP, namespace: BY_HAND, plural: 'postgresclusters', name, body: { spec: { postgresVersion: '18' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const newImage = await waitFor('the new image in the CNPG Cluster', async () => {
      const image = (await cnpgOf()).spec.imageName;
      return image !== oldImage ? image : undefined;
    });
    expect(newImage).toMatch(/:18$/);
    // The reference's premature Ready: CNPG's status is still the healthy one of the old image. pgfsm has
    // applied everything and sees no drift, but must not call that Ready (a `kubectl wait` would return).
    // Judged on a status written for the new spec: the CNPG Cluster can carry the new image a moment before pgfsm's
    // status for that spec is stored, and the Ready read then is the old spec's (1 run of 6 on 2 cores).
    await waitFor('a status written for the new spec', async () => {
      const current = await getClusterIn(BY_HAND, name);
      return current?.status?.observedGeneration === current?.metadata?.generation ? current : undefined;
    });
    const waitingSince = Date.now();
    let seen: PostgresCluster | undefined;
    while (Date.now() - waitingSince < NOT_TAKEN_UP_MS) {
      seen = await getClusterIn(BY_HAND, name);
      expect(seen?.status?.state).not.toBe('Ready');
      expect(seen?.status?.conditions?.find((c) => c.type === 'Ready')?.status).not.toBe('True');
      await sleep(50);
    }
    const clusterReady = seen?.status?.conditions?.find((c) => c.type === 'ClusterReady');
    expect(clusterReady).toMatchObject({ status: 'False', reason: 'CNPGClusterUpdating' });
    expect(clusterReady?.message).toContain(`has not taken up the image ${newImage} yet`);
    expect(clusterReady?.message).toContain(oldImage);

    // CNPG's reconcileImage names the new image: with the instances healthy on it, Ready again.
    await writeStatus([{ op: 'replace', path: '/status/image', value: newImage }]);
    await untilStateIn(BY_HAND, name, 'Ready', 60_000);
    const ready = await getClusterIn(BY_HAND, name);
    expect(ready?.status?.conditions?.find((c) => c.type === 'ClusterReady')).toMatchObject({
      status: 'True',
      reason: 'CNPGClusterHealthy',
    });
  });
});

describe("CloudNativePG's real controller on a pgfsm cluster (no kubelet: no pod ever runs)", () => {
  const name = 'real';
  const namespace = () => cnpg().watchNamespace;

  const services = async (): Promise<V1Service[]> =>
    (await w().core.listNamespacedService({ namespace: namespace() })).items;

  it('accepts what pgfsm writes, creates exactly the Services pgfsm publishes, and reads as provisioning', async () => {
    await w().custom.createNamespacedCustomObject({
      ...GROUP,
      namespace: namespace(),
      plural: 'postgresclusters',
      body: {
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresCluster',
        metadata: { name, namespace: namespace() },
        spec: { class: 'standard', connectionPoolerEnabled: true },
      },
    });

    // pgfsm writes the CNPG Cluster; CNPG's webhooks accept it and its controller starts on the primary.
    const cnpgCluster = await waitFor(
      "CNPG's phase for the first instance",
      async () => {
        const c = (await w().custom.getNamespacedCustomObject({
          ...cnpgClusters,
          namespace: namespace(),
          name,
        })) as CnpgCluster;
        return c.status?.phase === CnpgPhase.FirstPrimary ? c : undefined;
      },
      120_000,
    );
    expect(cnpgCluster.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'PostgresCluster', name });
    // Written by CNPG's controller, not the simulator (which never writes here): it names its services.
    expect(cnpgCluster.status).toMatchObject({ writeService: `${name}-rw`, readService: `${name}-r` });
    // CNPG sets the phase with the reason `Creating primary instance <name>-1`, but 1.30.1 then loses the reason
    // now and then and keeps the phase (seen on Kubernetes 1.34.4 and 1.36.3, about one run in three, for as long
    // as 120 s); pgfsm reads the phase and quotes the reason only when there is one.
    const reason = cnpgCluster.status?.phaseReason;
    if (reason !== undefined) expect(reason, JSON.stringify(cnpgCluster.status)).toMatch(/primary/i);
    // The sign pgfsm waits for after it applies a new image (domain/components/cluster.ts): CNPG names the
    // image it has taken up, here the one pgfsm wrote.
    expect(cnpgCluster.status?.image).toBe(cnpgCluster.spec.imageName);
    expect(simulatorWrites.filter((s) => s.object.metadata.namespace === namespace())).toEqual([]);

    // pgfsm's health check reads CNPG's "Setting up primary" as provisioning: waiting, neither failed nor ready.
    // CNPG's phase reaches pgfsm through the watch and a pass: wait for the status that reads it.
    await untilStateIn(namespace(), name, 'Provisioning.Cluster', 60_000);
    const pg = await waitFor(
      'the PostgresCluster reading CNPG as provisioning',
      async () => {
        const c = await getClusterIn(namespace(), name);
        const reason = c?.status?.conditions?.find((x) => x.type === 'ClusterReady')?.reason;
        return reason === 'CNPGClusterProvisioning' ? c : undefined;
      },
      60_000,
    );
    const conditions = Object.fromEntries((pg.status?.conditions ?? []).map((c) => [c.type, c]));
    expect(conditions.ClusterReady).toMatchObject({ status: 'False', reason: 'CNPGClusterProvisioning' });
    expect(conditions.ClusterReady?.message).toContain(CnpgPhase.FirstPrimary);
    expect(pg.status?.state).toBe('Provisioning.Cluster');
    expect(pg.status?.phase).not.toMatch(/Failed|Ready/);
    expect(conditions.Ready?.status).not.toBe('True');

    // pgfsm creates the Poolers as soon as the CNPG Cluster exists, so that PgBouncer starts with PostgreSQL
    // (domain/assessment.ts, poolersAhead): here too, though the cluster never gets a pod. They are the ones its
    // pure domain function builds, written under its own identity.
    const reads = kubernetesPorts(w().admin);
    const observation = await observeCluster(reads, pg);
    const merged = mergeConfig(observation);
    if (!merged.ok) throw new Error(`pgfsm cannot merge the config: ${merged.field}: ${merged.message}`);
    const poolerConfig = the(merged.config.pooler, 'the pooler config');
    for (const type of POOLER_TYPES) {
      const desired = desiredPooler(observation, poolerConfig, type);
      const written = await waitFor(
        `pgfsm's Pooler ${desired.metadata.name}`,
        async () => (await reads.poolers.get(poolerRef(observation, type))) ?? undefined,
        60_000,
      );
      expect(written.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'PostgresCluster', name });
      expect(written.spec).toMatchObject(desired.spec);
    }

    // CNPG accepts both Poolers and runs its pooler controller on them: a Deployment (never run) and a Service.
    const poolerNames = POOLER_TYPES.map((type) => desiredPooler(observation, poolerConfig, type).metadata.name);
    const apps = w().admin.makeApiClient(AppsV1Api);
    for (const poolerName of poolerNames) {
      const deployment = await waitFor(
        `CNPG's Deployment for ${poolerName}`,
        () => apps.readNamespacedDeployment({ namespace: namespace(), name: poolerName }),
        120_000,
      );
      expect(deployment.spec?.template.spec?.containers[0]?.image).toMatch(/pgbouncer/);
      expect(deployment.spec?.template.spec?.containers[0]?.image).not.toMatch(/^simulated\//);
      // The operator's Deployment watch selects by CNPG's label and keeps what a Pooler owns: this one passes both.
      const shape = WATCH_SHAPES.deployments;
      const seen = { apiVersion: 'apps/v1', kind: 'Deployment', ...deployment } as KubeObject;
      expect(deployment.metadata?.labels?.[POOLER_NAME_LABEL]).toBe(poolerName);
      expect(selectedBy(shape, seen) && shape.filter?.(seen)).toBe(true);
    }
    // And the API server sends exactly these to a watch with the operator's selector in this namespace.
    const selected = await apps.listNamespacedDeployment({
      namespace: namespace(),
      labelSelector: WATCH_SHAPES.deployments.requiredLabel,
    });
    expect(selected.items.map((d) => d.metadata?.name).sort()).toEqual([...poolerNames].sort());

    const expectedServices = [`${name}-rw`, `${name}-ro`, `${name}-r`, ...poolerNames].sort();
    const created = await waitFor(
      'the Services CNPG creates',
      async () => {
        const names = (await services()).map((s) => s.metadata?.name ?? '').sort();
        return expectedServices.every((s) => names.includes(s)) ? await services() : undefined;
      },
      120_000,
    );
    // Every one of them is CNPG's (owned by its Cluster or a Pooler), and there are no others.
    expect(created.map((s) => s.metadata?.name).sort()).toEqual(expectedServices);
    for (const service of created) {
      expect(['Cluster', 'Pooler']).toContain(service.metadata?.ownerReferences?.[0]?.kind);
    }

    // What pgfsm WOULD publish in the endpoints ConfigMap once everything serves (pods running, poolers ready):
    // its pure domain function, on the observation it reads now with the readiness pods would bring.
    const now = await observeCluster(reads, pg);
    const serving: Observation = {
      ...now,
      cnpg: {
        ...the(now.cnpg, 'the observed CNPG Cluster'),
        status: { ...now.cnpg?.status, phase: CnpgPhase.Healthy, readyInstances: 1, instances: 1 },
      },
      poolers: Object.fromEntries(
        Object.entries(now.poolers).map(([type, view]) => [
          type,
          view && { ...view, readyReplicas: view.pooler.spec.instances ?? 1 },
        ]),
      ),
    };
    expect(poolersServing(serving, merged.config)).toBe(true);
    const published = desiredConfigMap(serving, merged.config, defaultSettings).data ?? {};
    const hostKeys = [EndpointKey.rw, EndpointKey.ro, EndpointKey.r, EndpointKey.poolerRw, EndpointKey.poolerRo];
    const hosts = hostKeys.map((key) => the(published[key], `endpoint ${key}`));
    const suffix = `.${namespace()}.svc.${defaultSettings.clusterDomain}`;
    for (const host of hosts) expect(host.endsWith(suffix), host).toBe(true);
    expect(hosts.map((host) => host.slice(0, -suffix.length)).sort()).toEqual(
      created.map((s) => s.metadata?.name).sort(),
    );
  });
});

async function getClusterIn(namespace: string, name: string): Promise<PostgresCluster | undefined> {
  try {
    return (await w().custom.getNamespacedCustomObject({
      ...GROUP,
      namespace,
      plural: 'postgresclusters',
      name,
    })) as PostgresCluster;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

const untilStateIn = (namespace: string, name: string, state: string, timeoutMs: number) =>
  waitFor(
    `${namespace}/${name} in ${state}`,
    async () => ((await getClusterIn(namespace, name))?.status?.state === state ? true : undefined),
    timeoutMs,
  );
