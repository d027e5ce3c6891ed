/**
 * Which PostgresClusters a watched change concerns. Pure functions over the event and lookups into the
 * caches; the controller enqueues whatever they return. Reconciles are level-based, so a superfluous key
 * costs one idempotent pass while a missed one leaves a cluster waiting for its next requeue.
 */
import { GROUP, type PostgresCluster } from '../api/schema.ts';
import type { ClusterKey } from '../core/ports.ts';
import type { KubeObject, Pooler } from '../domain/objects.ts';
import { CLUSTER_LABEL, clusterNameOfChild } from '../domain/vocabulary.ts';
import type { SourceEvent } from './sources.ts';

export interface MappingLookups {
  /** Cached PostgresClusters, of one namespace or of all. */
  clusters(namespace?: string): readonly PostgresCluster[];
  /** A cached CNPG Pooler. */
  pooler(namespace: string, name: string): Pooler | undefined;
}

const keyOf = (object: KubeObject): ClusterKey => ({
  namespace: object.metadata.namespace ?? '',
  name: object.metadata.name,
});

const sameList = (a: string[] | undefined, b: string[] | undefined) =>
  (a ?? []).length === (b ?? []).length && (a ?? []).every((x, i) => x === b?.[i]);

/**
 * Our own status writes (and label or annotation edits) must not wake the cluster again: only a new
 * generation (spec), a deletion timestamp or a finalizer change does. Applied to PostgresCluster only:
 * CNPG objects report progress through status without bumping their generation.
 */
export function isStatusOnlyUpdate(old: KubeObject, next: KubeObject): boolean {
  const a = old.metadata;
  const b = next.metadata;
  if (a.generation === undefined || b.generation === undefined) return false;
  return (
    a.generation === b.generation && a.deletionTimestamp === b.deletionTimestamp && sameList(a.finalizers, b.finalizers)
  );
}

const isOurs = (owner: { apiVersion: string; kind: string }) =>
  owner.kind === 'PostgresCluster' && owner.apiVersion.startsWith(`${GROUP}/`);

/** The cluster a child names, by owner reference first, then by the label every child carries. */
function namedCluster(object: KubeObject): string | undefined {
  const owners = object.metadata.ownerReferences ?? [];
  const owner = owners.find((o) => isOurs(o) && o.controller) ?? owners.find(isOurs);
  return owner?.name ?? object.metadata.labels?.[CLUSTER_LABEL];
}

/** A pooler's Deployment is owned by the CNPG Pooler, whose label (or owner) names our cluster. */
function clusterOfPoolerDeployment(object: KubeObject, lookups: MappingLookups): string | undefined {
  const owner = (object.metadata.ownerReferences ?? []).find((o) => o.kind === 'Pooler');
  if (!owner) return undefined;
  const pooler = lookups.pooler(object.metadata.namespace ?? '', owner.name);
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
  return lookups.clusters(namespace).some((c) => c.metadata.name === name) ? [{ namespace, name }] : [];
}

/** Password Secrets of managed roles are the user's: no owner, no label. Every cluster naming one. */
function clustersUsingRoleSecret(secret: KubeObject, lookups: MappingLookups): ClusterKey[] {
  const namespace = secret.metadata.namespace ?? '';
  return lookups
    .clusters(namespace)
    .filter((c) => (c.spec.managedRoles ?? []).some((r) => r.passwordSecretRef?.name === secret.metadata.name))
    .map(keyOf);
}

function dedupe(keys: ClusterKey[]): ClusterKey[] {
  const seen = new Map(keys.map((k) => [`${k.namespace}/${k.name}`, k]));
  return [...seen.values()];
}

/** The clusters to reconcile because of one watch event. */
export function clustersFor(event: SourceEvent, lookups: MappingLookups): ClusterKey[] {
  const { object } = event;
  switch (object.kind) {
    case 'PostgresCluster':
      if (event.type === 'update' && event.old && isStatusOnlyUpdate(event.old, object)) return [];
      return [keyOf(object)];
    case 'PostgresClusterClass':
      // Cluster-scoped: clusters in every namespace may use it.
      return lookups
        .clusters()
        .filter((c) => c.spec.class === object.metadata.name)
        .map(keyOf);
    default:
      break;
  }
  const namespace = object.metadata.namespace ?? '';
  const name =
    namedCluster(object) ?? (object.kind === 'Deployment' ? clusterOfPoolerDeployment(object, lookups) : undefined);
  const keys = name ? [{ namespace, name }] : clusterByDerivedName(object, lookups);
  // Whatever else a Secret is, a cluster whose role names it needs to know it changed.
  if (object.kind === 'Secret') keys.push(...clustersUsingRoleSecret(object, lookups));
  return dedupe(keys);
}
