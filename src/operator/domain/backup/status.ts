/**
 * What a cluster's status records of its backups and of the restore it came from: the archive a later restore will
 * name (serverName, destinationPath), what the plugin last reported of it, and the last on-demand request acted on.
 * Pure: the status projection (core/status.ts) will take it as it is once the statechart is wired.
 */
import type { BackupStatus, PostgresCluster, RestoreStatus } from '../../api/schema.ts';
import type { MergedConfig } from '../config.ts';
import type { BackupHealth } from './health.ts';
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
