/**
 * Class deletion protection, as Kubernetes' pvc-protection protects a claim a Pod uses: a PostgresClusterClass
 * that some PostgresCluster names carries the finalizer `pgfsm.io/class-in-use`, so that deleting it leaves it
 * Terminating — still there, still read by the clusters that use it — until none does any more. Without it,
 * deleting a class turned every healthy cluster of that class Failed (ClassMissing) while CNPG ran it fine.
 *
 * Pure decisions over what the caches show; the writes and their re-check are the driver's
 * (driver/class-protection.ts), through the class port (core/ports.ts).
 */
import type { PostgresClusterClass } from '../api/schema.ts';
import { namedClass } from './config.ts';
import { isRecord } from './records.ts';

/** The finalizer on a PostgresClusterClass that some PostgresCluster uses. */
export const CLASS_FINALIZER = 'pgfsm.io/class-in-use';

/** The Warning each cluster of a class being deleted gets, once per cluster and deletion. */
export const CLASS_DELETION_EVENT_REASON = 'ClassDeletionWaiting';

/** A PostgresCluster as the decision reads it: untrusted JSON from a cache. */
export interface ClassUser {
  namespace: string;
  name: string;
  uid?: string;
}

/**
 * The clusters that use the class `name`: those naming it in `spec.class` and not being deleted (a cluster
 * being deleted no longer needs its class: its deletion reads none). Never throws, whatever `clusters` holds.
 * `atMost`: stop once that many are found (whether any uses it is all a class not being deleted needs to know,
 * and a fleet's clusters are many).
 */
export function classUsers(name: string, clusters: readonly unknown[], atMost = Number.POSITIVE_INFINITY): ClassUser[] {
  const users: ClassUser[] = [];
  for (const cluster of clusters) {
    if (users.length >= atMost) break;
    if (namedClass(cluster) !== name) continue;
    const metadata = isRecord(cluster) && isRecord(cluster.metadata) ? cluster.metadata : {};
    if (metadata.deletionTimestamp || typeof metadata.name !== 'string') continue;
    users.push({
      namespace: typeof metadata.namespace === 'string' ? metadata.namespace : '',
      name: metadata.name,
      ...(typeof metadata.uid === 'string' ? { uid: metadata.uid } : {}),
    });
  }
  const id = (u: ClassUser) => `${u.namespace}/${u.name}`;
  return users.sort((a, b) => (id(a) < id(b) ? -1 : 1));
}

/**
 * What to do with the class's finalizer:
 * - `add`: some cluster uses it and it has none;
 * - `remove`: none uses it and it has one (the driver re-checks the API before it removes: a cluster the
 *   cache does not show yet may name it);
 * - `keep`: it already is as it should be, or the class is gone.
 * A class being deleted while in use is `keep` too, with `waiting` set: it stays until its last user goes,
 * and its users are told (`classDeletionMessage`). A class being deleted without the finalizer cannot be
 * given one (the API server refuses new finalizers then): it goes, as before.
 */
export type ClassProtection = { action: 'add' | 'remove' | 'keep'; waiting: boolean };

export function classProtection(
  clusterClass: PostgresClusterClass | undefined,
  users: readonly ClassUser[],
): ClassProtection {
  if (!clusterClass) return { action: 'keep', waiting: false };
  const present = (clusterClass.metadata.finalizers ?? []).includes(CLASS_FINALIZER);
  const deleting = Boolean(clusterClass.metadata.deletionTimestamp);
  if (users.length === 0) return { action: present ? 'remove' : 'keep', waiting: false };
  if (deleting) return { action: 'keep', waiting: present };
  return { action: present ? 'keep' : 'add', waiting: false };
}

const MAX_NAMED = 5;

/** `a, b, c and 4 more`. */
function named(names: readonly string[]): string {
  if (names.length <= MAX_NAMED) return names.join(', ');
  return `${names.slice(0, MAX_NAMED).join(', ')} and ${names.length - MAX_NAMED} more`;
}

/**
 * What a cluster of a class being deleted is told. Only the clusters of its own namespace are named: a
 * namespace's Events are read by its team, who need not learn the names of other teams' clusters.
 */
export function classDeletionMessage(className: string, users: readonly ClassUser[], namespace: string): string {
  const here = users.filter((u) => u.namespace === namespace).map((u) => u.name);
  const elsewhere = users.length - here.length;
  const who = [
    ...(here.length > 0 ? [`${named(here)} in ${namespace}`] : []),
    ...(elsewhere > 0 ? [`${elsewhere} in other namespaces`] : []),
  ].join(' and ');
  return (
    `PostgresClusterClass ${className} is being deleted; it stays until no PostgresCluster uses it: ${who}. ` +
    'This cluster keeps running with it'
  );
}
