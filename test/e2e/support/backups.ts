/**
 * What the backup tests on the real node share (test/e2e/backups.test.ts with pgfsm's objects, and
 * compat/backups-by-hand.test.ts with CloudNativePG's): the store's Secret, batches of rows, WAL archived as
 * pg_stat_archiver reports it, a target time from the server's clock, and a Backup followed to its end.
 */
import type pg from 'pg';
import type { BackupStack } from '../../../src/tools/node/backups.ts';
import { PLUGIN_SERVICE } from '../../../src/tools/node/barman-cloud.ts';
import { CNPG_NAMESPACE } from '../../../src/tools/node/install.ts';
import { type E2e, query, queryOne, waitFor } from './node.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const secondsSince = (since: number) => Number(((Date.now() - since) / 1000).toFixed(1));

/**
 * Polls once a second until `probe` answers. An answer with a `failure` ends the wait at once with that error:
 * what it saw will not get better (a thrown error is only the probe failing this time, and is tried again).
 */
export async function until<T extends object>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs?: number,
): Promise<T> {
  const seen = await waitFor(
    what,
    async () => {
      try {
        const value = await probe();
        if (value === undefined) await sleep(1_000);
        return value;
      } catch (error) {
        // Tried again, a second later like an unanswered probe, not at the wait's own 100 ms.
        await sleep(1_000);
        throw error;
      }
    },
    timeoutMs,
  );
  const failure = (seen as { failure?: unknown }).failure;
  if (typeof failure === 'string') throw new Error(failure);
  return seen;
}

/** The store's credentials as a Secret `s3-creds` of `namespace`, under the keys pgfsm and the plugin default to. */
export async function createStoreSecret(e2e: E2e, namespace: string, stack: BackupStack) {
  await e2e.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 's3-creds' },
      stringData: {
        ACCESS_KEY_ID: stack.store.credentials.accessKeyId,
        ACCESS_SECRET_KEY: stack.store.credentials.secretAccessKey,
      },
    },
  });
}

/** Takes the plugin out of the node again, so that the files after this one find CloudNativePG as installed. */
export async function removeBackupPlugin(e2e: E2e) {
  await e2e.node
    .kubectl([
      'delete',
      '-n',
      CNPG_NAMESPACE,
      `service/${PLUGIN_SERVICE}`,
      `deployment/${PLUGIN_SERVICE}`,
      '--wait=false',
    ])
    .catch(() => undefined);
}

export const createRowsTable = (client: pg.Client) =>
  query(
    client,
    'CREATE TABLE t(id int PRIMARY KEY, batch text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );

export const insertBatch = (client: pg.Client, batch: string, first: number, count: number) =>
  query(client, `INSERT INTO t(id, batch) SELECT g, $1 FROM generate_series($2::int, $3::int) g`, [
    batch,
    first,
    first + count - 1,
  ]);

export const batchCounts = (client: pg.Client) =>
  query<{ batch: string; n: number }>(client, 'SELECT batch, count(*)::int AS n FROM t GROUP BY batch ORDER BY batch');

/** Now on the server's clock, as an RFC 3339 time with a zone (what a restore's targetTime takes). */
export async function serverNow(client: pg.Client): Promise<string> {
  const { t } = await queryOne<{ t: string }>(
    client,
    `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"') AS t`,
  );
  return t;
}

const SEGMENT = /^[0-9A-F]{24}$/;

/**
 * Switches to a new WAL segment and waits until pg_stat_archiver says the one just closed is archived. Failures
 * are counted from the start of the wait: a restored cluster's counters carry those of its recovery, which tried
 * the new timeline's history file before the instance had its own archive.
 */
export async function archiveCurrentWal(client: pg.Client): Promise<{ segment: string; seconds: number }> {
  const began = Date.now();
  const archiver = () =>
    queryOne<{ last_archived_wal: string | null; failed_count: string; last_failed_wal: string | null }>(
      client,
      'SELECT last_archived_wal, failed_count, last_failed_wal FROM pg_stat_archiver',
    );
  const failedBefore = Number((await archiver()).failed_count);
  const { segment } = await queryOne<{ segment: string }>(
    client,
    'SELECT pg_walfile_name(pg_current_wal_lsn()) AS segment',
  );
  await query(client, 'SELECT pg_switch_wal()');
  await until(`WAL segment ${segment} archived`, async () => {
    const row = await archiver();
    const last = row.last_archived_wal ?? '';
    const failures = Number(row.failed_count) - failedBefore;
    // More failures than retries in a few seconds: archiving is broken, and waiting longer will not mend it.
    if (failures > 5) return { failure: `archiving fails: ${failures} failures, last ${row.last_failed_wal}` };
    return SEGMENT.test(last) && last >= segment ? {} : undefined;
  });
  return { segment, seconds: secondsSince(began) };
}

export interface BackupObject {
  metadata: { name: string; creationTimestamp?: string; labels?: Record<string, string> };
  status?: { phase?: string; error?: string; startedAt?: string; stoppedAt?: string; backupId?: string };
}

/** Waits for a CNPG Backup to complete; `failed` or `walArchivingFailing` end the wait with the Backup's error. */
export async function untilBackupCompleted(
  e2e: E2e,
  namespace: string,
  name: string,
  timeoutMs = 300_000,
): Promise<BackupObject> {
  const { backup } = await until(
    `Backup ${namespace}/${name} completed`,
    async () => {
      const backup = (await e2e.custom
        .getNamespacedCustomObject({ group: 'postgresql.cnpg.io', version: 'v1', namespace, plural: 'backups', name })
        .catch(() => undefined)) as BackupObject | undefined;
      const phase = backup?.status?.phase;
      if (backup && (phase === 'failed' || phase === 'walArchivingFailing')) {
        return { backup, failure: `Backup ${name} is ${phase}: ${backup.status?.error}` };
      }
      return backup && phase === 'completed' ? { backup } : undefined;
    },
    timeoutMs,
  );
  return backup;
}
