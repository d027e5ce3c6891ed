/**
 * What a cluster's status records of its backups and of the restore it came from: the archive a later restore will
 * name (serverName, destinationPath), what the plugin last reported of it, and the last on-demand request acted on.
 * Pure: the status projection (core/status.ts) will take it as it is once the statechart is wired.
 */
import type { BackupStatus, PostgresCluster, RestoreStatus } from '../../api/schema.ts';
import type { MergedConfig } from '../config.ts';
import { Reason } from '../vocabulary.ts';
import type { BackupHealth } from './health.ts';
import type { BackupAssessment } from './judge.ts';
import type { RecoverySource } from './recovery.ts';
import { archiveOf } from './store.ts';

/**
 * `status.backup`, or undefined when the cluster is not backed up. `acted`: the on-demand request whose Backup this
 * pass created; otherwise the last one recorded stays, so a token is acted on once.
 */
export function backupStatusOf(
  cluster: PostgresCluster,
  config: Pick<MergedConfig, 'backup'>,
  health?: BackupHealth,
  acted?: { token: string; backup: string },
): BackupStatus | undefined {
  if (!config.backup) return undefined;
  const recorded = cluster.status?.backup;
  const request = acted
    ? { lastRequest: acted.token, lastRequestBackup: acted.backup }
    : {
        ...(recorded?.lastRequest !== undefined ? { lastRequest: recorded.lastRequest } : {}),
        ...(recorded?.lastRequestBackup !== undefined ? { lastRequestBackup: recorded.lastRequestBackup } : {}),
      };
  return { ...archiveOf(cluster, config.backup.store), ...(health?.window ?? {}), ...request };
}

/** `status.restore`: the archive the cluster was created from, kept once recorded (restore is fixed at creation). */
export function restoreStatusOf(
  cluster: PostgresCluster,
  config: Pick<MergedConfig, 'restore'>,
  source?: RecoverySource,
): RestoreStatus | undefined {
  if (!config.restore) return undefined;
  const recorded = cluster.status?.restore;
  if (recorded) return recorded;
  if (!source) return undefined;
  const targetTime = config.restore.targetTime;
  return { serverName: source.serverName, ...(targetTime !== undefined ? { targetTime } : {}) };
}

/** The condition of a backed-up cluster's backups: apart from the pipeline's, so no other cluster's status changes. */
export const BACKUPS_READY = 'BackupsReady';

export interface BackupsCondition {
  status: 'True' | 'False' | 'Unknown';
  reason: Reason;
  message: string;
}

/**
 * `BackupsReady`: True while WAL archiving works; Unknown until CNPG reports the first archive attempt (up to
 * archive_timeout after the cluster starts: the normal state of a new cluster); False with why otherwise. Undefined
 * for a cluster that is not backed up and has nothing wrong with its restore's store.
 */
export function backupsConditionOf(judged: BackupAssessment, backedUp: boolean): BackupsCondition | undefined {
  if (judged.problem) return { status: 'False', ...judged.problem };
  if (!backedUp || !judged.health) return undefined;
  const pending = [...judged.store, ...judged.schedule].flatMap((e) =>
    e.type === 'apply' ? [`${e.object.kind} ${e.object.metadata.name}`] : [],
  );
  if (pending.length > 0) {
    return {
      status: 'False',
      reason: Reason.BackupObjectsPending,
      message: `Writing ${pending.join(', ')} (the ScheduledBackup once the CNPG Cluster is healthy)`,
    };
  }
  const { archiving, lastBackup, window } = judged.health;
  // The time, not the age: a message that moved with the clock would rewrite the status on every pass (the age is
  // the metric's, pgfsm_backup_last_success_timestamp_seconds).
  const at = window.lastSuccessfulBackupTime;
  const last = at === undefined ? lastBackup.message : `last base backup completed at ${at}`;
  const message = `${archiving.message}; ${last}${requested(judged)}`;
  if (archiving.state === 'failing') {
    return { status: 'False', reason: Reason.ContinuousArchivingFailing, message };
  }
  if (archiving.state === 'unknown') {
    return { status: 'Unknown', reason: Reason.ContinuousArchivingUnknown, message };
  }
  return { status: 'True', reason: Reason.ContinuousArchivingWorking, message };
}

/**
 * How the Backup of the current pgfsm.io/backup-now token stands, as CNPG reports it: said in the message only, since
 * a backup asked for once is no state of the cluster (a failed one is retried by asking again, with a new token).
 */
function requested(judged: BackupAssessment): string {
  const progress = judged.progress;
  if (judged.request.kind !== 'done' && !judged.acted) return '';
  const name = judged.acted?.backup ?? (judged.request.kind === 'done' ? judged.request.backup : '');
  switch (progress.state) {
    case 'absent':
      return '';
    case 'running':
      return `; Backup ${name} ${progress.phase}${progress.since ? ` since ${progress.since}` : ''}`;
    case 'completed':
      return `; Backup ${name} completed${progress.stoppedAt ? ` at ${progress.stoppedAt}` : ''}`;
    case 'failed':
      return `; ${progress.message}`;
  }
}
