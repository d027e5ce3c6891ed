/** The ScheduledBackup that takes a cluster's base backups on its schedule. */
import { BARMAN_PLUGIN } from '../../api/backup-rules.ts';
import { cnpgSchedule } from '../../api/cron.ts';
import type { PostgresCluster } from '../../api/schema.ts';
import { CNPG_API_VERSION } from '../objects.ts';
import { childLabels, childNames, ownerReferenceTo } from '../vocabulary.ts';
import { scheduledBackupName } from './names.ts';
import type { ScheduledBackup } from './objects.ts';
import type { BackupConfig } from './policy.ts';

/**
 * `immediate`: the first base backup is taken when the ScheduledBackup is created, not at the first tick of the
 * schedule, so a new cluster can be restored (to any time after that backup) from its first minutes rather than
 * from the next night. `backupOwnerReference: self`: the Backups it makes belong to it, and go with it.
 */
export function desiredScheduledBackup(cluster: PostgresCluster, backup: BackupConfig): ScheduledBackup {
  const name = cluster.metadata.name;
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'ScheduledBackup',
    metadata: {
      name: scheduledBackupName(name),
      namespace: cluster.metadata.namespace,
      labels: childLabels(name),
      ownerReferences: [ownerReferenceTo(cluster)],
    },
    spec: {
      cluster: { name: childNames(name).cnpgCluster },
      schedule: cnpgSchedule(backup.schedule),
      immediate: true,
      backupOwnerReference: 'self',
      method: 'plugin',
      pluginConfiguration: { name: BARMAN_PLUGIN },
    },
  };
}
