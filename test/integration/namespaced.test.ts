/**
 * The namespaced install mode against a real API server: the RBAC of deploy/overlays/namespaced/ (Roles
 * in team-a and team-b only, and a ClusterRole that reads the classes), rendered as `kubectl apply -k`
 * would and installed as is; the operator runs with that ServiceAccount's token and watches
 * team-a,team-b (one informer per kind and namespace). Clusters in both namespaces go through their
 * lifecycle (pooler, managed role, deletion with Delete), a cluster in team-c is never touched, and the
 * token cannot read a Secret outside the watched namespaces.
 */
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresClusterSpec } from '../../src/operator/api/schema.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { createLogger } from '../../src/operator/driver/logger.ts';
import { type RunningOperator, startOperator } from '../../src/operator/driver/operator.ts';
import { SoleLeader } from '../../src/operator/driver/sources.ts';
import { kubernetesPorts } from '../../src/operator/kubernetes/index.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { type ControlPlane, describeControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  createManifests,
  installCrds,
  NAMESPACED_OVERLAY,
  PGFSM_CRDS,
  rbacOf,
} from '../../src/tools/install/manifests.ts';
import { CnpgSimulator } from '../../src/tools/simulation/cnpg-simulator.ts';
import { KubernetesSimulatorApi } from '../../src/tools/simulation/kubernetes-api.ts';
import { classObject, FAST_DELAYS, GROUP, sleep, waitFor } from './support/e2e.ts';

/** The namespaces the overlay grants and tells the operator to watch, and one it leaves out. */
const WATCHED = ['team-a', 'team-b'];
const UNWATCHED = 'team-c';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let cp: ControlPlane;
let admin: KubeConfig;
let operatorKc: KubeConfig;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let simulatorApi: KubernetesSimulatorApi | undefined;
let simulator: CnpgSimulator | undefined;
let ticker: ReturnType<typeof setInterval> | undefined;
let operator: RunningOperator | undefined;

const clusters = { group: GROUP.group, version: GROUP.version, plural: 'postgresclusters' };

async function getCluster(namespace: string, name: string): Promise<PostgresCluster | undefined> {
  try {
    return (await custom.getNamespacedCustomObject({ ...clusters, namespace, name })) as PostgresCluster;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

const createCluster = (namespace: string, name: string, spec: Partial<PostgresClusterSpec> & { class: string }) =>
  custom.createNamespacedCustomObject({
    ...clusters,
    namespace,
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name, namespace }, spec },
  });

const untilState = (namespace: string, name: string, state: string) =>
  waitFor(`${namespace}/${name} in ${state}`, async () =>
    (await getCluster(namespace, name))?.status?.state === state ? true : undefined,
  );

/** The HTTP status of a request, 200 when it succeeds. */
const statusOf = (request: () => Promise<unknown>) =>
  request().then(
    () => 200,
    (error: { code?: number }) => error.code ?? 0,
  );

async function allowed(kc: KubeConfig, attributes: { namespace?: string; verb: string; resource: string }) {
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: { group: '', ...attributes } } },
  });
  return review.status?.allowed ?? false;
}

