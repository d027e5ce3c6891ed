/**
 * Issue 36's baseline: continuous backup and a point-in-time restore on the real node with CloudNativePG's own
 * objects applied by hand (no pgfsm resource), through the Barman Cloud Plugin into versitygw, the node's S3 store
 * (src/tools/node/backups.ts installs both). What pgfsm's own backups will be compared with.
 *
 *   1. a Cluster `src` that archives its WAL with the plugin (an ObjectStore with the two `when_required` checksum
 *      variables, which S3 stores other than AWS need with boto3 ≥ 1.36);
 *   2. rows A; a WAL switch, then pg_stat_archiver until that segment is archived (never a guess at a delay);
 *   3. a Backup (method plugin) to `completed`; rows B; T read from the server's clock, a second apart from
 *      either side; rows C; their WAL archived;
 *   4. a new Cluster `dst` bootstrapped by recovery from the store (the source's serverName) to targetTime T: it
 *      must hold exactly A and B, no C;
 *   5. a ScheduledBackup whose six-field cron fires at the next minute makes a completed Backup.
 *
 * Its line, `backups by hand: …`, gives the time from applying `dst` to its first answered query.
 */
import { BatchV1Api, type V1Pod } from '@kubernetes/client-node';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type BackupStack, startBackupStack } from '../../../src/tools/node/backups.ts';
import { PLUGIN_NAME } from '../../../src/tools/node/barman-cloud.ts';
import { NETNS_PATH, NODE_IP } from '../../../src/tools/node/layout.ts';
import { command, routesOutOf } from '../../../src/tools/node/netns.ts';
import { listKeys, S3_PORT } from '../../../src/tools/node/s3-store.ts';
import {
  archiveCurrentWal,
  type BackupObject,
  batchCounts,
  createRowsTable,
  createStoreSecret,
  insertBatch,
  removeBackupPlugin,
  secondsSince,
  serverNow,
  until,
  untilBackupCompleted,
} from '../support/backups.ts';
import { attach, connect, createNamespace, type E2e, queryOne, secretValue, serverVersion } from '../support/node.ts';
import { recordLine, recordResult } from '../support/results.ts';

const NS = 'backups-by-hand';
const SOURCE = 'src';
const RESTORED = 'dst';
const STORE = 'src-store';
const PREFIX = 'by-hand';
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const BARMAN = { group: 'barmancloud.cnpg.io', version: 'v1' };
const ROWS = { A: 100, B: 50, C: 20 };

