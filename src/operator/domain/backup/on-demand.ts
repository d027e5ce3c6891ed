/**
 * A backup asked for now: the annotation `pgfsm.io/backup-now: <token>`. A token the status does not record as
 * `backup.lastRequest` asks for one CNPG Backup, named after the token (names.ts), so asking twice with the same
 * token makes one backup, and a new token (`kubectl annotate --overwrite … pgfsm.io/backup-now=$(date +%s)`) makes
 * another. docs/design/backups-api.md says why an annotation rather than a field.
 */
import { BACKUP_NOW_ANNOTATION, BACKUP_NOW_TOKEN_PATTERN, BARMAN_PLUGIN } from '../../api/backup-rules.ts';
import type { PostgresCluster } from '../../api/schema.ts';
import type { MergedConfig } from '../config.ts';
import { CNPG_API_VERSION } from '../objects.ts';
import { childLabels, childNames, ownerReferenceTo } from '../vocabulary.ts';
import { onDemandBackupName } from './names.ts';
import type { CnpgBackup } from './objects.ts';

export const BACKUP_NOW_FIELD = `metadata.annotations["${BACKUP_NOW_ANNOTATION}"]`;

export type BackupRequest =
  /** No annotation. */
  | { kind: 'none' }
  /** The token the status records: its Backup was asked for already. */
  | { kind: 'done'; token: string; backup: string }
  /** A new token: create this Backup, then record the token. */
  | { kind: 'new'; token: string; backup: string }
  | { kind: 'refused'; field: string; message: string };

export function backupRequestOf(cluster: PostgresCluster, config: Pick<MergedConfig, 'backup'>): BackupRequest {
  const token = cluster.metadata.annotations?.[BACKUP_NOW_ANNOTATION];
  if (token === undefined) return { kind: 'none' };
  const backup = onDemandBackupName(cluster.metadata.name, token);
  if (token === cluster.status?.backup?.lastRequest) return { kind: 'done', token, backup };
  const refuse = (message: string): BackupRequest => ({
    kind: 'refused',
    field: BACKUP_NOW_FIELD,
    message: `${BACKUP_NOW_FIELD}: ${message}`,
  });
  if (!new RegExp(BACKUP_NOW_TOKEN_PATTERN).test(token)) {
    // Not quoted: it may be anything, of any length.
    return refuse(
      'the token must be 1 to 63 letters, digits and . _ : + -, starting with a letter or digit, e.g. $(date +%s)',
    );
  }
  if (!config.backup) {
    return refuse('this cluster is not backed up (its class has no backup policy, or spec.backup.enabled is false)');
  }
  return { kind: 'new', token, backup };
}

/** The Backup a new token asks for; it belongs to the PostgresCluster, and goes with it. */
export function desiredOnDemandBackup(cluster: PostgresCluster, name: string): CnpgBackup {
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Backup',
    metadata: {
      name,
      namespace: cluster.metadata.namespace,
      labels: childLabels(cluster.metadata.name),
      ownerReferences: [ownerReferenceTo(cluster)],
    },
    spec: {
      cluster: { name: childNames(cluster.metadata.name).cnpgCluster },
      method: 'plugin',
      pluginConfiguration: { name: BARMAN_PLUGIN },
    },
  };
}

export type BackupProgress =
  | { state: 'absent' }
  /** Not finished; `since` when CNPG started it (a Backup can stay pending for good: CNPG issue #10778). */
  | { state: 'running'; phase: string; since?: string }
  | { state: 'completed'; stoppedAt?: string }
  | { state: 'failed'; phase: string; message: string };

const FAILED_PHASES = new Set(['failed', 'walArchivingFailing', 'invalid backup definition']);

/** How a Backup stands, from CloudNativePG's phases. */
export function backupProgress(backup: CnpgBackup | undefined): BackupProgress {
  if (!backup) return { state: 'absent' };
  const phase = backup.status?.phase ?? 'pending';
  if (phase === 'completed') {
    return { state: 'completed', ...(backup.status?.stoppedAt ? { stoppedAt: backup.status.stoppedAt } : {}) };
  }
  if (FAILED_PHASES.has(phase)) {
    const why = phase === 'walArchivingFailing' ? 'WAL archiving is failing' : (backup.status?.error ?? phase);
    return { state: 'failed', phase, message: `Backup ${backup.metadata.name} ${phase}: ${why}` };
  }
  const since = backup.status?.startedAt ?? backup.metadata.creationTimestamp;
  return { state: 'running', phase, ...(since ? { since } : {}) };
}
