/**
 * End-to-end support: a real control plane with our CRDs and the RBAC of deploy/rbac, and CloudNativePG's
 * real CRDs and admission webhooks (the control plane's default: every Cluster and Pooler anyone writes is
 * defaulted and validated by CNPG's own code, CNPG_VERSION); the CNPG simulator playing CNPG's controller in every
 * namespace but the one CNPG's real controller watches; and pgfsm operators started in-process with the
 * ServiceAccount token the RBAC binds, so the API server enforces the role on every call.
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { PostgresCluster, PostgresClusterSpec, PostgresDatabase } from '../../../src/operator/api/schema.ts';
import type { PrivilegesPort } from '../../../src/operator/core/database/ports.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Settings } from '../../../src/operator/domain/observation.ts';
import { createLogger } from '../../../src/operator/driver/logger.ts';
import { type RunningOperator, startOperator } from '../../../src/operator/driver/operator.ts';
import { SoleLeader } from '../../../src/operator/driver/sources.ts';
import { kubernetesDatabasePorts, kubernetesPorts } from '../../../src/operator/kubernetes/index.ts';
import { LeaseElector } from '../../../src/operator/kubernetes/leader.ts';
import { createWatchSources } from '../../../src/operator/kubernetes/watch-sources.ts';
import type { ControlPlane } from '../../../src/tools/control-plane/index.ts';
import {
  createManifests,
  installCrds,
  PGFSM_CRDS,
  RBAC_MANIFESTS,
  readManifests,
} from '../../../src/tools/install/manifests.ts';
import { RecordingPrivileges, simulatedRoles } from '../../../src/tools/memory/database-ports.ts';
import { CnpgSimulator } from '../../../src/tools/simulation/cnpg-simulator.ts';
import { KubernetesSimulatorApi } from '../../../src/tools/simulation/kubernetes-api.ts';

export const NS = 'team-a';
export const GROUP = { group: 'pgfsm.io', version: 'v1alpha1' };

/** Fast, so a whole lifecycle takes seconds. */
export const FAST_DELAYS = {
  firstPhaseMs: 100,
  primaryMs: 600,
  replicaMs: 300,
  configurationMs: 600,
  roleMs: 200,
  poolerMs: 500,
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(100);
  }
}

export interface World {
  admin: KubeConfig;
  /** The operator's identity: the pgfsm ServiceAccount, bound to deploy/rbac. */
  operatorKc: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  simulatorApi: KubernetesSimulatorApi;
  simulator: CnpgSimulator;
  stop(): Promise<void>;
}

export interface WorldOptions {
  /** Namespaces the simulator leaves alone besides CNPG's own (a test writes CNPG's status there itself). */
  simulatorIgnores?: string[];
}

export async function setUpWorld(cp: ControlPlane, options: WorldOptions = {}): Promise<World> {
  const admin = cp.kubeConfig;
  if (!cp.cnpg) throw new Error('the e2e world needs CloudNativePG (its CRDs and webhooks): startControlPlane()');
  await installCrds(admin, PGFSM_CRDS);
  await createManifests(admin, readManifests(RBAC_MANIFESTS));
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  const token = await cp.tokenFor({ namespace: 'pgfsm-system', name: 'pgfsm' });
  const operatorKc = cp.kubeConfigForToken(token);
  // CNPG's real controller acts in its own namespace; the simulator plays it everywhere else.
  const simulatorApi = new KubernetesSimulatorApi(admin, {
    ignoreNamespaces: [cp.cnpg.watchNamespace, ...(options.simulatorIgnores ?? [])],
  });
  await simulatorApi.start();
  const simulator = new CnpgSimulator(simulatorApi, { now: () => Date.now() }, FAST_DELAYS);
  const ticker = setInterval(() => simulator.advance(), 50);
  return {
    admin,
    operatorKc,
    custom: admin.makeApiClient(CustomObjectsApi),
    core,
    simulatorApi,
    simulator,
    async stop() {
      clearInterval(ticker);
      simulator.stop();
      await simulatorApi.stop();
    },
  };
}

export interface OperatorHandle extends RunningOperator {
  identity: string;
  /** Where the PostgresDatabases' grants went. */
  privileges: PrivilegesPort;
}

