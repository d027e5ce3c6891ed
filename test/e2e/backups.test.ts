/**
 * Backups and a point-in-time restore with pgfsm's own objects on the real node (issue 36): a class with a backup
 * policy, a cluster of it with no backup line in its spec, an application's rows written through its
 * PostgresDatabase's Secret, an on-demand backup by annotation, and a new PostgresCluster restored to a time taken
 * from the server's clock, which must hold exactly the rows written before it and which the application reaches
 * through a PostgresDatabase of its own; then the source is deleted and its archive, named by server name, restored
 * to its latest point. The store is versitygw in the node's namespace and the plugin is the Barman Cloud Plugin
 * (src/tools/node/backups.ts); test/e2e/compat/backups-by-hand.test.ts does the same with CloudNativePG's objects
 * applied by hand, and its line is what this file's times compare with.
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_NOW_ANNOTATION } from '../../src/operator/api/backup-rules.ts';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { type BackupStack, startBackupStack } from '../../src/tools/node/backups.ts';
import { listKeys } from '../../src/tools/node/s3-store.ts';
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
} from './support/backups.ts';
import { type KubeObject, recordHistory } from './support/history.ts';
import {
  attach,
  connect,
  connectByUri,
  createClass,
  createCluster,
  createDatabase,
  createNamespace,
  type E2e,
  endpoints,
  eventsAbout,
  GROUP,
  getCluster,
  getCnpgCluster,
  getDatabase,
  queryOne,
  secretValue,
  serverVersion,
  untilDatabaseState,
  untilReadyRecorded,
} from './support/node.ts';
import { recordLine, recordResult } from './support/results.ts';

const NS = 'backups';
const CLASS = 'e2e-backups';
const SOURCE = 'orders';
const RESTORED = 'orders-restored';
/** Restored from the source's archive by its server name, after the source is deleted. */
const REVIVED = 'orders-revived';
/** The application's database and owner: the same names on the source and on the restored cluster. */
const APP = { database: 'orders', owner: 'clerk' };
const PREFIX = 'e2e';
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const ROWS = { A: 100, B: 50, C: 20 };
/** Minutes from the class's creation to the minute its schedule names (after the on-demand backup, in practice). */
const SCHEDULE_AHEAD_MINUTES = 2;

