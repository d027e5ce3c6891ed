/**
 * The restore part of `npm run bench:node` (issue 36): from creating a restored cluster to its first query that
 * sees the source's rows, through pgfsm (a PostgresCluster with `restore`) and through CloudNativePG's objects
 * applied by hand (an ObjectStore and a Cluster with `bootstrap.recovery`), both from the same archive and both
 * archiving again under a server name of their own, so that each does the same work. The source is a pgfsm
 * cluster of a class with a backup policy; the store is versitygw on the node (src/tools/node/backups.ts).
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import pg from 'pg';
import { type BackupStack, startBackupStack } from '../src/tools/node/backups.ts';
import { PLUGIN_NAME } from '../src/tools/node/barman-cloud.ts';
import { POSTGRES_REF as POSTGRES_IMAGE } from '../src/tools/node/images/recipes.ts';
import type { RealNode } from '../src/tools/node/node.ts';
import { firstAnswer } from './first-answer.ts';

const NS = 'bench-restore';
const SOURCE = 'src';
const ROWS = 10_000;
const PGFSM = { group: 'pgfsm.io', version: 'v1alpha1' };
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const BARMAN = { group: 'barmancloud.cnpg.io', version: 'v1' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RestoreBench {
  pgfsm: number[];
  cnpg: number[];
  rows: number;
  stack: BackupStack;
}

type Log = (line: string) => void;

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 600_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1_000);
  }
}

/** A PostgresCluster of the bench's backed-up class, deleted with its data when the bench deletes it. */
const createPgfsmCluster = (custom: CustomObjectsApi, name: string, spec: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({
    ...PGFSM,
    namespace: NS,
    plural: 'postgresclusters',
    body: {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresCluster',
      metadata: { name, namespace: NS },
      spec: { class: 'bench-backed', clusterDeletionPolicy: 'Delete', ...spec },
    },
  });

interface SourceStatus {
  status?: {
    state?: string;
    backup?: { serverName?: string; destinationPath?: string; lastSuccessfulBackupTime?: string };
  };
}

/** The source: a backed-up pgfsm cluster holding ROWS rows, its base backup done and the WAL after it archived. */
async function prepareSource(node: RealNode, stack: BackupStack, log: Log) {
  const custom = node.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await core.createNamespacedSecret({
    namespace: NS,
    body: {
      metadata: { name: 's3-creds' },
      stringData: {
        ACCESS_KEY_ID: stack.store.credentials.accessKeyId,
        ACCESS_SECRET_KEY: stack.store.credentials.secretAccessKey,
      },
    },
  });
  await custom.createClusterCustomObject({
    ...PGFSM,
    plural: 'postgresclusterclasses',
    body: {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresClusterClass',
      metadata: { name: 'bench-backed' },
      spec: {
        provisioner: 'postgresql.cnpg.io',
        config: { instances: 1, storage: '1Gi', postgresVersion: '18' },
        backup: {
          objectStore: {
            destinationPath: `s3://${stack.bucket}/bench`,
            endpointURL: stack.store.endpoint,
            credentials: { secretName: 's3-creds' },
          },
          schedule: '0 3 * * *',
          retention: '7d',
        },
      },
    },
  });
  await createPgfsmCluster(custom, SOURCE, {});
  const read = async () =>
    (await custom.getNamespacedCustomObject({
      ...PGFSM,
      namespace: NS,
      plural: 'postgresclusters',
      name: SOURCE,
    })) as SourceStatus;
  await until('the source Ready', async () => ((await read()).status?.state === 'Ready' ? true : undefined));
  const secret = await core.readNamespacedSecret({ namespace: NS, name: `${SOURCE}-superuser` });
  const value = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
  const port = await node.gateway.open(`${SOURCE}-rw.${NS}.svc.cluster.local`, 5432);
  // kube-proxy lags a Service's first endpoint by a moment: connect until it answers.
  const client = await until('a connection to the source', async () => {
    const c = new pg.Client({
      host: '127.0.0.1',
      port,
      user: value('username'),
      password: value('password'),
      database: 'postgres',
    });
    c.on('error', () => undefined);
    try {
      await c.connect();
      return c;
    } catch {
      await c.end().catch(() => undefined);
      return undefined;
    }
  });
  try {
    await client.query('CREATE TABLE t(id int PRIMARY KEY, payload text NOT NULL)');
    await client.query(`INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, ${ROWS}) g`);
    // The ScheduledBackup's first backup runs when it is created; the rows come after it, in the archived WAL.
    const archive = await until('a completed base backup', async () =>
      (await read()).status?.backup?.lastSuccessfulBackupTime ? (await read()).status?.backup : undefined,
    );
    const { rows } = await client.query<{ segment: string }>('SELECT pg_walfile_name(pg_current_wal_lsn()) AS segment');
    const segment = rows[0]?.segment ?? '';
    await client.query('SELECT pg_switch_wal()');
    await until(`WAL ${segment} archived`, async () => {
      const answer = await client.query<{ last: string | null }>(
        'SELECT last_archived_wal AS last FROM pg_stat_archiver',
      );
      const last = answer.rows[0]?.last ?? '';
      return last >= segment ? true : undefined;
    });
    log(
      `source ready: ${ROWS} rows after the backup of ${archive.lastSuccessfulBackupTime}, archived as ${archive.serverName}`,
    );
    return { serverName: archive.serverName ?? '', destinationPath: archive.destinationPath ?? '' };
  } finally {
    await client.end().catch(() => undefined);
  }
}

const rowsRestored = {
  sql: 'SELECT count(*)::int AS n FROM t',
  accept: (rows: Record<string, unknown>[]) => rows[0]?.n === ROWS,
};

/**
 * The states a restored PostgresCluster passes through, each with its ClusterReady reason and message, read every
 * 500 ms until `stop`: a detour on the way to Ready (a Failed step CloudNativePG or the plugin caused) is named.
 */
function watchStates(custom: CustomObjectsApi, name: string) {
  const seen: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const found = (await custom
        .getNamespacedCustomObject({ ...PGFSM, namespace: NS, plural: 'postgresclusters', name })
        .catch(() => undefined)) as
        | { status?: { state?: string; conditions?: Array<{ type: string; reason?: string; message?: string }> } }
        | undefined;
      const state = found?.status?.state;
      const ready = found?.status?.conditions?.find((c) => c.type === 'ClusterReady');
      const line = `${state} (${ready?.reason}: ${ready?.message})`;
      if (state && seen.at(-1) !== line) seen.push(line);
      await sleep(500);
    }
  })();
  return async () => {
    running = false;
    await loop;
    return seen;
  };
}

