/**
 * What an e2e file needs of the real node: the attached node (admin API over the gateway), the PostgresCluster
 * resources, and PostgreSQL clients that connect the way an application in the cluster would, by the names
 * pgfsm publishes, through the gateway (gateway.ts: the connection is opened inside the node's namespace, and
 * the name is resolved by the node's CoreDNS).
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import pg from 'pg';
import { inject } from 'vitest';
import type { PostgresCluster, PostgresDatabase } from '../../../src/operator/api/schema.ts';
import { attachNode, type RealNode } from '../../../src/tools/node/node.ts';
import { waitFor as waitForAnything } from '../../integration/support/e2e.ts';
import { recordResult } from './results.ts';

export const GROUP = { group: 'pgfsm.io', version: 'v1alpha1' };

/** The integration suite's wait, with the patience of real PostgreSQL (minutes, not seconds). */
export const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> =>
  waitForAnything(what, probe, timeoutMs);

export interface E2e {
  node: RealNode;
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
  close(): Promise<void>;
}

export async function attach(): Promise<E2e> {
  const { kubectl } = inject('realNode');
  const node = await attachNode({ programs: { kubectl } });
  const kc = node.kubeConfig;
  return {
    node,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    events: kc.makeApiClient(EventsV1Api),
    close: () => node.detach(),
  };
}

/**
 * A class whose clusters are small enough for one node: 1 Gi, PostgreSQL 18, the default (the images built here
 * are 18 and 17; `config` may ask for 17).
 */
export async function createClass(e2e: E2e, name: string, config: Record<string, unknown> = {}) {
  await e2e.custom.createClusterCustomObject({
    ...GROUP,
    plural: 'postgresclusterclasses',
    body: {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresClusterClass',
      metadata: { name },
      spec: {
        provisioner: 'postgresql.cnpg.io',
        config: { instances: 1, storage: '1Gi', postgresVersion: '18', ...config },
        cnpg: { primaryUpdateMethod: 'switchover', connectionPooler: { instances: 1, mode: 'transaction' } },
      },
    },
  });
}

export async function createNamespace(e2e: E2e, name: string) {
  await e2e.core.createNamespace({ body: { metadata: { name } } });
}

