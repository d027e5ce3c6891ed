/**
 * The observation a reconcile tick carries into the statechart: everything the adapters read about one
 * PostgresCluster and its children at one moment. The machine and the health checks see nothing else.
 */
import type { PostgresCluster, PostgresClusterClass, PostgresDatabase } from '../api/schema.ts';
import type { BackupObservation } from './backup/observation.ts';
import type { CnpgCluster, ConfigMap, PoolerView, SecretView } from './objects.ts';

export interface Observation {
  cluster: PostgresCluster;
  /** The class named by `spec.class`; absent when it does not exist. */
  clusterClass?: PostgresClusterClass;
  secret?: SecretView;
  cnpg?: CnpgCluster;
  poolers: { rw?: PoolerView; ro?: PoolerView };
  configMap?: ConfigMap;
  /** Password Secrets named by managed roles, by Secret name; absent entries do not exist. */
  roleSecrets: Record<string, SecretView | undefined>;
  /**
   * The PostgresDatabases of the namespace: the roles of those naming this cluster are pushed with its own
   * (domain/database/roles.ts), their connection Secrets being the roles' password Secrets (in `roleSecrets`).
   */
  databases?: PostgresDatabase[];
  /**
   * The PostgresCluster this one's `spec.restore.source.cluster` names, when it exists: its status records its
   * archive (domain/backup/recovery.ts). Read only while this cluster's CNPG Cluster is not created yet.
   */
  restoreSource?: PostgresCluster;
  /**
   * The backup objects (domain/backup/observation.ts): present only for a cluster whose class has a backup policy
   * (and that does not switch it off) or that restores, so every other cluster observes what it did before.
   */
  backup?: BackupObservation;
}

/** Operator settings that shape desired objects and timing. */
export interface Settings {
  /** Cluster DNS domain used in published endpoints. */
  clusterDomain: string;
  /** How long to wait before looking again while a step waits (ms). */
  requeueDelayMs: number;
  /** How long a waiting state may last before `Stalled` turns True (ms). */
  progressDeadlineMs: number;
}

export const defaultSettings: Settings = {
  clusterDomain: 'cluster.local',
  requeueDelayMs: 15_000,
  progressDeadlineMs: 15 * 60_000,
};

/** The one event type of the lifecycle machine: a reconcile tick with the world as observed. */
export interface TickEvent {
  type: 'tick';
  /** Milliseconds since the epoch; the only clock the core has. */
  now: number;
  observation: Observation;
  settings: Settings;
}
