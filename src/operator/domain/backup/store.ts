/**
 * The plugin's ObjectStore a cluster archives to, the read-only one a restored cluster reads its source through,
 * and the entry of the CNPG Cluster's `spec.plugins` that makes the plugin archive its WAL. Pure builders over the
 * merged config (policy.ts) and the names (names.ts).
 */
import { BARMAN_API_VERSION, BARMAN_PLUGIN } from '../../api/backup-rules.ts';
import type { PostgresCluster } from '../../api/schema.ts';
import { childLabels, ownerReferenceTo } from '../vocabulary.ts';
import { archivePathOf, objectStoreName, serverNameOf, sourceStoreName } from './names.ts';
import type { ObjectStore, ObjectStoreSpec, PluginConfiguration } from './objects.ts';
import type { BackupConfig, StoreConfig } from './policy.ts';

/**
 * boto3 1.36 and later send and check checksums that many S3-compatible stores do not know ("Checksum Type
 * mismatch", plugin issues #393 and #512): only when the store asks for them, which AWS S3 does itself.
 */
const CHECKSUMS_WHEN_REQUIRED = [
  { name: 'AWS_REQUEST_CHECKSUM_CALCULATION', value: 'when_required' },
  { name: 'AWS_RESPONSE_CHECKSUM_VALIDATION', value: 'when_required' },
];

/** The archive of a cluster: its server name and folder. The cluster must have a uid (policy.ts checks it). */
export const archiveOf = (cluster: PostgresCluster, store: StoreConfig) => ({
  serverName: serverNameOf({ metadata: { name: cluster.metadata.name, uid: cluster.metadata.uid ?? '' } }),
  destinationPath: archivePathOf(store.destinationPath, cluster.metadata.namespace),
  objectStore: objectStoreName(cluster.metadata.name),
});

/** Where and how to reach the store: the same for writing and reading, credentials by reference only. */
function connection(store: StoreConfig, destinationPath: string): ObjectStoreSpec['configuration'] {
  const { credentials } = store;
  const key = (k: string) => ({ name: credentials.secretName, key: k });
  return {
    destinationPath,
    ...(store.endpointURL !== undefined ? { endpointURL: store.endpointURL } : {}),
    ...(store.endpointCA !== undefined
      ? { endpointCA: { name: store.endpointCA.secretName, key: store.endpointCA.key } }
      : {}),
    s3Credentials: {
      accessKeyId: key(credentials.accessKeyIdKey),
      secretAccessKey: key(credentials.secretAccessKeyKey),
      ...(credentials.regionKey !== undefined ? { region: key(credentials.regionKey) } : {}),
    },
  };
}

const storeObject = (cluster: PostgresCluster, name: string, spec: ObjectStoreSpec): ObjectStore => ({
  apiVersion: BARMAN_API_VERSION,
  kind: 'ObjectStore',
  metadata: {
    name,
    namespace: cluster.metadata.namespace,
    labels: childLabels(cluster.metadata.name),
    ownerReferences: [ownerReferenceTo(cluster)],
  },
  spec,
});

/**
 * The store the cluster archives to. `immediateCheckpoint`: a base backup starts at once instead of after a spread
 * checkpoint (up to checkpoint_timeout × checkpoint_completion_target, 4.5 minutes by default), which a backup
 * asked for now should not wait for; the cost is one burst of writes per backup.
 */
export function desiredObjectStore(cluster: PostgresCluster, backup: BackupConfig): ObjectStore {
  const { destinationPath, objectStore } = archiveOf(cluster, backup.store);
  return storeObject(cluster, objectStore, {
    retentionPolicy: backup.retention,
    configuration: {
      ...connection(backup.store, destinationPath),
      ...(backup.walCompression ? { wal: { compression: backup.walCompression } } : {}),
      data: { immediateCheckpoint: true, ...(backup.dataCompression ? { compression: backup.dataCompression } : {}) },
    },
    instanceSidecarConfiguration: { env: CHECKSUMS_WHEN_REQUIRED },
  });
}

/**
 * The store a restored cluster reads its source's archive through: no retention (nothing of this cluster's prunes
 * an archive that is not its own) and no compression (barman reads what each file says).
 */
export function desiredSourceStore(cluster: PostgresCluster, store: StoreConfig, destinationPath: string): ObjectStore {
  return storeObject(cluster, sourceStoreName(cluster.metadata.name), {
    configuration: connection(store, destinationPath),
    instanceSidecarConfiguration: { env: CHECKSUMS_WHEN_REQUIRED },
  });
}

/** The CNPG Cluster's `spec.plugins`: the plugin archives the WAL, under the cluster's own server name. */
export function pluginsOf(cluster: PostgresCluster, backup: BackupConfig): PluginConfiguration[] {
  const { serverName, objectStore } = archiveOf(cluster, backup.store);
  return [{ name: BARMAN_PLUGIN, isWALArchiver: true, parameters: { barmanObjectName: objectStore, serverName } }];
}
