/** Worlds for the backup tests: the fixture's healthy cluster, its class with a backup policy, a restore. */
import type { ClassBackup, PostgresCluster, PostgresClusterSpec } from '../../../src/operator/api/schema.ts';
import { type MergedConfig, mergeConfig } from '../../../src/operator/domain/config.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { BACKUP_POLICY } from '../../../src/tools/fixtures/backups.ts';
import { CLUSTER_UID, healthyFacts, makeClass, observe } from '../../../src/tools/fixtures/observations.ts';

/** The fixture cluster's uid (its children's owner references name it): `uid-orde` goes into the archive's name. */
export const UID = CLUSTER_UID;
export const SERVER_NAME = 'orders-uid-orde';

/** The fixtures' class policy (src/tools/fixtures/backups.ts), one for every backup test. */
export const POLICY: ClassBackup = BACKUP_POLICY;

export const backupClass = (policy: Partial<ClassBackup> = {}) => makeClass({ backup: { ...POLICY, ...policy } });

/**
 * The healthy world (cluster orders of namespace team-a), the class `clusterClass` (with a policy unless told), the
 * spec edited by `spec`, and no CNPG Cluster when `created` is false.
 */
export function backupWorld(
  spec: Partial<PostgresClusterSpec> = {},
  options: { clusterClass?: ReturnType<typeof makeClass>; created?: boolean; name?: string } = {},
): Observation {
  const base = observe(healthyFacts);
  const cluster: PostgresCluster = {
    ...base.cluster,
    metadata: { ...base.cluster.metadata, uid: UID, ...(options.name ? { name: options.name } : {}) },
    spec: { ...base.cluster.spec, ...spec },
  };
  const observation: Observation = { ...base, cluster, clusterClass: options.clusterClass ?? backupClass() };
  if (options.created === false) delete observation.cnpg;
  return observation;
}

export function mergedOf(observation: Observation): MergedConfig {
  const merged = mergeConfig(observation);
  if (!merged.ok) throw new Error(`expected a valid config, got: ${merged.message}`);
  return merged.config;
}
