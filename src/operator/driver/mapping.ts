/**
 * Which PostgresClusters a watched change concerns. Pure functions over the event and lookups into the
 * caches; the controller enqueues whatever they return. Reconciles are level-based, so a superfluous key
 * costs one idempotent pass while a missed one leaves a cluster waiting for its next requeue.
 */
import { isDeepStrictEqual } from 'node:util';
import { BACKUP_NOW_ANNOTATION } from '../api/backup-rules.ts';
import { GROUP, type PostgresCluster } from '../api/schema.ts';
import type { ClusterKey } from '../core/ports.ts';
import { namedClass, referencedRoleSecrets } from '../domain/config.ts';
import type { KubeObject, Pooler } from '../domain/objects.ts';
import { isRecord } from '../domain/records.ts';
import { CLUSTER_LABEL, clusterNameOfChild } from '../domain/vocabulary.ts';
import { clusterOfDatabase, databasesOfSecret } from './database-mapping.ts';
import { SecretNameIndex } from './secret-index.ts';
import type { SourceEvent } from './sources.ts';

export interface MappingLookups {
  /** Cached PostgresClusters, of one namespace or of all. */
  clusters(namespace?: string): readonly PostgresCluster[];
  /** A cached CNPG Pooler. */
  pooler(namespace: string, name: string): Pooler | undefined;
  /**
   * The cached clusters whose managed roles name this password Secret (RoleSecretIndex); without it the
   * mapping scans the namespace's clusters.
   */
  clustersUsingSecret?(namespace: string, name: string): readonly ClusterKey[];
  /** A cached PostgresDatabase: its connection Secrets are the password Secrets of the roles its cluster pushes. */
  database?(namespace: string, name: string): KubeObject | undefined;
  /**
   * The cached PostgresDatabases whose roles' Secrets have this name (database-mapping.ts, `DatabaseSecretIndex`):
   * a Secret of that name, whoever made it, is what their cluster's pass reads as the role's password Secret.
   */
  databasesUsingSecret?(namespace: string, name: string): readonly ClusterKey[];
}

/** The clusters whose managed roles name each password Secret (`clustersUsingSecret`). */
export class RoleSecretIndex extends SecretNameIndex {
  constructor() {
    super('PostgresCluster', (cluster) => referencedRoleSecrets(cluster as PostgresCluster));
  }

  clustersUsing(namespace: string, secret: string): ClusterKey[] {
    return this.using(namespace, secret);
  }
}

/*
 * Cached objects are read as untrusted JSON: a PostgresCluster stored before the CRD rules existed, or
 * written with validation off, may lack `spec` or hold any type anywhere. Such an object is its own failure
 * (its pass stops it in Failed.InvalidSpec); it must never make the mapping throw, which would leave every
 * healthy cluster the same event concerns waiting for the resync.
 */
const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const recordOf = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});
const arrayOf = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);

/** A cached object's key, or undefined when its metadata is not even a name. */
function keyOf(object: unknown): ClusterKey | undefined {
  const metadata = recordOf(recordOf(object).metadata);
  const name = stringOf(metadata.name);
  return name ? { namespace: stringOf(metadata.namespace) ?? '', name } : undefined;
}

/** The keys of the cached clusters that pass a test; a cluster without a readable key is skipped. */
const keysWhere = (clusters: readonly unknown[], test: (cluster: unknown) => boolean): ClusterKey[] =>
  clusters.flatMap((c) => {
    const key = test(c) ? keyOf(c) : undefined;
    return key ? [key] : [];
  });

const sameList = (a: string[] | undefined, b: string[] | undefined) =>
  arrayOf(a).length === arrayOf(b).length && arrayOf(a).every((x, i) => x === arrayOf(b)[i]);