export async function getCluster(e2e: E2e, namespace: string, name: string): Promise<PostgresCluster | undefined> {
  try {
    return (await e2e.custom.getNamespacedCustomObject({
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

/** A CloudNativePG Cluster as the API server has it (the tests read its status, so the type is the caller's). */
export async function getCnpgCluster<T>(e2e: E2e, namespace: string, name: string): Promise<T> {
  return (await e2e.custom.getNamespacedCustomObject({
    group: 'postgresql.cnpg.io',
    version: 'v1',
    namespace,
    plural: 'clusters',
    name,
  })) as T;
}

export async function patchSpec(e2e: E2e, namespace: string, name: string, spec: Record<string, unknown>) {
  await e2e.custom.patchNamespacedCustomObject(
    { ...GROUP, namespace, plural: 'postgresclusters', name, body: { spec } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Creates a PostgresCluster of `spec` (which names its class). */
export async function createCluster(e2e: E2e, namespace: string, name: string, spec: Record<string, unknown>) {
  await e2e.custom.createNamespacedCustomObject({
    ...GROUP,
    namespace,
    plural: 'postgresclusters',
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name, namespace }, spec },
  });
}

/** Waits for Ready, and records for the summary line whether it came (support/results.ts). */
export async function untilReadyRecorded(e2e: E2e, namespace: string, name: string, label = `${namespace}/${name}`) {
  let ready = false;
  try {
    await untilState(e2e, namespace, name, 'Ready', 480_000);
    ready = true;
  } finally {
    recordResult({ cluster: label, ready });
  }
}

export const untilState = (e2e: E2e, namespace: string, name: string, state: string, timeoutMs = 300_000) =>
  waitFor(
    `${namespace}/${name} in state ${state}`,
    async () => ((await getCluster(e2e, namespace, name))?.status?.state === state ? true : undefined),
    timeoutMs,
  );

/** events.k8s.io Events about one PostgresCluster, with their series counts. */
export async function eventsAbout(e2e: E2e, namespace: string, name: string) {
  const list = await e2e.events.listNamespacedEvent({ namespace });
  return list.items
    .filter((e) => e.regarding?.name === name && e.regarding?.kind === 'PostgresCluster')
    .map((e) => ({ reason: e.reason ?? '', note: e.note ?? '', count: e.series?.count ?? 1 }));
}

export async function secretValue(e2e: E2e, namespace: string, name: string, key: string): Promise<string> {
  const secret = await e2e.core.readNamespacedSecret({ name, namespace });
  const value = secret.data?.[key];
  if (!value) throw new Error(`Secret ${namespace}/${name} has no ${key}`);
  return Buffer.from(value, 'base64').toString('utf8');
}

export async function endpoints(e2e: E2e, namespace: string, cluster: string): Promise<Record<string, string>> {
  const cm = await e2e.core.readNamespacedConfigMap({ name: `${cluster}-endpoints`, namespace });
  return cm.data ?? {};
}

export interface Login {
  host: string;
  port: number;
  user: string;
  password: string;
  database?: string;
}

/**
 * A connected client for `host:port` as the node's Pods see it. kube-proxy lags a Service's first Ready
 * endpoint by about a second, and a pooler may still be starting: connection refusals are retried.
 */
export async function connect(e2e: E2e, login: Login, timeoutMs = 120_000): Promise<pg.Client> {
  const localPort = await e2e.node.gateway.open(login.host, login.port);
  return waitFor(
    `a PostgreSQL connection to ${login.host}:${login.port} as ${login.user}`,
    async () => {
      const client = new pg.Client({
        host: '127.0.0.1',
        port: localPort,
        user: login.user,
        password: login.password,
        database: login.database ?? 'postgres',
        connectionTimeoutMillis: 5_000,
        // CloudNativePG's instances and PgBouncer offer TLS with certificates for the Service names; the
        // gateway is plain TCP to them, so TLS would need the name: plain is what this test means to check.
        ssl: false,
      });
      try {
        await client.connect();
        return client;
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
    },
    timeoutMs,
  );
}

/** `SHOW server_version` (e.g. `18.6 (Debian 18.6-3)` is cut to `18.6`), for the summary line. */
export async function serverVersion(client: pg.Client): Promise<string> {
  const [row] = await query<{ server_version: string }>(client, 'SHOW server_version');
  const version = row?.server_version.split(' ')[0];
  if (!version) throw new Error('SHOW server_version answered nothing');
  return version;
}

export async function query<T extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Client,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  return (await client.query<T>(text, values)).rows;
}

/** The one row a query must answer with. */
export async function queryOne<T extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Client,
  text: string,
  values: unknown[] = [],
): Promise<T> {
  const [row] = await query<T>(client, text, values);
  if (!row) throw new Error(`no row from: ${text}`);
  return row;
}

/** The IPs of a pooler's PgBouncer Pods (CloudNativePG labels them `cnpg.io/poolerName`). */
export async function poolerPodIps(e2e: E2e, namespace: string, pooler: string): Promise<string[]> {
  const pods = await e2e.core.listNamespacedPod({ namespace, labelSelector: `cnpg.io/poolerName=${pooler}` });
  return pods.items.map((p) => p.status?.podIP ?? '').filter(Boolean);
}

export async function createDatabase(e2e: E2e, namespace: string, name: string, spec: Record<string, unknown>) {
  await e2e.custom.createNamespacedCustomObject({
    ...GROUP,
    namespace,
    plural: 'postgresdatabases',
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresDatabase', metadata: { name, namespace }, spec },
  });
}

export async function getDatabase(e2e: E2e, namespace: string, name: string): Promise<PostgresDatabase | undefined> {
  try {
    return (await e2e.custom.getNamespacedCustomObject({
      ...GROUP,
      namespace,
      plural: 'postgresdatabases',
      name,
    })) as PostgresDatabase;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

/** Waits for a PostgresDatabase's state; a timeout says where it is and why (its conditions). */
export async function untilDatabaseState(
  e2e: E2e,
  namespace: string,
  name: string,
  state: string,
  timeoutMs = 300_000,
) {
  try {
    await waitFor(
      `PostgresDatabase ${namespace}/${name} in ${state}`,
      async () => ((await getDatabase(e2e, namespace, name))?.status?.state === state ? true : undefined),
      timeoutMs,
    );
  } catch (error) {
    const status = (await getDatabase(e2e, namespace, name))?.status;
    const why = (status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`);
    throw new Error(`${(error as Error).message}; it is in ${status?.state}: ${why.join('; ')}`);
  }
}

/**
 * A client connected with nothing but a connection string, as an application given a Secret's `uri` would
 * be: its host and port are opened through the gateway (the test runs outside the node's network), and
 * everything else — user, password, database — comes from the string as it is.
 */
export async function connectByUri(e2e: E2e, uri: string, timeoutMs = 120_000): Promise<pg.Client> {
  const url = new URL(uri);
  const localPort = await e2e.node.gateway.open(url.hostname, Number(url.port || 5432));
  const local = new URL(uri);
  local.hostname = '127.0.0.1';
  local.port = String(localPort);
  return waitFor(
    `a PostgreSQL connection to ${url.hostname}:${url.port} as ${decodeURIComponent(url.username)}`,
    async () => {
      // Plain TCP through the gateway (see `connect`): TLS would need the Service's name.
      const client = new pg.Client({ connectionString: local.toString(), ssl: false, connectionTimeoutMillis: 5_000 });
      try {
        await client.connect();
        return client;
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
    },
    timeoutMs,
  );
}
