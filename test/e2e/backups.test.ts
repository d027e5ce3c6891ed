/**
 * Backups and a point-in-time restore with pgfsm's own objects on the real node (issue 36): a class with a backup
 * policy, a cluster of it with no backup line in its spec, an on-demand backup by annotation, and a new
 * PostgresCluster restored to a time taken from the server's clock, which must hold exactly the rows written
 * before it. The store is versitygw in the node's namespace and the plugin is the Barman Cloud Plugin
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
  createClass,
  createCluster,
  createNamespace,
  type E2e,
  endpoints,
  eventsAbout,
  GROUP,
  getCluster,
  queryOne,
  secretValue,
  serverVersion,
  untilReadyRecorded,
} from './support/node.ts';
import { recordLine, recordResult } from './support/results.ts';

const NS = 'backups';
const CLASS = 'e2e-backups';
const SOURCE = 'orders';
const RESTORED = 'orders-restored';
const PREFIX = 'e2e';
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const ROWS = { A: 100, B: 50, C: 20 };
/** Minutes from the class's creation to the minute its schedule names (after the on-demand backup, in practice). */
const SCHEDULE_AHEAD_MINUTES = 2;

const log = (line: string) => process.stderr.write(`[backups] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let e2e: E2e;
let stack: BackupStack;
let source: pg.Client;
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
async function superuserClient(name: string, timeoutMs?: number): Promise<pg.Client> {
  const ep = await endpoints(e2e, NS, name);
  const secret = ep.SUPER_USER_SECRET_REF ?? '';
  const client = await connect(
    e2e,
    {
      host: ep.CLUSTER_RW_ENDPOINT ?? '',
      port: Number(ep.DEFAULT_CLUSTER_PORT),
      user: await secretValue(e2e, NS, secret, 'username'),
      password: await secretValue(e2e, NS, secret, 'password'),
    },
    timeoutMs,
  );
  // A session ended by the server arrives as an error event; the test's own query then fails and says so.
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
    // No backup line in the cluster's spec: the class's policy is enough.
    await createCluster(e2e, NS, SOURCE, { class: CLASS });
    await untilReadyRecorded(e2e, NS, SOURCE);
    said.sourceReady = `${secondsSince(applied)}s`;
    source = await superuserClient(SOURCE);
    recordResult({ cluster: `${NS}/${SOURCE}`, ready: true, serverVersion: await serverVersion(source) });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    log(`observed: ${JSON.stringify({ ...said, timings: stack?.timings })}`);
    // Leave the node as the other files expect it: no cluster of ours running, no plugin registered.
    for (const name of [RESTORED, SOURCE]) {
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
    await createRowsTable(source);
    await insertBatch(source, 'A', 1, ROWS.A);
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
    await insertBatch(source, 'B', ROWS.A + 1, ROWS.B);
    await sleep(1_100);
    targetTime = await serverNow(source);
    expect(Date.parse(targetTime)).toBeGreaterThan(Date.parse(said.backupStoppedAt ?? ''));
    await sleep(1_100);
    await insertBatch(source, 'C', ROWS.A + ROWS.B + 1, ROWS.C);
    const archived = await archiveCurrentWal(source);
    said.secondArchive = `${archived.segment} in ${archived.seconds}s`;
  });

  it('restores a new PostgresCluster to T: rows A and B, no C, through its own Secret, Ready only once', async () => {
    const history = recordHistory(e2e, {
      clusters: `/apis/${GROUP.group}/${GROUP.version}/namespaces/${NS}/postgresclusters`,
    });
    await history.ready();
    const applied = Date.now();
    await createCluster(e2e, NS, RESTORED, { class: CLASS, restore: { source: { cluster: SOURCE }, targetTime } });
    try {
      await untilReadyRecorded(e2e, NS, RESTORED, `${NS}/${RESTORED} (restored)`);
      said.restoredReadySeconds = String(secondsSince(applied));
      const restored = await superuserClient(RESTORED, 480_000);
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
      const states = history
        .versions<PostgresCluster & KubeObject>('clusters', RESTORED)
        .map((v) => v.object.status?.state)
        .filter((s): s is string => s !== undefined)
        .filter((s, i, all) => i === 0 || all[i - 1] !== s);
      said.restoredStates = states.join('→');
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
    const line =
      `backups: archived ${said.firstArchive ? 'yes' : 'no'}; backup completed in ${said.backupSeconds}s; ` +
      `restored to ${targetTime}: rows ${said.rows} as expected; apply→Ready ${said.restoredReadySeconds}s, ` +
      `→first query ${said.firstQuerySeconds}s (states ${said.restoredStates}); scheduled backup ${said.scheduled}`;
    recordLine(line);
    log(line);
  });
});
