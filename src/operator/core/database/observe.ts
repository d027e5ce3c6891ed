/** Reads one PostgresDatabase's world through the ports: the observation of its tick. */
import { DNS_1035_LABEL } from '../../api/cnpg-rules.ts';
import type { PostgresDatabase } from '../../api/schema.ts';
import { privilegePlanOf } from '../../domain/database/assessment.ts';
import { cnpgDatabaseRef } from '../../domain/database/cnpg-database.ts';
import { secretRefOf } from '../../domain/database/connection.ts';
import { rolesToConfirmDropped } from '../../domain/database/deletion.ts';
import type { ConnectionSecretView, DatabaseObservation } from '../../domain/database/observation.ts';
import { presenceToConfirm } from '../../domain/database/presence.ts';
import { rolesOf } from '../../domain/database/roles.ts';
import { CNPG_API_VERSION } from '../../domain/objects.ts';
import { childNames } from '../../domain/vocabulary.ts';
import type { ClusterKey } from '../ports.ts';
import type { DatabasePorts } from './ports.ts';

/** A PostgresCluster's name is a DNS-1035 label (its CRD's rule, as CNPG's Services need). */
const CLUSTER_NAME = new RegExp(DNS_1035_LABEL);

export async function observeDatabase(ports: DatabasePorts, database: PostgresDatabase): Promise<DatabaseObservation> {
  const namespace = database.metadata.namespace;
  // The spec may be anything (stored past the CRD rules): a name no object can have is not asked for, and the
  // spec check stops this database in Failed.InvalidSpec naming the field.
  const clusterName =
    typeof database.spec?.cluster === 'string' && CLUSTER_NAME.test(database.spec.cluster)
      ? database.spec.cluster
      : undefined;
  const names = clusterName ? childNames(clusterName) : undefined;
  const roles = rolesOf(database);
  const [cluster, cnpg, endpoints, cnpgDatabase, databases, ...secrets] = await Promise.all([
    clusterName ? ports.clusters.get({ namespace, name: clusterName }) : undefined,
    names
      ? ports.cnpgClusters.get({ apiVersion: CNPG_API_VERSION, kind: 'Cluster', namespace, name: names.cnpgCluster })
      : undefined,
    names ? ports.configMaps.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: names.configMap }) : undefined,
    ports.cnpgDatabases.get(cnpgDatabaseRef(database)),
    ports.databases.list(namespace),
    ...roles.map((role) => ports.connectionSecrets.get(secretRefOf(database, role))),
  ]);
  const byRole: Record<string, ConnectionSecretView | undefined> = {};
  roles.forEach((role, i) => {
    byRole[role.name] = secrets[i] as ConnectionSecretView | undefined;
  });
  const observation: DatabaseObservation = {
    database,
    ...(cluster ? { cluster } : {}),
    ...(cnpg ? { cnpg } : {}),
    ...(endpoints ? { endpoints } : {}),
    ...(cnpgDatabase ? { cnpgDatabase } : {}),
    secrets: byRole,
    databases,
  };
  if (clusterName && rolesToConfirmDropped(observation)) {
    const names = roles.map((r) => r.name);
    observation.rolesInPostgres = await ports.privileges.existingRoles({ namespace, name: clusterName }, names);
  }
  if (clusterName && presenceToConfirm(observation)) {
    const inPostgres = await presence(ports, { namespace, name: clusterName }, database);
    if (inPostgres) observation.inPostgres = inPostgres;
  }
  return observation;
}

/**
 * What PostgreSQL holds, or nothing when it cannot be asked now (a failover, the -rw Service not answering):
 * the checks then judge by CloudNativePG's report, as before the look. Never the reason a pass fails.
 */
async function presence(ports: DatabasePorts, cluster: ClusterKey, database: PostgresDatabase) {
  try {
    return await ports.privileges.inspect(cluster, privilegePlanOf(database, rolesOf(database)));
  } catch {
    return undefined;
  }
}
