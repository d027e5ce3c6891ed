/**
 * What a pass reads about a cluster's backups (issue 36), and which objects that is. Pure: the shell
 * (core/observe.ts) asks `backupReadsOf` what to read, reads it through the ports, and hands the result to the
 * machine in the tick. A cluster with no backup policy and no restore reads nothing more than before.
 *
 * The refs come from the raw spec and class, not from the merged config: the spec may be anything (stored before a
 * rule existed), the merge check names what is wrong, and a read of a name that is not there costs nothing.
 */
import { BACKUP_NOW_ANNOTATION, BACKUP_NOW_TOKEN_PATTERN, BARMAN_API_VERSION } from '../../api/backup-rules.ts';
import { isDns1123Subdomain } from '../../api/cnpg-rules.ts';
import type { PostgresCluster, PostgresClusterClass } from '../../api/schema.ts';
import { CNPG_API_VERSION, type ObjectRef, type SecretView } from '../objects.ts';
import { objectStoreName, onDemandBackupName, scheduledBackupName, sourceStoreName } from './names.ts';
import type { CnpgBackup, ObjectStore, ScheduledBackup } from './objects.ts';

/** The backup objects of one cluster as observed; each absent when it does not exist (or was not read). */
export interface BackupObservation {
  /** `<cluster>-backups`: the store the cluster archives to. */
  store?: ObjectStore;
  /** `<cluster>-restore-source`: the read-only store a restore reads its source through. */
  sourceStore?: ObjectStore;
  scheduled?: ScheduledBackup;
  /** The Backup the annotation's current token names. */
  onDemand?: CnpgBackup;
  /** The Secrets the class's store names, in the cluster's namespace: key names only, never values. */
  secrets: { credentials?: SecretView; endpointCA?: SecretView };
}

/** Which objects to read; each absent when there is nothing of that kind to read. */
export interface BackupReads {
  store?: ObjectRef;
  sourceStore?: ObjectRef;
  scheduled?: ObjectRef;
  onDemand?: ObjectRef;
  credentials?: ObjectRef;
  endpointCA?: ObjectRef;
  /** The PostgresCluster `spec.restore.source.cluster` names (same namespace). */
  restoreSource?: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A name the API can be asked for: anything else would be a subresource or a refused request on every pass. */
const readableName = (value: unknown): string | undefined =>
  typeof value === 'string' && isDns1123Subdomain(value) ? value : undefined;

const secretName = (reference: unknown) => (isRecord(reference) ? readableName(reference.secretName) : undefined);

/**
 * The objects a pass reads for the cluster's backups and restore: none unless its class has a backup policy (and the
 * cluster does not switch it off) or the cluster restores. `clusterClass` absent: the class is missing, which the
 * merge check reports; nothing is read. A cluster whose status still records an archive (`status.backup`) had
 * backups and may have them switched off since: its store and ScheduledBackup are read, so that they are deleted
 * (judge.ts retiredObjects); the status drops the record once they are gone, and the reads stop.
 */
export function backupReadsOf(cluster: PostgresCluster, clusterClass: PostgresClusterClass | undefined): BackupReads {
  const spec: Record<string, unknown> = isRecord(cluster.spec) ? cluster.spec : {};
  const policy = isRecord(clusterClass?.spec) ? clusterClass.spec.backup : undefined;
  const store = isRecord(policy) && isRecord(policy.objectStore) ? policy.objectStore : undefined;
  const restore = isRecord(spec.restore) ? spec.restore : undefined;
  const { namespace, name } = cluster.metadata;
  const ref = (apiVersion: string, kind: string, objectName: string): ObjectRef => ({
    apiVersion,
    kind,
    namespace,
    name: objectName,
  });
  const recorded = isRecord(cluster.status) && isRecord(cluster.status.backup);
  const own = (): BackupReads => ({
    store: ref(BARMAN_API_VERSION, 'ObjectStore', objectStoreName(name)),
    scheduled: ref(CNPG_API_VERSION, 'ScheduledBackup', scheduledBackupName(name)),
  });
  if (!store) return recorded ? own() : {};
  const secret = (reference: unknown) => {
    const found = secretName(reference);
    return found ? ref('v1', 'Secret', found) : undefined;
  };
  const enabled = !(isRecord(spec.backup) && spec.backup.enabled === false);
  const token = cluster.metadata.annotations?.[BACKUP_NOW_ANNOTATION];
  const source = restore && isRecord(restore.source) ? readableName(restore.source.cluster) : undefined;
  const reads: BackupReads = {};
  const credentials = secret(store.credentials);
  const endpointCA = secret(store.endpointCA);
  if (credentials) reads.credentials = credentials;
  if (endpointCA) reads.endpointCA = endpointCA;
  if (enabled || recorded) Object.assign(reads, own());
  if (enabled) {
    if (token !== undefined && new RegExp(BACKUP_NOW_TOKEN_PATTERN).test(token)) {
      reads.onDemand = ref(CNPG_API_VERSION, 'Backup', onDemandBackupName(name, token));
    }
  }
  if (restore) reads.sourceStore = ref(BARMAN_API_VERSION, 'ObjectStore', sourceStoreName(name));
  if (source) reads.restoreSource = source;
  // Neither backed up nor restoring nor with anything left of its backups: no Secret matters either.
  return enabled || restore || recorded ? reads : {};
}