export async function runOperator(
  world: World,
  options: {
    identity?: string;
    leaderElect?: boolean;
    settings?: Partial<Settings>;
    /**
     * Where PostgresDatabases' grants go. This world has no PostgreSQL (CNPG's controller is simulated), so by
     * default a stand-in records them; the e2e suite on the real node grants on a real PostgreSQL.
     */
    privileges?: PrivilegesPort;
  } = {},
): Promise<OperatorHandle> {
  const identity = options.identity ?? `pgfsm-${Math.random().toString(36).slice(2, 8)}`;
  const kc = world.operatorKc;
  const leadership = options.leaderElect
    ? new LeaseElector(kc, {
        namespace: 'pgfsm-system',
        name: 'pgfsm-leader',
        identity,
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 300,
      })
    : new SoleLeader(identity);
  const ports = kubernetesPorts(kc, { reportingInstance: identity });
  // The roles the simulated PostgreSQL has are those the simulator's CNPG has not dropped (as it reports them).
  const simulatedPostgres = (cluster: { namespace: string; name: string }, names: string[]) =>
    simulatedRoles(world.simulatorApi.get<CnpgCluster>({ kind: 'Cluster', ...cluster }), names);
  const privileges = options.privileges ?? new RecordingPrivileges(simulatedPostgres);
  const operator = await startOperator({
    sources: createWatchSources(kc),
    ports,
    databasePorts: kubernetesDatabasePorts(kc, ports, { privileges }),
    settings: { ...defaultSettings, requeueDelayMs: 2_000, ...options.settings },
    leadership,
    workers: 2,
    metricsAddress: '127.0.0.1:0',
    logger: createLogger({ level: 'warn' }),
  });
  return Object.assign(operator, { identity, privileges });
}

export const classObject = (name: string, config: Record<string, unknown> = {}) => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresClusterClass',
  metadata: { name },
  spec: {
    provisioner: 'postgresql.cnpg.io',
    config: { instances: 1, storage: '1Gi', postgresVersion: '17', ...config },
    cnpg: { connectionPooler: { instances: 2, mode: 'transaction' } },
  },
});

export async function createClass(world: World, name: string, config: Record<string, unknown> = {}) {
  await world.custom.createClusterCustomObject({
    ...GROUP,
    plural: 'postgresclusterclasses',
    body: classObject(name, config),
  });
}

export async function createCluster(
  world: World,
  name: string,
  spec: Partial<PostgresClusterSpec> & { class: string },
) {
  await world.custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: NS,
    plural: 'postgresclusters',
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name, namespace: NS }, spec },
  });
}

export async function getCluster(world: World, name: string): Promise<PostgresCluster | undefined> {
  try {
    return (await world.custom.getNamespacedCustomObject({
      ...GROUP,
      namespace: NS,
      plural: 'postgresclusters',
      name,
    })) as PostgresCluster;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

export async function patchSpec(world: World, name: string, spec: Partial<PostgresClusterSpec>) {
  await world.custom.patchNamespacedCustomObject(
    { ...GROUP, namespace: NS, plural: 'postgresclusters', name, body: { spec } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

export async function patchClass(world: World, name: string, body: object) {
  await world.custom.patchClusterCustomObject(
    { ...GROUP, plural: 'postgresclusterclasses', name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

export const stateOf = async (world: World, name: string) => (await getCluster(world, name))?.status?.state;

export const untilState = (world: World, name: string, state: string, timeoutMs = 30_000) =>
  waitFor(`${name} in ${state}`, async () => ((await stateOf(world, name)) === state ? true : undefined), timeoutMs);

export async function conditions(world: World, name: string) {
  const cluster = await getCluster(world, name);
  return Object.fromEntries((cluster?.status?.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));
}

/** events.k8s.io Events about one PostgresCluster, with their series counts. */
export async function eventsAbout(world: World, name: string, kind = 'PostgresCluster') {
  const api = world.admin.makeApiClient(EventsV1Api);
  const list = await api.listNamespacedEvent({ namespace: NS });
  return list.items
    .filter((e) => e.regarding?.name === name && e.regarding?.kind === kind)
    .map((e) => ({
      reason: e.reason ?? '',
      type: e.type ?? '',
      note: e.note ?? '',
      count: e.series?.count ?? 1,
      reportingInstance: e.reportingInstance ?? '',
      uid: e.regarding?.uid ?? '',
    }));
}

export const countOf = (events: Array<{ reason: string; count: number }>, reason: string) =>
  events.filter((e) => e.reason === reason).reduce((n, e) => n + e.count, 0);

export async function createDatabase(world: World, name: string, spec: Record<string, unknown>) {
  await world.custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: NS,
    plural: 'postgresdatabases',
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresDatabase', metadata: { name, namespace: NS }, spec },
  });
}

export async function getDatabase(world: World, name: string): Promise<PostgresDatabase | undefined> {
  try {
    return (await world.custom.getNamespacedCustomObject({
      ...GROUP,
      namespace: NS,
      plural: 'postgresdatabases',
      name,
    })) as PostgresDatabase;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

/** Waits for a state; on a timeout, the error says where the database is and why (its conditions). */
export async function untilDatabaseState(world: World, name: string, state: string, timeoutMs = 30_000) {
  try {
    await waitFor(
      `PostgresDatabase ${name} in ${state}`,
      async () => ((await getDatabase(world, name))?.status?.state === state ? true : undefined),
      timeoutMs,
    );
  } catch (error) {
    const status = (await getDatabase(world, name))?.status;
    const why = (status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`);
    throw new Error(`${(error as Error).message}; it is in ${status?.state}: ${why.join('; ')}`);
  }
}

/** A Secret's values, decoded: for the test's own checks (the operator never reads them back). */
export async function secretValues(world: World, name: string): Promise<Record<string, string> | undefined> {
  try {
    const secret = await world.core.readNamespacedSecret({ name, namespace: NS });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}
