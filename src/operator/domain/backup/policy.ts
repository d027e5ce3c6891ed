/**
 * A cluster's backups and restore, merged from its class's policy and its own spec, and validated: the part of the
 * merge check (domain/config.ts) that is about backups. Invalid input never throws: it names the field, the
 * cluster's own or the class's, and the cluster stops in Failed.InvalidSpec until one of them changes.
 *
 * The schemas have already judged the patterns and enums (firstSchemaError in config.ts); what only CEL judges at
 * admission (a 5-field cron, exactly one restore source, a zone on the target time) is judged again here, for an
 * object stored before the rule existed, and so is what only shows once the cluster meets its class.
 */
import {
  type DATA_COMPRESSIONS,
  DEFAULT_ACCESS_KEY_ID_KEY,
  DEFAULT_SECRET_ACCESS_KEY_KEY,
  isCalendarTime,
  type WAL_COMPRESSIONS,
} from '../../api/backup-rules.ts';
import { cronProblem } from '../../api/cron.ts';
import type { ObjectStorePolicy, PostgresCluster, PostgresClusterClass } from '../../api/schema.ts';
import { classField } from '../field-names.ts';
import { serverNameOf } from './names.ts';

/** The class's store with every default filled in. */
export interface StoreConfig {
  destinationPath: string;
  endpointURL?: string;
  endpointCA?: { secretName: string; key: string };
  credentials: { secretName: string; accessKeyIdKey: string; secretAccessKeyKey: string; regionKey?: string };
}

/** A cluster's backups, when they are on: the class's store, with the cluster's schedule and retention over the class's. */
export interface BackupConfig {
  store: StoreConfig;
  /** Five fields, as the user wrote it (api/cron.ts converts it for CloudNativePG). */
  schedule: string;
  retention: string;
  walCompression?: (typeof WAL_COMPRESSIONS)[number];
  dataCompression?: (typeof DATA_COMPRESSIONS)[number];
}

/** Where a restored cluster starts from: the spec's source and target, and the class's store it reads through. */
export interface RestoreConfig {
  source: { cluster: string } | { serverName: string };
  targetTime?: string;
  store: StoreConfig;
}

export type BackupMerge =
  | { ok: true; backup?: BackupConfig; restore?: RestoreConfig }
  | { ok: false; field: string; message: string };

const refuse = (field: string, message: string): BackupMerge => ({ ok: false, field, message: `${field}: ${message}` });

export function storeConfig(policy: ObjectStorePolicy): StoreConfig {
  const { credentials } = policy;
  return {
    destinationPath: policy.destinationPath,
    ...(policy.endpointURL !== undefined ? { endpointURL: policy.endpointURL } : {}),
    ...(policy.endpointCA !== undefined ? { endpointCA: { ...policy.endpointCA } } : {}),
    credentials: {
      secretName: credentials.secretName,
      accessKeyIdKey: credentials.accessKeyIdKey ?? DEFAULT_ACCESS_KEY_ID_KEY,
      secretAccessKeyKey: credentials.secretAccessKeyKey ?? DEFAULT_SECRET_ACCESS_KEY_KEY,
      ...(credentials.regionKey !== undefined ? { regionKey: credentials.regionKey } : {}),
    },
  };
}

/** The cluster's backups and restore over its class's policy; both specs have passed their schemas. */
export function mergeBackup(cluster: PostgresCluster, clusterClass: PostgresClusterClass): BackupMerge {
  const own = cluster.spec.backup;
  const policy = clusterClass.spec.backup;
  const className = clusterClass.metadata.name;
  if (own?.enabled === false && (own.schedule !== undefined || own.retention !== undefined)) {
    const field = own.schedule !== undefined ? 'spec.backup.schedule' : 'spec.backup.retention';
    return refuse(field, 'has no effect when spec.backup.enabled is false: remove it');
  }
  if (!policy) {
    if (own?.enabled === true) {
      return refuse(
        'spec.backup.enabled',
        `true needs a backup policy in class ${className} (its spec.backup names the object store), and it has none: leave enabled out, or ask for a class with one`,
      );
    }
    const override = own?.schedule !== undefined ? 'schedule' : own?.retention !== undefined ? 'retention' : undefined;
    if (override) {
      return refuse(`spec.backup.${override}`, `has no effect: class ${className} has no backup policy`);
    }
    if (cluster.spec.restore) {
      return refuse(
        'spec.restore',
        `class ${className} has no backup policy (spec.backup.objectStore), so there is no object store to restore from`,
      );
    }
    return { ok: true };
  }
  const schedule = own?.schedule ?? policy.schedule;
  const scheduleField =
    own?.schedule !== undefined ? 'spec.backup.schedule' : classField(clusterClass, 'backup.schedule');
  const problem = cronProblem(schedule);
  if (problem) return refuse(scheduleField, problem);

  const restore = cluster.spec.restore;
  const uid = cluster.metadata.uid;
  const enabled = own?.enabled !== false;
  if ((enabled || restore) && !uid) {
    return refuse('metadata.uid', 'not set: the archive is named after the cluster and its uid');
  }
  const store = storeConfig(policy.objectStore);
  const backup: BackupConfig = {
    store,
    schedule,
    retention: own?.retention ?? policy.retention,
    ...(policy.walCompression ? { walCompression: policy.walCompression } : {}),
    ...(policy.dataCompression ? { dataCompression: policy.dataCompression } : {}),
  };
  if (!restore) return { ok: true, ...(enabled ? { backup } : {}) };

  const restoreProblem = restoreRefusal(cluster, restore);
  if (restoreProblem) return restoreProblem;
  const source =
    restore.source.cluster !== undefined
      ? { cluster: restore.source.cluster }
      : { serverName: restore.source.serverName ?? '' };
  return {
    ok: true,
    ...(enabled ? { backup } : {}),
    restore: { source, ...(restore.targetTime !== undefined ? { targetTime: restore.targetTime } : {}), store },
  };
}

/** What is wrong with a restore on its own, before any source is looked at. */
function restoreRefusal(
  cluster: PostgresCluster,
  restore: NonNullable<PostgresCluster['spec']['restore']>,
): BackupMerge | undefined {
  const { cluster: sourceCluster, serverName } = restore.source;
  if ((sourceCluster === undefined) === (serverName === undefined)) {
    return refuse('spec.restore.source', 'must name exactly one of cluster and serverName');
  }
  if (sourceCluster === cluster.metadata.name) {
    return refuse(
      'spec.restore.source.cluster',
      'must name another PostgresCluster: a new cluster has no backups of its own',
    );
  }
  const uid = cluster.metadata.uid ?? '';
  if (serverName !== undefined && serverName === serverNameOf({ metadata: { name: cluster.metadata.name, uid } })) {
    return refuse('spec.restore.source.serverName', `${serverName} is this cluster's own archive, which is empty`);
  }
  const target = restore.targetTime;
  if (target !== undefined && !isCalendarTime(target)) {
    return refuse(
      'spec.restore.targetTime',
      `${target} is no RFC 3339 time with a zone (e.g. 2026-11-20T10:15:30Z or 2026-11-20T11:15:30+01:00); a time without a zone would be read as UTC`,
    );
  }
  return undefined;
}
