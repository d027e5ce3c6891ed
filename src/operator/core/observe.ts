/** Reads one PostgresCluster's world through the ports: the observation of a tick. */
import { isDns1123Subdomain } from '../api/cnpg-rules.ts';
import type { PostgresCluster, PostgresDatabase } from '../api/schema.ts';
import { type BackupObservation, type BackupReads, backupReadsOf } from '../domain/backup/observation.ts';
import { cnpgRef } from '../domain/components/cluster.ts';
import { configMapRef } from '../domain/components/configmap.ts';
import { poolerRef } from '../domain/components/pooler.ts';
import { secretRef } from '../domain/components/secret.ts';
import { namedClass, referencedRoleSecrets } from '../domain/config.ts';
import { claimsOn } from '../domain/database/claims.ts';
import type { SecretView } from '../domain/objects.ts';
import type { Observation } from '../domain/observation.ts';
import type { Ports } from './ports.ts';

export async function observeCluster(ports: Ports, cluster: PostgresCluster): Promise<Observation> {
  // Refs only need names, which come from the cluster alone.
  const base: Observation = { cluster, poolers: {}, roleSecrets: {} };
  const namespace = cluster.metadata.namespace;
  // The spec may be anything (stored before the CRD rules, or with validation off): read what can be
  // read, and leave the rest to the merge check, which stops this cluster alone in Failed.InvalidSpec.
  const className = namedClass(cluster);
  // A name no Secret can have is not asked for: one with '/' would be a subresource request, refused on
  // every pass. The merge check names the field instead.
  const [databases, claims] = await databasesNaming(ports, cluster);
  const roleSecretNames = [...new Set([...referencedRoleSecrets(cluster), ...claims])].filter(isDns1123Subdomain);
  const [clusterClass, secret, cnpg, rw, ro, configMap, ...roleSecrets] = await Promise.all([
    className ? ports.classes.get(className) : undefined,
    ports.secrets.get(secretRef(base)),
    ports.cnpgClusters.get(cnpgRef(base)),
    ports.poolers.view(poolerRef(base, 'rw')),
    ports.poolers.view(poolerRef(base, 'ro')),
    ports.configMaps.get(configMapRef(base)),
    ...roleSecretNames.map((name) => ports.secrets.get({ apiVersion: 'v1', kind: 'Secret', namespace, name })),
  ]);
  const roleSecretsByName: Record<string, SecretView | undefined> = {};
  roleSecretNames.forEach((name, i) => {
    roleSecretsByName[name] = roleSecrets[i] as SecretView | undefined;
  });
  // Second round: which backup objects to read depends on the class just read.
  const reads = backupReadsOf(cluster, clusterClass);
  const [backup, restoreSource] = await Promise.all([
    observeBackup(ports, reads),
    // The source only matters until this cluster's CNPG Cluster exists: it was restored then.
    reads.restoreSource !== undefined && !cnpg
      ? ports.clusters.get({ namespace, name: reads.restoreSource })
      : undefined,
  ]);
  return {
    cluster,
    ...(clusterClass ? { clusterClass } : {}),
    ...(secret ? { secret } : {}),
    ...(cnpg ? { cnpg } : {}),
    poolers: { ...(rw ? { rw } : {}), ...(ro ? { ro } : {}) },
    ...(configMap ? { configMap } : {}),
    roleSecrets: roleSecretsByName,
    databases,
    ...(backup ? { backup } : {}),
    ...(restoreSource ? { restoreSource } : {}),
  };
}

/** The backup objects `reads` names, or undefined when it names none (no backup policy, no restore). */
async function observeBackup(ports: Ports, reads: BackupReads): Promise<BackupObservation | undefined> {
  const { store, sourceStore, scheduled, onDemand, credentials, endpointCA } = reads;
  if (!store && !sourceStore && !credentials && !endpointCA) return undefined;
  const objects = ports.backupObjects;
  const [storeSeen, sourceSeen, scheduledSeen, onDemandSeen, credentialsSeen, caSeen] = await Promise.all([
    store && objects?.objectStores.get(store),
    sourceStore && objects?.objectStores.get(sourceStore),
    scheduled && objects?.scheduledBackups.get(scheduled),
    onDemand && objects?.backups.get(onDemand),
    credentials && ports.secrets.get(credentials),
    endpointCA && ports.secrets.get(endpointCA),
  ]);
  return {
    ...(storeSeen ? { store: storeSeen } : {}),
    ...(sourceSeen ? { sourceStore: sourceSeen } : {}),
    ...(scheduledSeen ? { scheduled: scheduledSeen } : {}),
    ...(onDemandSeen ? { onDemand: onDemandSeen } : {}),
    secrets: {
      ...(credentialsSeen ? { credentials: credentialsSeen } : {}),
      ...(caSeen ? { endpointCA: caSeen } : {}),
    },
  };
}

/** The namespace's PostgresDatabases, and the password Secrets of the roles this cluster pushes for them. */
async function databasesNaming(ports: Ports, cluster: PostgresCluster): Promise<[PostgresDatabase[], string[]]> {
  const databases = await ports.databases.list(cluster.metadata.namespace);
  const { roles } = claimsOn(cluster, databases);
  const secrets = [...roles.values()].filter((r) => r.ensure === 'present').map((r) => r.secretName);
  return [databases, secrets];
}
