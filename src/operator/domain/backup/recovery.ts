/**
 * A restore: which archive the new cluster starts from, whether that archive can give what is asked, and the
 * CNPG Cluster's `bootstrap.recovery` and `externalClusters` that start it. The source's archive is read through an
 * ObjectStore of the restored cluster's own (store.ts), with the SOURCE's server name: CNPG's default would be the
 * new cluster's name, the usual cause of "no backup found".
 */
import { BARMAN_PLUGIN } from '../../api/backup-rules.ts';
import type { PostgresCluster } from '../../api/schema.ts';
import type { CnpgClusterSpec } from '../objects.ts';
import { archivePathOf, RESTORE_SOURCE, sourceStoreName } from './names.ts';
import type { RestoreConfig } from './policy.ts';

/** The archive a restore reads: its server name and folder. */
export interface RecoverySource {
  serverName: string;
  destinationPath: string;
}

export type RestoreResolution =
  | { ok: true; source: RecoverySource }
  /** `wait`: the world may still change it (a first backup, a source being created); otherwise a person must. */
  | { ok: false; field: string; message: string; wait: boolean };

/** What a restore's judgment reads besides the spec: the source PostgresCluster, when the spec names one. */
export interface RestoreWorld {
  cluster: PostgresCluster;
  /** The PostgresCluster `restore.source.cluster` names, as observed; absent when it does not exist. */
  sourceCluster?: PostgresCluster;
  now: number;
}

const problem = (field: string, message: string, wait: boolean): RestoreResolution => ({
  ok: false,
  field,
  message: `${field}: ${message}`,
  wait,
});

/**
 * The archive a restore reads, or why it cannot be read (yet). A source cluster is judged by what its own status
 * records (its archive, its backups, its recoverability window), which its own pass keeps from the plugin's
 * ObjectStore; an archive named by serverName belongs to a cluster that is gone, and nothing tells what it holds,
 * so it is trusted (CNPG's recovery job then says "no target backup found" if it holds nothing that fits).
 */
export function resolveRestore(restore: RestoreConfig, world: RestoreWorld): RestoreResolution {
  const folder = archivePathOf(restore.store.destinationPath, world.cluster.metadata.namespace);
  const target = restore.targetTime;
  if (target !== undefined && Date.parse(target) > world.now) {
    return problem(
      'spec.restore.targetTime',
      `${target} is in the future: PostgreSQL would stop with "recovery ended before configured recovery target was reached"`,
      true,
    );
  }
  if ('serverName' in restore.source) {
    return { ok: true, source: { serverName: restore.source.serverName, destinationPath: folder } };
  }
  const name = restore.source.cluster;
  const field = 'spec.restore.source.cluster';
  const source = world.sourceCluster;
  if (!source) {
    return problem(
      field,
      `PostgresCluster ${name} not found in namespace ${world.cluster.metadata.namespace}: to restore from a cluster that no longer exists, name its archive (restore.source.serverName, the status.backup.serverName it had)`,
      true,
    );
  }
  const archive = source.status?.backup;
  if (!archive) {
    return problem(
      field,
      `PostgresCluster ${name} has no backups: its class has no backup policy, or its spec.backup.enabled is false`,
      true,
    );
  }
  if (archive.destinationPath !== folder) {
    return problem(
      field,
      `PostgresCluster ${name} archives to ${archive.destinationPath}, not to ${folder} of this cluster's class: restore reads only its own class's store`,
      false,
    );
  }
  if (!archive.lastSuccessfulBackupTime) {
    return problem(field, `PostgresCluster ${name} has no completed backup yet: a restore starts from one`, true);
  }
  const first = archive.firstRecoverabilityPoint;
  if (target !== undefined && first !== undefined && Date.parse(target) < Date.parse(first)) {
    return problem(
      'spec.restore.targetTime',
      `${target} is before ${first}, the first point PostgresCluster ${name}'s backups can recover to`,
      false,
    );
  }
  return { ok: true, source: { serverName: archive.serverName, destinationPath: archive.destinationPath } };
}

/**
 * The CNPG Cluster fields that start it from the archive: recovery from the external cluster RESTORE_SOURCE, read
 * by the plugin through the cluster's source store. No database, owner or secret: the restored database already
 * has its roles and databases, and CNPG sets the superuser's password from superuserSecret once it runs.
 */
export function recoveryOf(
  cluster: PostgresCluster,
  restore: RestoreConfig,
  source: RecoverySource,
): Pick<CnpgClusterSpec, 'bootstrap' | 'externalClusters'> {
  return {
    bootstrap: {
      recovery: {
        source: RESTORE_SOURCE,
        ...(restore.targetTime !== undefined ? { recoveryTarget: { targetTime: restore.targetTime } } : {}),
      },
    },
    externalClusters: [
      {
        name: RESTORE_SOURCE,
        plugin: {
          name: BARMAN_PLUGIN,
          parameters: { barmanObjectName: sourceStoreName(cluster.metadata.name), serverName: source.serverName },
        },
      },
    ],
  };
}