beforeAll(async () => {
  cp = await startControlPlane();
  console.log(describeControlPlane(cp));
  if (!cp.cnpg) throw new Error('this test needs CloudNativePG (its CRDs and webhooks): startControlPlane()');
  admin = cp.kubeConfig;
  custom = admin.makeApiClient(CustomObjectsApi);
  core = admin.makeApiClient(CoreV1Api);
  await installCrds(admin, PGFSM_CRDS);
  // The overlay's Roles live in the watched namespaces, which must exist first (as for kubectl apply -k).
  for (const name of [...WATCHED, UNWATCHED]) await core.createNamespace({ body: { metadata: { name } } });
  await createManifests(admin, rbacOf(NAMESPACED_OVERLAY));
  operatorKc = cp.kubeConfigForToken(await cp.tokenFor({ namespace: 'pgfsm-system', name: 'pgfsm' }));

  // CNPG's real controller acts in its own namespace; the simulator plays it everywhere else.
  simulatorApi = new KubernetesSimulatorApi(admin, { ignoreNamespaces: [cp.cnpg.watchNamespace] });
  await simulatorApi.start();
  const sim = new CnpgSimulator(simulatorApi, { now: () => Date.now() }, FAST_DELAYS);
  simulator = sim;
  ticker = setInterval(() => sim.advance(), 50);

  await custom.createClusterCustomObject({ ...GROUP, plural: 'postgresclusterclasses', body: classObject('standard') });
  for (const namespace of [...WATCHED, UNWATCHED]) {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'app-password' }, stringData: { username: 'app', password: `${namespace}-value` } },
    });
  }
  // Created before the operator starts, so it has had every chance to touch it by the end.
  await createCluster(UNWATCHED, 'outside', { class: 'standard' });

  operator = await startOperator({
    sources: createWatchSources(operatorKc, { namespaces: WATCHED }),
    // As `pgfsm run --namespace` builds them: the class protection's re-check lists clusters in these only.
    ports: kubernetesPorts(operatorKc, { reportingInstance: 'pgfsm-namespaced', namespaces: WATCHED }),
    settings: { ...defaultSettings, requeueDelayMs: 2_000 },
    leadership: new SoleLeader('pgfsm-namespaced'),
    workers: 2,
    metricsAddress: '127.0.0.1:0',
    logger: createLogger({ level: 'warn' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  clearInterval(ticker);
  simulator?.stop();
  await simulatorApi?.stop();
  await cp?.stop();
});

describe('pgfsm watching team-a,team-b with the namespaced overlay RBAC', () => {
  it('takes a cluster in each watched namespace to Ready, pooler and managed role included', async () => {
    for (const namespace of WATCHED) {
      await createCluster(namespace, 'orders', {
        class: 'standard',
        connectionPoolerEnabled: true,
        managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
      });
    }
    for (const namespace of WATCHED) await untilState(namespace, 'orders', 'Ready');
    for (const namespace of WATCHED) {
      const cluster = await getCluster(namespace, 'orders');
      expect(cluster?.metadata.finalizers, namespace).toContain('pgfsm.io/finalizer');
      const ready = cluster?.status?.conditions?.find((c) => c.type === 'Ready');
      expect(ready?.status, namespace).toBe('True');
      const configMap = await core.readNamespacedConfigMap({ name: 'orders-endpoints', namespace });
      expect(configMap.data?.CLUSTER_POOLER_RW_ENDPOINT).toBe(`orders-pooler-rw.${namespace}.svc.cluster.local`);
    }
    // The class they use is protected: the cut-down ClusterRole grants its finalizer (patch).
    await waitFor('the class protected', async () => {
      const cls = (await custom.getClusterCustomObject({
        ...GROUP,
        plural: 'postgresclusterclasses',
        name: 'standard',
      })) as {
        metadata: { finalizers?: string[] };
      };
      return cls.metadata.finalizers?.includes('pgfsm.io/class-in-use') ? true : undefined;
    });
  });

  it('deletes a cluster with Delete in a watched namespace: every child goes, then the object', async () => {
    const namespace = 'team-b';
    await custom.patchNamespacedCustomObject(
      { ...clusters, namespace, name: 'orders', body: { spec: { clusterDeletionPolicy: 'Delete' } } },
      mergePatch,
    );
    await sleep(500);
    await custom.deleteNamespacedCustomObject({ ...clusters, namespace, name: 'orders' });
    await waitFor('team-b/orders gone', async () => ((await getCluster(namespace, 'orders')) ? undefined : true));
    const gone = async (read: () => Promise<unknown>) => (await statusOf(read)) === 404;
    expect(await gone(() => core.readNamespacedSecret({ name: 'orders-superuser', namespace }))).toBe(true);
    expect(await gone(() => core.readNamespacedConfigMap({ name: 'orders-endpoints', namespace }))).toBe(true);
    expect(
      await gone(() =>
        custom.getNamespacedCustomObject({
          group: 'postgresql.cnpg.io',
          version: 'v1',
          namespace,
          plural: 'clusters',
          name: 'orders',
        }),
      ),
    ).toBe(true);
    // The other namespace's cluster is untouched by it.
    expect((await getCluster('team-a', 'orders'))?.status?.state).toBe('Ready');
  });

  it('never touches a cluster in a namespace it does not watch', async () => {
    const outside = await getCluster(UNWATCHED, 'outside');
    expect(outside?.metadata.finalizers ?? []).toEqual([]);
    expect(outside?.status).toBeUndefined();
    expect(await statusOf(() => core.readNamespacedSecret({ name: 'outside-superuser', namespace: UNWATCHED }))).toBe(
      404,
    );
    const events = await core.listNamespacedEvent({ namespace: UNWATCHED });
    expect(events.items.filter((e) => e.involvedObject.kind === 'PostgresCluster')).toEqual([]);
  });

  it('holds a token that cannot read Secrets outside the watched namespaces', async () => {
    const operatorCore = operatorKc.makeApiClient(CoreV1Api);
    // The same request succeeds where the Role grants it: the 403s below are the RBAC, not a broken token.
    expect(await statusOf(() => operatorCore.readNamespacedSecret({ name: 'app-password', namespace: 'team-a' }))).toBe(
      200,
    );
    expect(await allowed(operatorKc, { namespace: 'team-a', verb: 'get', resource: 'secrets' })).toBe(true);
    for (const namespace of [UNWATCHED, 'kube-system', 'pgfsm-system', 'default']) {
      expect(await allowed(operatorKc, { namespace, verb: 'get', resource: 'secrets' }), namespace).toBe(false);
      expect(await allowed(operatorKc, { namespace, verb: 'list', resource: 'secrets' }), namespace).toBe(false);
    }
    expect(
      await statusOf(() => operatorCore.readNamespacedSecret({ name: 'app-password', namespace: UNWATCHED })),
    ).toBe(403);
    expect(await statusOf(() => operatorCore.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
    expect(await statusOf(() => operatorCore.listSecretForAllNamespaces())).toBe(403);
    // Nor any PostgresCluster or ConfigMap there, nor anything cluster-wide but the classes.
    expect(await allowed(operatorKc, { namespace: UNWATCHED, verb: 'list', resource: 'configmaps' })).toBe(false);
    expect(
      await statusOf(() => operatorKc.makeApiClient(CustomObjectsApi).listClusterCustomObject({ ...clusters })),
    ).toBe(403);
    expect(
      await statusOf(() =>
        operatorKc
          .makeApiClient(CustomObjectsApi)
          .listClusterCustomObject({ ...GROUP, plural: 'postgresclusterclasses' }),
      ),
    ).toBe(200);
  });
});