const log = (line: string) => process.stderr.write(`[backups] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let e2e: E2e;
let stack: BackupStack;
/** The source's superuser: WAL switches and the server's clock. */
let source: pg.Client;
/** The application on the source, connected with its Secret's uri alone: it owns the rows. */
let app: pg.Client;
const clients: pg.Client[] = [];
const said: Record<string, string> = {};
let targetTime = '';
/** The minute the class's schedule fires, as a Date at its second 0. */
let scheduledAt: Date;

const cluster = async (name: string): Promise<PostgresCluster> => {
  const found = await getCluster(e2e, NS, name);
  if (!found) throw new Error(`PostgresCluster ${NS}/${name} is gone`);
  return found;
};
const condition = async (name: string, type: string) =>
  (await cluster(name)).status?.conditions?.find((c) => c.type === type);

/** The superuser's client, as the cluster's endpoints ConfigMap and superuser Secret give it (what a team reads). */
async function superuserClient(name: string, timeoutMs?: number, database?: string): Promise<pg.Client> {
  const ep = await endpoints(e2e, NS, name);
  const secret = ep.SUPER_USER_SECRET_REF ?? '';
  const client = await connect(
    e2e,
    {
      host: ep.CLUSTER_RW_ENDPOINT ?? '',
      port: Number(ep.DEFAULT_CLUSTER_PORT),
      user: await secretValue(e2e, NS, secret, 'username'),
      password: await secretValue(e2e, NS, secret, 'password'),
      ...(database ? { database } : {}),
    },
    timeoutMs,
  );
  // A session ended by the server arrives as an error event; the test's own query then fails and says so.
  client.on('error', (error) => log(`${name}: connection ended: ${error.message}`));
  clients.push(client);
  return client;
}

/** A PostgresDatabase of the application's names on `cluster`, Ready, and its owner connected by its Secret's uri. */
async function appOn(name: string, cluster: string): Promise<pg.Client> {
  await createDatabase(e2e, NS, name, { cluster, name: APP.database, owner: APP.owner });
  await untilDatabaseState(e2e, NS, name, 'Ready');
  const client = await connectByUri(e2e, await secretValue(e2e, NS, `${name}-${APP.owner}`, 'uri'));
  client.on('error', (error) => log(`${name}: connection ended: ${error.message}`));
  clients.push(client);
  return client;
}

/** A 5-field cron (UTC) for one minute of the day, the form a class's schedule takes. */
const cronAt = (at: Date) => `${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;

describe('backups and a point-in-time restore with pgfsm (issue 36)', () => {
  beforeAll(async () => {
    e2e = await attach();
    stack = await startBackupStack(e2e.node, { log });
    await createNamespace(e2e, NS);
    // The class names a Secret; every namespace whose clusters are backed up holds its own (never copied).
    await createStoreSecret(e2e, NS, stack);
    const now = Date.now();
    scheduledAt = new Date(Math.ceil(now / 60_000) * 60_000 + SCHEDULE_AHEAD_MINUTES * 60_000);
    await createClass(e2e, CLASS, {});
    await e2e.custom.patchClusterCustomObject(
      {
        ...GROUP,
        plural: 'postgresclusterclasses',
        name: CLASS,
        body: {
          spec: {
            backup: {
              objectStore: {
                destinationPath: `s3://${stack.bucket}/${PREFIX}`,
                endpointURL: stack.store.endpoint,
                credentials: { secretName: 's3-creds' },
              },
              schedule: cronAt(scheduledAt),
              retention: '7d',
              walCompression: 'gzip',
              dataCompression: 'gzip',
            },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const applied = Date.now();
    // No backup line in the cluster's spec: the class's policy is enough. Delete: the last test deletes it, and
    // its archive must outlive the CNPG Cluster.
    await createCluster(e2e, NS, SOURCE, { class: CLASS, clusterDeletionPolicy: 'Delete' });
    await untilReadyRecorded(e2e, NS, SOURCE);
    said.sourceReady = `${secondsSince(applied)}s`;
    source = await superuserClient(SOURCE);
    app = await appOn(`${SOURCE}-app`, SOURCE);
    recordResult({ cluster: `${NS}/${SOURCE}`, ready: true, serverVersion: await serverVersion(source) });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    log(`observed: ${JSON.stringify({ ...said, timings: stack?.timings })}`);
    // Leave the node as the other files expect it: no cluster of ours running, no plugin registered.
    for (const name of [`${RESTORED}-app`, `${SOURCE}-app`]) {
      await e2e?.custom
        .deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresdatabases', name })
        .catch(() => undefined);
    }
    for (const name of [REVIVED, RESTORED, SOURCE]) {
      await e2e?.custom
        .deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name })
        .catch(() => undefined);
    }
    if (e2e) await removeBackupPlugin(e2e);
    await e2e?.close();
  });

  it('archives WAL under its own server name, and BackupsReady says so', async () => {
    const status = (await cluster(SOURCE)).status?.backup;
    expect(status?.serverName).toMatch(new RegExp(`^${SOURCE}-[0-9a-f]{8}$`));
    await createRowsTable(app);
    await insertBatch(app, 'A', 1, ROWS.A);
    const archived = await archiveCurrentWal(source);
    said.firstArchive = `${archived.segment} in ${archived.seconds}s`;
    const ready = await until('BackupsReady=True on the source', async () => {
      const c = await condition(SOURCE, 'BackupsReady');
      return c?.status === 'True' ? c : undefined;
    });
    said.backupsReady = `${ready.reason}: ${ready.message}`;
    const keys = await listKeys(stack.store, stack.bucket, `${PREFIX}/${NS}/${status?.serverName}/wals/`);
    expect(keys.some((k) => k.includes(archived.segment))).toBe(true);
  });

  it('takes a backup on demand: a pgfsm.io/backup-now token makes one Backup, recorded in the status', async () => {
    const token = `e2e-${Date.now()}`;
    const asked = Date.now();
    await e2e.custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        namespace: NS,
        plural: 'postgresclusters',
        name: SOURCE,
        body: { metadata: { annotations: { [BACKUP_NOW_ANNOTATION]: token } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const { name } = await until(`status.backup.lastRequest = ${token}`, async () => {
      const backup = (await cluster(SOURCE)).status?.backup;
      return backup?.lastRequest === token ? { name: backup.lastRequestBackup } : undefined;
    });
    expect(name).toBeTruthy();
    const backup = await untilBackupCompleted(e2e, NS, name ?? '');
    said.backupSeconds = String(secondsSince(asked));
    said.backupStoppedAt = backup.status?.stoppedAt ?? '?';
    const reasons = (await eventsAbout(e2e, NS, SOURCE)).map((e) => e.reason);
    expect(reasons).toContain('BackupRequested');
    // The status follows the plugin's view of the store: a last successful backup, a recoverability window.
    const recorded = await until('status.backup.lastSuccessfulBackupTime at or after the backup', async () => {
      const b = (await cluster(SOURCE)).status?.backup;
      const last = Date.parse(b?.lastSuccessfulBackupTime ?? '');
      return last >= Date.parse(said.backupStoppedAt ?? '') - 1_000 ? b : undefined;
    });
    expect(recorded.firstRecoverabilityPoint).toBeTruthy();
  });

  it('writes rows B, takes T from the server clock, writes rows C and archives their WAL', async () => {
    await insertBatch(app, 'B', ROWS.A + 1, ROWS.B);
    await sleep(1_100);
    targetTime = await serverNow(source);
    expect(Date.parse(targetTime)).toBeGreaterThan(Date.parse(said.backupStoppedAt ?? ''));
    await sleep(1_100);
    await insertBatch(app, 'C', ROWS.A + ROWS.B + 1, ROWS.C);
    const archived = await archiveCurrentWal(source);
    said.secondArchive = `${archived.segment} in ${archived.seconds}s`;
  });

  it('restores a new PostgresCluster to T: rows A and B, no C, through its own Secrets, Ready only once', async () => {
    const history = recordHistory(e2e, {
      clusters: `/apis/${GROUP.group}/${GROUP.version}/namespaces/${NS}/postgresclusters`,
    });
    await history.ready();
    const applied = Date.now();
    await createCluster(e2e, NS, RESTORED, {
      class: CLASS,
      clusterDeletionPolicy: 'Delete',
      restore: { source: { cluster: SOURCE }, targetTime },
    });
    try {
      await untilReadyRecorded(e2e, NS, RESTORED, `${NS}/${RESTORED} (restored)`);
      said.restoredReadySeconds = String(secondsSince(applied));
      const restored = await superuserClient(RESTORED, 480_000, APP.database);
      const counts = await batchCounts(restored);
      said.firstQuerySeconds = String(secondsSince(applied));
      said.rows = `${counts.reduce((sum, c) => sum + c.n, 0)}/${ROWS.A + ROWS.B}`;
      expect(counts).toEqual([
        { batch: 'A', n: ROWS.A },
        { batch: 'B', n: ROWS.B },
      ]);
      const { before } = await queryOne<{ before: boolean }>(
        restored,
        'SELECT max(at) < $1::timestamptz AS before FROM t',
        [targetTime],
      );
      expect(before).toBe(true);
      // Ready means the cluster stays up: CloudNativePG restarts a restored instance once to drop the plugin's
      // restore-time sidecar configuration, and pgfsm must not have called it Ready before that.
      await sleep(30_000);
      const again = await batchCounts(restored);
      expect(again).toEqual(counts);
      const versions = history.versions<PostgresCluster & KubeObject>('clusters', RESTORED);
      const states = versions
        .map((v) => v.object.status?.state)
        .filter((s): s is string => s !== undefined)
        .filter((s, i, all) => i === 0 || all[i - 1] !== s);
      said.restoredStates = states.join('→');
      // Each state the restored cluster passed through, and each reason its ClusterReady gave in it: a detour is
      // named, a passing CNPGPluginError in Provisioning included.
      const steps = versions.map((v) => {
        const c = v.object.status?.conditions?.find((x) => x.type === 'ClusterReady');
        const state = v.object.status?.state;
        return { state, key: `${state}/${c?.reason}`, line: `${state} (${c?.reason}: ${c?.message})` };
      });
      for (const [i, { state, key, line }] of steps.entries()) {
        if (state !== undefined && key !== steps[i - 1]?.key) log(`${RESTORED}: ${line}`);
      }
      expect(states.slice(states.indexOf('Ready'))).toEqual(['Ready']);
      recordResult({
        cluster: `${NS}/${RESTORED} (restored)`,
        ready: true,
        serverVersion: await serverVersion(restored),
      });

      // Its own archive, not the source's: a new server name, and its WAL lands there.
      const own = (await cluster(RESTORED)).status?.backup?.serverName;
      const sourceName = (await cluster(SOURCE)).status?.backup?.serverName;
      expect(own).toMatch(new RegExp(`^${RESTORED}-[0-9a-f]{8}$`));
      expect(own).not.toBe(sourceName);
      expect((await cluster(RESTORED)).status?.restore?.serverName).toBe(sourceName);
      const archived = await archiveCurrentWal(restored);
      const keys = await listKeys(stack.store, stack.bucket, `${PREFIX}/${NS}/${own}/wals/`);
      expect(keys.some((k) => k.includes(archived.segment))).toBe(true);
    } finally {
      history.stop();
    }
  });

  it("the application reaches the restored rows through a PostgresDatabase of the restored cluster's own", async () => {
    // The restored data already holds the database and its owner; a PostgresDatabase of the same names on the new
    // cluster takes them up, pushes the owner a password of its own Secret, and the application connects with it.
    const asked = Date.now();
    const restoredApp = await appOn(`${RESTORED}-app`, RESTORED);
    said.appSeconds = String(secondsSince(asked));
    expect(await batchCounts(restoredApp)).toEqual([
      { batch: 'A', n: ROWS.A },
      { batch: 'B', n: ROWS.B },
    ]);
    // The owner owns what it wrote before the restore, and writes on.
    await insertBatch(restoredApp, 'D', 10_000, 1);
    const sourcePassword = await secretValue(e2e, NS, `${SOURCE}-app-${APP.owner}`, 'password');
    const restoredPassword = await secretValue(e2e, NS, `${RESTORED}-app-${APP.owner}`, 'password');
    expect(restoredPassword).not.toBe(sourcePassword);
  });

  it("fires the class's schedule at the minute it names, to a completed Backup", async () => {
    const scheduled = `${SOURCE}-scheduled`;
    const { fired } = await until(
      `a Backup of ScheduledBackup ${scheduled} at ${scheduledAt.toISOString()}`,
      async () => {
        const list = (await e2e.custom.listNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'backups' })) as {
          items: BackupObject[];
        };
        // The first one is the ScheduledBackup's immediate backup; the one the cron makes comes at its minute.
        const found = list.items.find(
          (b) =>
            b.metadata.labels?.['cnpg.io/scheduled-backup'] === scheduled &&
            Date.parse(b.metadata.creationTimestamp ?? '') >= scheduledAt.getTime(),
        );
        return found ? { fired: found } : undefined;
      },
      Math.max(0, scheduledAt.getTime() - Date.now()) + 180_000,
    );
    const firedAt = Date.parse(fired.metadata.creationTimestamp ?? '');
    // In the minute the 5-field cron names: pgfsm's seconds field is 0, not the minute shifted by a field.
    expect(firedAt - scheduledAt.getTime()).toBeLessThan(60_000);
    await untilBackupCompleted(e2e, NS, fired.metadata.name);
    said.scheduled = `${cronAt(scheduledAt)} fired at ${fired.metadata.creationTimestamp}`;
  });

  it('restores the archive of a deleted cluster, by its server name, to the latest point: rows A, B and C', async () => {
    const serverName = (await cluster(SOURCE)).status?.backup?.serverName ?? '';
    expect(serverName).not.toBe('');
    await e2e.custom.deleteNamespacedCustomObject({
      ...GROUP,
      namespace: NS,
      plural: 'postgresdatabases',
      name: `${SOURCE}-app`,
    });
    // Retain (its default): the database stays in PostgreSQL, so the archive's latest point still holds it.
    await until(`PostgresDatabase ${SOURCE}-app gone`, async () =>
      (await getDatabase(e2e, NS, `${SOURCE}-app`)) ? undefined : {},
    );
    await e2e.custom.deleteNamespacedCustomObject({
      ...GROUP,
      namespace: NS,
      plural: 'postgresclusters',
      name: SOURCE,
    });
    // Gone for good: the PostgresCluster and, under Delete, its CNPG Cluster; the archive stays in the bucket.
    await until(`${SOURCE} and its CNPG Cluster gone`, async () => {
      if (await getCluster(e2e, NS, SOURCE)) return undefined;
      return getCnpgCluster(e2e, NS, SOURCE).then(
        () => undefined,
        (error: { code?: number }) => (error.code === 404 ? {} : Promise.reject(error)),
      );
    });
    expect(await listKeys(stack.store, stack.bucket, `${PREFIX}/${NS}/${serverName}/base/`)).not.toEqual([]);
    const applied = Date.now();
    await createCluster(e2e, NS, REVIVED, {
      class: CLASS,
      clusterDeletionPolicy: 'Delete',
      restore: { source: { serverName } },
    });
    await untilReadyRecorded(e2e, NS, REVIVED, `${NS}/${REVIVED} (restored from a deleted cluster)`);
    said.revivedReadySeconds = String(secondsSince(applied));
    const revived = await superuserClient(REVIVED, 480_000, APP.database);
    const counts = await batchCounts(revived);
    said.revivedRows = `${counts.reduce((sum, c) => sum + c.n, 0)}/${ROWS.A + ROWS.B + ROWS.C}`;
    expect(counts).toEqual([
      { batch: 'A', n: ROWS.A },
      { batch: 'B', n: ROWS.B },
      { batch: 'C', n: ROWS.C },
    ]);
    expect((await cluster(REVIVED)).status?.restore?.serverName).toBe(serverName);
    recordResult({
      cluster: `${NS}/${REVIVED} (restored from a deleted cluster)`,
      ready: true,
      serverVersion: await serverVersion(revived),
    });
    const line =
      `backups: archived ${said.firstArchive ? 'yes' : 'no'}; backup completed in ${said.backupSeconds}s; ` +
      `restored to ${targetTime}: rows ${said.rows} as expected; apply→Ready ${said.restoredReadySeconds}s, ` +
      `→first query ${said.firstQuerySeconds}s (states ${said.restoredStates}); application through its own ` +
      `PostgresDatabase in ${said.appSeconds}s; scheduled backup ${said.scheduled}; source deleted, its archive ` +
      `restored to the latest point in ${said.revivedReadySeconds}s: rows ${said.revivedRows}`;
    recordLine(line);
    log(line);
  });
});
