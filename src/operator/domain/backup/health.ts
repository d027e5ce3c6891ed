/**
 * How a cluster's backups stand, from what CloudNativePG and the plugin report: WAL archiving working or why not,
 * the last base backup and its age, the window a restore can reach. A typed result for the statechart's guards and
 * the status; `now` comes from the tick. CNPG's own `status.lastSuccessfulBackup` and friends are "not set for
 * backup plugins": the plugin reports per archive in its ObjectStore's `status.serverRecoveryWindow`.
 */
import type { CnpgCluster } from '../objects.ts';
import type { ObjectStore, RecoveryWindow } from './objects.ts';

export type ArchivingState = 'working' | 'failing' | 'unknown';
export type LastBackupOutcome = 'succeeded' | 'failed' | 'running' | 'none';

export interface BackupHealth {
  archiving: { state: ArchivingState; message: string };
  lastBackup: { outcome: LastBackupOutcome; message: string };
  /** What the plugin reports of this cluster's archive; empty until its first report. */
  window: RecoveryWindow;
  /** How long ago the last base backup completed (ms), when one did. */
  lastBackupAgeMs?: number;
}

/** What the health is judged from. */
export interface BackupWorld {
  serverName: string;
  store?: ObjectStore;
  cnpg?: CnpgCluster;
  now: number;
}

const conditionOf = (cnpg: CnpgCluster | undefined, type: string) =>
  cnpg?.status?.conditions?.find((condition) => condition.type === type);

/**
 * `ContinuousArchiving` is set by the instance manager after each archive attempt, true or false with the error:
 * absent means no WAL segment was archived or tried yet (CNPG archives one when a segment fills, or at
 * archive_timeout, 5 minutes by default).
 */
function archivingOf(cnpg: CnpgCluster | undefined): BackupHealth['archiving'] {
  const condition = conditionOf(cnpg, 'ContinuousArchiving');
  if (condition?.status === 'True') return { state: 'working', message: 'WAL archiving works' };
  if (condition?.status === 'False') {
    return {
      state: 'failing',
      message: `WAL archiving fails: ${condition.message || condition.reason || 'no reason given'}`,
    };
  }
  return { state: 'unknown', message: 'no WAL archived yet: CloudNativePG reports archiving after its first attempt' };
}

/** `LastBackupSucceeded` (reasons LastBackupSucceeded, LastBackupFailed, BackupStarted). */
function lastBackupOf(cnpg: CnpgCluster | undefined): BackupHealth['lastBackup'] {
  const condition = conditionOf(cnpg, 'LastBackupSucceeded');
  if (!condition) return { outcome: 'none', message: 'no base backup yet' };
  if (condition.reason === 'BackupStarted') return { outcome: 'running', message: 'a base backup is running' };
  if (condition.status === 'True') return { outcome: 'succeeded', message: 'the last base backup succeeded' };
  return {
    outcome: 'failed',
    message: `the last base backup failed: ${condition.message || condition.reason || 'no reason given'}`,
  };
}

export function backupHealth({ serverName, store, cnpg, now }: BackupWorld): BackupHealth {
  const reported = store?.status?.serverRecoveryWindow?.[serverName] ?? {};
  const window: RecoveryWindow = {};
  for (const key of ['firstRecoverabilityPoint', 'lastSuccessfulBackupTime', 'lastFailedBackupTime'] as const) {
    if (typeof reported[key] === 'string') window[key] = reported[key];
  }
  const last = window.lastSuccessfulBackupTime === undefined ? Number.NaN : Date.parse(window.lastSuccessfulBackupTime);
  return {
    archiving: archivingOf(cnpg),
    lastBackup: lastBackupOf(cnpg),
    window,
    // A clock behind the plugin's reads as age 0, never as a negative age.
    ...(Number.isFinite(last) ? { lastBackupAgeMs: Math.max(0, now - last) } : {}),
  };
}