const log = (line: string) => process.stderr.write(`[backups by hand] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface CnpgCluster {
  status?: {
    phase?: string;
    readyInstances?: number;
    conditions?: Condition[];
    pluginStatus?: Array<{ name: string; version?: string; capabilities?: string[] }>;
  };
}
let e2e: E2e;
let stack: BackupStack;
let source: pg.Client;
const clients: pg.Client[] = [];
const said: Record<string, string> = {};
let targetTime = '';

const getObject = async <T>(api: { group: string; version: string }, plural: string, name: string) =>
  (await e2e.custom.getNamespacedCustomObject({ ...api, namespace: NS, plural, name })) as T;

const create = (api: { group: string; version: string }, plural: string, body: Record<string, unknown>) =>
  e2e.custom.createNamespacedCustomObject({ ...api, namespace: NS, plural, body });

const cluster = (name: string) => getObject<CnpgCluster>(CNPG, 'clusters', name);

function clusterBody(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Cluster',
    metadata: { name, namespace: NS },
    spec: {
      instances: 1,
      imageName: inject('realNode').postgresImage,
      // The sidecar inherits it: the plugin's image exists only in the node's store.
      imagePullPolicy: 'IfNotPresent',
      storage: { size: '1Gi' },
      enableSuperuserAccess: true,
      smartShutdownTimeout: 5,
      ...spec,
    },
  };
}

async function untilHealthy(name: string, timeoutMs = 480_000) {
  await until(
    `CNPG Cluster ${NS}/${name} healthy`,
    async () => {
      const status = (await cluster(name)).status;
      const phase = status?.phase ?? '';
      if (phase.includes('unknown plugin') || phase.includes('error while interacting with plugins')) {
        return { failure: `${name}: ${phase}` };
      }
      return phase === 'Cluster in healthy state' && status?.readyInstances === 1 ? {} : undefined;
    },
    timeoutMs,
  );
}

async function superuserClient(name: string, timeoutMs?: number): Promise<pg.Client> {
  const client = await connect(
    e2e,
    {
      host: `${name}-rw.${NS}.svc.cluster.local`,
      port: 5432,
      user: await secretValue(e2e, NS, `${name}-superuser`, 'username'),
      password: await secretValue(e2e, NS, `${name}-superuser`, 'password'),
    },
    timeoutMs,
  );
  // A server that restarts ends its sessions with an error event: expected here (see the restore), not a crash.
  client.on('error', (error) => log(`${name}: connection ended: ${error.message}`));
  clients.push(client);
  return client;
}

const hasPluginSidecar = (pod: V1Pod) =>
  pod.spec?.initContainers?.some((c) => c.name === 'plugin-barman-cloud') ?? false;

describe('backups by hand: Barman Cloud Plugin, versitygw and a point-in-time restore (issue 36)', () => {
  beforeAll(async () => {
    e2e = await attach();
    stack = await startBackupStack(e2e.node, { log });
    await createNamespace(e2e, NS);
    await createStoreSecret(e2e, NS, stack);
    // The store before the Cluster: the plugin reads it while CloudNativePG builds the instance Pod.
    await create(BARMAN, 'objectstores', {
      apiVersion: 'barmancloud.cnpg.io/v1',
      kind: 'ObjectStore',
      metadata: { name: STORE, namespace: NS },
      spec: {
        configuration: {
          destinationPath: `s3://${stack.bucket}/${PREFIX}/`,
          endpointURL: stack.store.endpoint,
          s3Credentials: {
            accessKeyId: { name: 's3-creds', key: 'ACCESS_KEY_ID' },
            secretAccessKey: { name: 's3-creds', key: 'ACCESS_SECRET_KEY' },
          },
          wal: { compression: 'gzip' },
          // gzip: the image's barman 3.13 has no lz4 module; an immediate checkpoint keeps the backup to seconds.
          data: { compression: 'gzip', immediateCheckpoint: true, jobs: 2 },
        },
        instanceSidecarConfiguration: {
          env: [
            { name: 'AWS_REQUEST_CHECKSUM_CALCULATION', value: 'when_required' },
            { name: 'AWS_RESPONSE_CHECKSUM_VALIDATION', value: 'when_required' },
          ],
        },
      },
    });
    const applied = Date.now();
    await create(
      CNPG,
      'clusters',
      clusterBody(SOURCE, {
        plugins: [{ name: PLUGIN_NAME, isWALArchiver: true, parameters: { barmanObjectName: STORE } }],
      }),
    );
    await untilHealthy(SOURCE);
    said.sourceHealthy = `${secondsSince(applied)}s`;
    source = await superuserClient(SOURCE);
    recordResult({ cluster: `${NS}/${SOURCE} (CNPG only)`, ready: true, serverVersion: await serverVersion(source) });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    log(`observed: ${JSON.stringify({ ...said, timings: stack?.timings })}`);
    // Leave the node as the other files expect it: no Cluster of ours running, no plugin registered.
    for (const name of [RESTORED, SOURCE]) {
      await e2e?.custom
        .deleteNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'clusters', name })
        .catch(() => undefined);
    }
    if (e2e) await removeBackupPlugin(e2e);
    await e2e?.close();
  });

  it('runs the plugin as a native sidecar of the instance and CloudNativePG lists it', async () => {
    const pod = await e2e.core.readNamespacedPod({ name: `${SOURCE}-1`, namespace: NS });
    const sidecar = pod.spec?.initContainers?.find((c) => c.name === 'plugin-barman-cloud');
    expect(sidecar?.restartPolicy).toBe('Always');
    expect(sidecar?.image).toBe(stack.pluginImage);
    const started = pod.status?.initContainerStatuses?.find((c) => c.name === 'plugin-barman-cloud');
    expect(started?.started).toBe(true);
    const plugins = (await cluster(SOURCE)).status?.pluginStatus ?? [];
    expect(plugins.map((p) => p.name)).toContain(PLUGIN_NAME);
    said.pluginVersion = plugins.find((p) => p.name === PLUGIN_NAME)?.version ?? '?';
  });

  it('archives WAL: the segment holding rows A is in pg_stat_archiver and ContinuousArchiving is True', async () => {
    await createRowsTable(source);
    await insertBatch(source, 'A', 1, ROWS.A);
    const archived = await archiveCurrentWal(source);
    said.firstArchive = `${archived.segment} in ${archived.seconds}s`;
    await until('ContinuousArchiving=True on src', async () => {
      const condition = (await cluster(SOURCE)).status?.conditions?.find((c) => c.type === 'ContinuousArchiving');
      if (condition?.status === 'False') return { failure: `ContinuousArchiving False: ${condition.message}` };
      return condition?.status === 'True' ? {} : undefined;
    });
    // In the node's store, under the source's server name.
    const keys = await listKeys(stack.store, stack.bucket, `${PREFIX}/${SOURCE}/wals/`);
    expect(keys.some((k) => k.includes(archived.segment))).toBe(true);
  });

  it('takes a base backup with method plugin to completed', async () => {
    const created = Date.now();
    await create(CNPG, 'backups', {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Backup',
      metadata: { name: `${SOURCE}-b1`, namespace: NS },
      spec: { cluster: { name: SOURCE }, method: 'plugin', pluginConfiguration: { name: PLUGIN_NAME } },
    });
    const backup = await untilBackupCompleted(e2e, NS, `${SOURCE}-b1`);
    said.backupSeconds = String(secondsSince(created));
    said.backupId = backup.status?.backupId ?? '?';
    said.backupStoppedAt = backup.status?.stoppedAt ?? '?';
    expect(backup.status?.backupId).toBeTruthy();
  });

  it('writes rows B, takes T from the server clock, writes rows C and archives their WAL', async () => {
    await insertBatch(source, 'B', ROWS.A + 1, ROWS.B);
    await sleep(1_100);
    targetTime = await serverNow(source);
    // barman picks the newest backup that ended at or before T: this one must qualify.
    expect(Date.parse(targetTime)).toBeGreaterThan(Date.parse(said.backupStoppedAt ?? ''));
    await sleep(1_100);
    await insertBatch(source, 'C', ROWS.A + ROWS.B + 1, ROWS.C);
    const archived = await archiveCurrentWal(source);
    said.secondArchive = `${archived.segment} in ${archived.seconds}s`;
  });

  it('restores a new Cluster to T from the store: rows A and B, no C', async () => {
    const applied = Date.now();
    await create(
      CNPG,
      'clusters',
      clusterBody(RESTORED, {
        bootstrap: { recovery: { source: 'origin', recoveryTarget: { targetTime } } },
        externalClusters: [
          // serverName: the source's, or the plugin looks under the new Cluster's name and finds no backup.
          {
            name: 'origin',
            plugin: { name: PLUGIN_NAME, parameters: { barmanObjectName: STORE, serverName: SOURCE } },
          },
        ],
      }),
    );
    await until(
      `Job ${RESTORED}-1-full-recovery completed`,
      async () => {
        const batch = e2e.node.kubeConfig.makeApiClient(BatchV1Api);
        const job = await batch
          .readNamespacedJob({ name: `${RESTORED}-1-full-recovery`, namespace: NS })
          .catch(() => undefined);
        if ((job?.status?.failed ?? 0) >= 2) return { failure: `the recovery Job failed ${job?.status?.failed} times` };
        return (job?.status?.succeeded ?? 0) >= 1 ? {} : undefined;
      },
      600_000,
    );
    said.recoveryJobSeconds = String(secondsSince(applied));
    // The first instance answers as soon as recovery is done; it still carries the plugin's sidecar, which the
    // plugin injects only until the Cluster has a current primary (to run the restore), so CloudNativePG then
    // restarts it without: a client connected now is cut off once (SQLSTATE 57P01).
    const first = await superuserClient(RESTORED, 480_000);
    const firstCounts = await batchCounts(first);
    said.firstQueryMs = String(Date.now() - applied);
    const firstPod = await e2e.core.readNamespacedPod({ name: `${RESTORED}-1`, namespace: NS });
    said.firstPodHadSidecar = String(hasPluginSidecar(firstPod));
    await until(`${RESTORED}-1 Ready without the plugin's sidecar`, async () => {
      const pod = await e2e.core.readNamespacedPod({ name: `${RESTORED}-1`, namespace: NS }).catch(() => undefined);
      const ready = pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      return pod && ready && !hasPluginSidecar(pod) ? {} : undefined;
    });
    await untilHealthy(RESTORED);
    said.readySeconds = String(secondsSince(applied));
    const restored = await superuserClient(RESTORED, 480_000);
    const counts = await batchCounts(restored);
    said.stableQueryMs = String(Date.now() - applied);
    said.rows = `${counts.reduce((sum, c) => sum + c.n, 0)}/${ROWS.A + ROWS.B}`;
    const expected = [
      { batch: 'A', n: ROWS.A },
      { batch: 'B', n: ROWS.B },
    ];
    expect(firstCounts).toEqual(expected);
    expect(counts).toEqual(expected);
    const { before } = await queryOne<{ before: boolean }>(
      restored,
      'SELECT max(at) < $1::timestamptz AS before FROM t',
      [targetTime],
    );
    expect(before).toBe(true);
    recordResult({
      cluster: `${NS}/${RESTORED} (restored)`,
      ready: true,
      serverVersion: await serverVersion(restored),
    });
  });

  it('fires a ScheduledBackup with a six-field cron at the next minute, to a completed Backup', async () => {
    const created = Date.now();
    await create(CNPG, 'scheduledbackups', {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'ScheduledBackup',
      metadata: { name: `${SOURCE}-minutely`, namespace: NS },
      spec: {
        cluster: { name: SOURCE },
        // Seconds first: at second 0 of every minute.
        schedule: '0 * * * * *',
        backupOwnerReference: 'self',
        method: 'plugin',
        pluginConfiguration: { name: PLUGIN_NAME },
      },
    });
    const { fired } = await until(
      `a Backup made by ScheduledBackup ${SOURCE}-minutely`,
      async () => {
        const list = (await e2e.custom.listNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'backups' })) as {
          items: BackupObject[];
        };
        const found = list.items.find((b) => b.metadata.labels?.['cnpg.io/scheduled-backup'] === `${SOURCE}-minutely`);
        return found ? { fired: found } : undefined;
      },
      150_000,
    );
    said.scheduledFiredSeconds = String(secondsSince(created));
    await untilBackupCompleted(e2e, NS, fired.metadata.name);
    said.scheduledCompletedSeconds = String(secondsSince(created));
    // One is enough: stop it before the next minute.
    await e2e.custom.deleteNamespacedCustomObject({
      ...CNPG,
      namespace: NS,
      plural: 'scheduledbackups',
      name: `${SOURCE}-minutely`,
    });
  });

  it('keeps to the network rule: the store is a process of the node namespace, on the node address only', async () => {
    const listening = await command('nsenter', [`--net=${NETNS_PATH}`, '--', 'ss', '-Hltn', `sport = :${S3_PORT}`]);
    expect(
      listening
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/)[3]),
    ).toEqual([`${NODE_IP}:${S3_PORT}`]);
    const outside = await command('ss', ['-Hltn', `sport = :${S3_PORT}`]);
    expect(outside.trim()).toBe('');
    const routes = await routesOutOf();
    expect(routes).toEqual({ defaultRoute: false, rootRoutesToNode: [] });
    const line =
      `backups by hand: archived ${said.firstArchive ? 'yes' : 'no'}; backup completed in ${said.backupSeconds}s; restored to ${targetTime}: ` +
      `rows ${said.rows} as expected; apply→first query of the restored cluster ${said.firstQueryMs}ms ` +
      `(recovery Job ${said.recoveryJobSeconds}s; then restarted to drop the plugin's sidecar ` +
      `[first pod had it: ${said.firstPodHadSidecar}], healthy ${said.readySeconds}s, query on the restarted ` +
      `instance ${said.stableQueryMs}ms); scheduled backup fired ` +
      `${said.scheduledFiredSeconds}s after creation, completed at ${said.scheduledCompletedSeconds}s ` +
      `(plugin ${said.pluginVersion}, barman-cli-cloud ${stack.barmanVersion}, versitygw ` +
      `${stack.binaries.versions.versitygw}, store in the node namespace only)`;
    recordLine(line);
    log(line);
  });
});
