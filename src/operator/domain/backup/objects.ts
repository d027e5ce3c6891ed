/**
 * The shapes of the backup objects pgfsm writes and reads (issue 36), reduced to the fields it uses: the Barman
 * Cloud Plugin's ObjectStore and CloudNativePG's Backup and ScheduledBackup. As domain/objects.ts for the others.
 */
import type { BARMAN_API_VERSION } from '../../api/backup-rules.ts';
import type { CNPG_API_VERSION, KubeObject } from '../objects.ts';

/** A key of a Secret in the object's namespace, as the plugin and CloudNativePG refer to one. */
export interface SecretKeyRef {
  name: string;
  key: string;
}

/** What the plugin reports of one archive (one serverName) of a store. */
export interface RecoveryWindow {
  firstRecoverabilityPoint?: string;
  lastSuccessfulBackupTime?: string;
  lastFailedBackupTime?: string;
}

export interface ObjectStoreSpec {
  /** Absent on a store pgfsm only reads from: nothing of pgfsm's prunes an archive it does not write. */
  retentionPolicy?: string;
  configuration: {
    destinationPath: string;
    endpointURL?: string;
    endpointCA?: SecretKeyRef;
    s3Credentials: { accessKeyId: SecretKeyRef; secretAccessKey: SecretKeyRef; region?: SecretKeyRef };
    wal?: { compression?: string };
    data?: { compression?: string; immediateCheckpoint?: boolean };
  };
  instanceSidecarConfiguration?: { env?: Array<{ name: string; value: string }> };
}

export interface ObjectStore extends KubeObject {
  apiVersion: typeof BARMAN_API_VERSION;
  kind: 'ObjectStore';
  spec: ObjectStoreSpec;
  status?: { serverRecoveryWindow?: Record<string, RecoveryWindow | undefined> };
}

/** An entry of a CNPG Cluster's `spec.plugins`, or the `plugin` of one of its `externalClusters`. */
export interface PluginConfiguration {
  name: string;
  enabled?: boolean;
  isWALArchiver?: boolean;
  parameters?: Record<string, string>;
}

export interface ExternalCluster {
  name: string;
  plugin?: PluginConfiguration;
}

export interface RecoveryBootstrap {
  source: string;
  recoveryTarget?: { targetTime?: string };
}

/** What a Backup and a ScheduledBackup share: which cluster, and that the plugin takes it (never CNPG's in-tree). */
interface BackupTarget {
  cluster: { name: string };
  method: 'plugin';
  pluginConfiguration: { name: string; parameters?: Record<string, string> };
}

/** CloudNativePG's Backup phases, as its status spells them (api/v1/backup_types.go). */
export type BackupPhase =
  | 'pending'
  | 'started'
  | 'running'
  | 'finalizing'
  | 'completed'
  | 'failed'
  | 'walArchivingFailing'
  | 'invalid backup definition';

export interface CnpgBackup extends KubeObject {
  apiVersion: typeof CNPG_API_VERSION;
  kind: 'Backup';
  spec: BackupTarget;
  status?: { phase?: BackupPhase | string; error?: string; startedAt?: string; stoppedAt?: string; backupId?: string };
}

export interface ScheduledBackup extends KubeObject {
  apiVersion: typeof CNPG_API_VERSION;
  kind: 'ScheduledBackup';
  spec: BackupTarget & {
    /** Six fields, seconds first. */
    schedule: string;
    immediate?: boolean;
    backupOwnerReference?: 'none' | 'self' | 'cluster';
  };
  status?: { lastScheduleTime?: string; nextScheduleTime?: string };
}