async function viaPgfsm(node: RealNode, name: string, log: Log): Promise<number> {
  const custom = node.kubeConfig.makeApiClient(CustomObjectsApi);
  const began = Date.now();
  const states = watchStates(custom, name);
  await createPgfsmCluster(custom, name, { restore: { source: { cluster: SOURCE } } });
  const seconds = await firstAnswer(
    node,
    `${name}-rw.${NS}.svc.cluster.local`,
    { namespace: NS, name: `${name}-superuser` },
    began,
    rowsRestored,
  );
  log(`${name}: ${(await states()).join(' → ')}`);
  await custom.deleteNamespacedCustomObject({ ...PGFSM, namespace: NS, plural: 'postgresclusters', name });
  return seconds;
}

/** What pgfsm writes for a restore, by hand: the source's store read-only, an own store, the Cluster. */
async function viaCnpg(
  node: RealNode,
  name: string,
  source: { serverName: string; destinationPath: string },
  stack: BackupStack,
): Promise<number> {
  const custom = node.kubeConfig.makeApiClient(CustomObjectsApi);
  const configuration = {
    destinationPath: source.destinationPath,
    endpointURL: stack.store.endpoint,
    s3Credentials: {
      accessKeyId: { name: 's3-creds', key: 'ACCESS_KEY_ID' },
      secretAccessKey: { name: 's3-creds', key: 'ACCESS_SECRET_KEY' },
    },
  };
  const sidecar = {
    env: [
      { name: 'AWS_REQUEST_CHECKSUM_CALCULATION', value: 'when_required' },
      { name: 'AWS_RESPONSE_CHECKSUM_VALIDATION', value: 'when_required' },
    ],
  };
  const began = Date.now();
  for (const store of [`${name}-origin`, `${name}-own`]) {
    await custom.createNamespacedCustomObject({
      ...BARMAN,
      namespace: NS,
      plural: 'objectstores',
      body: {
        apiVersion: 'barmancloud.cnpg.io/v1',
        kind: 'ObjectStore',
        metadata: { name: store, namespace: NS },
        spec: { configuration, instanceSidecarConfiguration: sidecar },
      },
    });
  }
  await custom.createNamespacedCustomObject({
    ...CNPG,
    namespace: NS,
    plural: 'clusters',
    body: {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name, namespace: NS },
      spec: {
        instances: 1,
        imageName: POSTGRES_IMAGE,
        imagePullPolicy: 'IfNotPresent',
        storage: { size: '1Gi' },
        enableSuperuserAccess: true,
        bootstrap: { recovery: { source: 'origin' } },
        externalClusters: [
          {
            name: 'origin',
            plugin: {
              name: PLUGIN_NAME,
              parameters: { barmanObjectName: `${name}-origin`, serverName: source.serverName },
            },
          },
        ],
        plugins: [
          {
            name: PLUGIN_NAME,
            isWALArchiver: true,
            parameters: { barmanObjectName: `${name}-own`, serverName: `${name}-${began}` },
          },
        ],
      },
    },
  });
  const seconds = await firstAnswer(
    node,
    `${name}-rw.${NS}.svc.cluster.local`,
    { namespace: NS, name: `${name}-superuser` },
    began,
    rowsRestored,
  );
  await custom.deleteNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'clusters', name });
  for (const store of [`${name}-origin`, `${name}-own`]) {
    await custom.deleteNamespacedCustomObject({ ...BARMAN, namespace: NS, plural: 'objectstores', name: store });
  }
  return seconds;
}

/** Waits until the instance Pod of a deleted cluster is gone, so that the next repetition has the node alone. */
async function untilGone(node: RealNode, name: string) {
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  await until(`${name}-1 gone`, async () => {
    const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: `cnpg.io/cluster=${name}` });
    return pods.items.length === 0 ? true : undefined;
  });
}

export async function benchRestore(node: RealNode, reps: number, log: Log): Promise<RestoreBench> {
  const stack = await startBackupStack(node, { log });
  const source = await prepareSource(node, stack, log);
  const pgfsm: number[] = [];
  const cnpg: number[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    const order = rep % 2 === 1 ? (['pgfsm', 'cnpg'] as const) : (['cnpg', 'pgfsm'] as const);
    for (const which of order) {
      const name = `r-${which}-${rep}`;
      const seconds = which === 'pgfsm' ? await viaPgfsm(node, name, log) : await viaCnpg(node, name, source, stack);
      (which === 'pgfsm' ? pgfsm : cnpg).push(seconds);
      log(`rep ${rep}: ${which} restore ${seconds.toFixed(1)}s to the first query holding the ${ROWS} rows`);
      await untilGone(node, name);
    }
  }
  return { pgfsm, cnpg, rows: ROWS, stack };
}