/**
 * What an update of a PostgresCluster changed, as far as its pass goes:
 * - `lifecycle`: what the pass acts on — a new generation (the spec), a deletion timestamp, the finalizers, or
 *   another object under the same name (a uid of its own); also when the generations are missing and nothing
 *   can be told.
 * - `status`: the status and nothing else the pass reads. Either the echo of pgfsm's own status write, which
 *   wakes nothing (the controller knows its versions: echoes.ts), or someone else's, which wakes the cluster so
 *   that its pass writes back what the world says: `kubectl get`, GitOps health checks and alerts read the
 *   status, and a hand-written one must not stand until the next resync.
 * - `unread`: nothing the pass reads, so nothing to wake it for: labels, annotations (the cluster's own are
 *   not read but `pgfsm.io/backup-now`, a change of which is `lifecycle`; `pgfsm.io/adopt` is read on children),
 *   managedFields.
 * Applied to PostgresCluster only: CNPG objects report progress through status without bumping their generation.
 */
export type ClusterUpdate = 'lifecycle' | 'status' | 'unread';

export function clusterUpdateOf(old: KubeObject, next: KubeObject): ClusterUpdate {
  const a = recordOf(recordOf(old).metadata);
  const b = recordOf(recordOf(next).metadata);
  if (a.generation === undefined || b.generation === undefined) return 'lifecycle';
  const same =
    a.uid === b.uid &&
    a.generation === b.generation &&
    a.deletionTimestamp === b.deletionTimestamp &&
    // The one annotation of its own a pass reads: a backup asked for now (issue 36).
    recordOf(a.annotations)[BACKUP_NOW_ANNOTATION] === recordOf(b.annotations)[BACKUP_NOW_ANNOTATION] &&
    sameList(a.finalizers as string[] | undefined, b.finalizers as string[] | undefined);
  if (!same) return 'lifecycle';
  return isDeepStrictEqual(recordOf(old).status, recordOf(next).status) ? 'unread' : 'status';
}

/** The same class at the same generation: its spec did not change (unknown generations: it may have). */
function sameSpecOfClass(old: KubeObject, next: KubeObject): boolean {
  const a = recordOf(recordOf(old).metadata);
  const b = recordOf(recordOf(next).metadata);
  return a.generation !== undefined && a.generation === b.generation && a.uid === b.uid;
}

/** A PostgresCluster update that changed its status and nothing else a pass reads. */
export const isStatusUpdate = ({ type, object, old }: SourceEvent): boolean =>
  type === 'update' &&
  object.kind === 'PostgresCluster' &&
  old !== undefined &&
  clusterUpdateOf(old, object) === 'status';

const isOurs = (owner: Record<string, unknown>) =>
  owner.kind === 'PostgresCluster' && (stringOf(owner.apiVersion)?.startsWith(`${GROUP}/`) ?? false);

/** The cluster a child names, by owner reference first, then by the label every child carries. */
function namedCluster(object: unknown): string | undefined {
  const metadata = recordOf(recordOf(object).metadata);
  const owners = arrayOf(metadata.ownerReferences).map(recordOf);
  const owner = owners.find((o) => isOurs(o) && o.controller === true) ?? owners.find(isOurs);
  return stringOf(owner?.name) || stringOf(recordOf(metadata.labels)[CLUSTER_LABEL]) || undefined;
}

/** A pooler's Deployment is owned by the CNPG Pooler, whose label (or owner) names our cluster. */
function clusterOfPoolerDeployment(object: KubeObject, lookups: MappingLookups): string | undefined {
  const owner = arrayOf(object.metadata.ownerReferences)
    .map(recordOf)
    .find((o) => o.kind === 'Pooler');
  const name = stringOf(owner?.name);
  if (!name) return undefined;
  const pooler = lookups.pooler(object.metadata.namespace ?? '', name);
  return pooler ? namedCluster(pooler) : undefined;
}

/**
 * An object that neither we own nor we labelled, but that has the name one of our children would have
 * (a foreign object blocking the cluster, or one left behind): the cluster of that name, if it exists.
 * The vocabulary that builds child names reads them back.
 */
function clusterByDerivedName(object: KubeObject, lookups: MappingLookups): ClusterKey[] {
  const name = clusterNameOfChild(object.kind, object.metadata.name);
  const namespace = object.metadata.namespace ?? '';
  if (!name) return [];
  return lookups.clusters(namespace).some((c) => keyOf(c)?.name === name) ? [{ namespace, name }] : [];
}

/** Password Secrets of managed roles are the user's: no owner, no label. Every cluster naming one. */
function clustersUsingRoleSecret(secret: KubeObject, lookups: MappingLookups): readonly ClusterKey[] {
  const name = secret.metadata.name;
  if (lookups.clustersUsingSecret) return lookups.clustersUsingSecret(secret.metadata.namespace ?? '', name);
  return keysWhere(lookups.clusters(secret.metadata.namespace ?? ''), (c) => referencedRoleSecrets(c).includes(name));
}

/**
 * A PostgresDatabase's connection Secret is its role's password Secret: the cluster that pushes the role. Whose it
 * is: the database its label or controller reference names, and every database whose roles' Secrets have its name
 * (a Secret planted or handed over under that name has neither, and the cluster's pass reads it all the same).
 */
function clustersOfDatabaseSecret(secret: KubeObject, lookups: MappingLookups): ClusterKey[] {
  const namespace = secret.metadata.namespace ?? '';
  return databasesOfSecret(secret, lookups.databasesUsingSecret).flatMap((key) => {
    const cached = lookups.database?.(namespace, key.name);
    const cluster = cached && clusterOfDatabase(cached);
    return cluster ? [cluster] : [];
  });
}

/**
 * The clusters of the namespace restoring from this one (`spec.restore.source.cluster`, issue 36): its status records
 * its archive and backups, which their restore waits on (domain/backup/recovery.ts). Once they exist they no longer
 * read it, and one pass of theirs finds nothing to do.
 */
function clustersRestoringFrom(source: ClusterKey, lookups: MappingLookups): ClusterKey[] {
  return keysWhere(lookups.clusters(source.namespace), (c) => {
    const restore = recordOf(recordOf(recordOf(c).spec).restore);
    return stringOf(recordOf(restore.source).cluster) === source.name;
  });
}

function dedupe(keys: ClusterKey[]): ClusterKey[] {
  const seen = new Map(keys.map((k) => [`${k.namespace}/${k.name}`, k]));
  return [...seen.values()];
}

/** The clusters to reconcile because of one watch event. Never throws, whatever the caches hold. */
export function clustersFor(event: SourceEvent, lookups: MappingLookups): ClusterKey[] {
  const { object } = event;
  if (!keyOf(object)) return [];
  switch (object.kind) {
    case 'PostgresCluster': {
      if (event.type === 'update' && event.old && clusterUpdateOf(event.old, object) === 'unread') return [];
      const key = keyOf(object);
      return key ? [key, ...clustersRestoringFrom(key, lookups)] : [];
    }
    case 'PostgresDatabase': {
      // Any change, its status included: the cluster lets the roles go once the database's deletion says so.
      const cluster = clusterOfDatabase(object);
      return cluster ? [cluster] : [];
    }
    case 'Database':
      return [];
    case 'PostgresClusterClass':
      // Its metadata alone (its finalizer, its deletion: class-protection.ts) changes nothing a pass reads: while
      // it exists, its clusters read its spec, whose changes move its generation.
      if (event.type === 'update' && event.old && sameSpecOfClass(event.old, object)) return [];
      // Cluster-scoped: clusters in every namespace may use it.
      return keysWhere(lookups.clusters(), (c) => namedClass(c) === object.metadata.name);
    default:
      break;
  }
  const namespace = object.metadata.namespace ?? '';
  const name =
    namedCluster(object) ?? (object.kind === 'Deployment' ? clusterOfPoolerDeployment(object, lookups) : undefined);
  const keys = name ? [{ namespace, name }] : clusterByDerivedName(object, lookups);
  // Whatever else a Secret is, a cluster whose role names it needs to know it changed.
  if (object.kind === 'Secret')
    keys.push(...clustersUsingRoleSecret(object, lookups), ...clustersOfDatabaseSecret(object, lookups));
  return dedupe(keys);
}
