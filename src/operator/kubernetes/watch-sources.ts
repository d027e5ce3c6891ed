/**
 * The informers the operator runs, one per kind whose changes can wake a PostgresCluster.
 *
 * Filtering, per kind:
 * - PostgresCluster, PostgresClusterClass: everything (ours by definition; classes are cluster-scoped,
 *   so they are watched cluster-wide even when `namespaces` narrows the rest).
 * - CNPG Cluster and Pooler: everything in scope. Their status is what the lifecycle waits on, and a
 *   foreign object that merely has the name of our child must wake its cluster when it goes away.
 * - ConfigMap: every one in scope, metadata-only. The pass must see a foreign ConfigMap that has our
 *   child's name (to refuse adopting it), which a label selector would hide; metadata is all a ConfigMap
 *   of someone else costs. The data of ours is read by a GET when its resourceVersion moves (cache-reads.ts).
 * - Deployment: only those CNPG made for a Pooler. The API server sends only Deployments labelled
 *   `cnpg.io/poolerName` (CNPG labels its pooler Deployments so since v1.22; pgfsm requires 1.28,
 *   docs/operations.md, and test/integration/cnpg.test.ts checks it on the real CNPG): the other Deployments
 *   of a busy cluster, whose status changes with every rollout and scale, never reach the operator. In the
 *   client, those left are kept only if a Pooler owns them (a label anyone can set), trimmed to metadata and
 *   `status.readyReplicas` (the pooler's readiness signal), which keeps the cache small. Under a CNPG older
 *   than v1.22 (no label) every pooler would wait for a Deployment it never sees.
 * - Secret: NOT label-filtered. The password Secrets of managed roles belong to the user and carry no
 *   label or owner, and a label selector cannot say "ours, or named by some cluster". Requiring users to
 *   label them would make a forgotten label silently delay role creation until the next requeue. Instead
 *   Secrets are watched metadata-only (PartialObjectMetadata): the API server never sends their data to
 *   the operator, the cache holds names and labels only, and unrelated Secrets cost a map lookup in the
 *   mapping and no reconcile. The RBAC cost (list/watch on secrets in scope) is the same either way,
 *   since the ports must read those Secrets anyway.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { PostgresCluster, PostgresClusterClass, PostgresDatabase } from '../api/schema.ts';
import type { CnpgDatabase } from '../domain/database/observation.ts';
import {
  CNPG_API_VERSION,
  type CnpgCluster,
  type KubeObject,
  POOLER_NAME_LABEL,
  type Pooler,
} from '../domain/objects.ts';
import type { ObjectSource, WatchSources } from '../driver/sources.ts';
import { Informer, type InformerLog, type InformerOptions } from './informer.ts';
import { MultiNamespaceSource } from './multi-namespace.ts';
import { RESOURCES, type ResourceType } from './resources.ts';

export type Timing = Pick<
  InformerOptions<KubeObject>,
  'relistIntervalMs' | 'silentAfterMs' | 'backoffBaseMs' | 'backoffMaxMs' | 'pageSize' | 'requestTimeoutMs'
>;

export interface WatchSourceOptions {
  /**
   * Watch only these namespaces (namespaced kinds; classes stay cluster-wide); default all. Several
   * namespaces mean one informer per kind and namespace, merged (multi-namespace.ts): the token of the
   * namespaced install may list and watch only inside each of them.
   */
  namespaces?: readonly string[];
  /** One namespace: the same as `namespaces: [namespace]`. */
  namespace?: string;
  log?: InformerLog;
  timing?: Timing;
}

/** managedFields can outweigh the object itself and nothing here reads them. */
export function slim<T extends KubeObject>(object: T): T {
  if (!object.metadata || !('managedFields' in object.metadata)) return object;
  const { managedFields: _, ...metadata } = object.metadata as T['metadata'] & { managedFields?: unknown };
  return { ...object, metadata };
}

/** Only the metadata stays, whatever the server sent: no Secret value is ever held in memory. */
export const metadataOf = <T extends KubeObject>(object: T): T =>
  ({ apiVersion: object.apiVersion, kind: object.kind, metadata: slim(object).metadata }) as T;

const ownedByPooler = (object: KubeObject) =>
  (object.metadata.ownerReferences ?? []).some(
    (o) => o.kind === 'Pooler' && o.apiVersion.startsWith(`${CNPG_API_VERSION.split('/')[0]}/`),
  );

/** A Deployment as the cache keeps it: its metadata and how many of its replicas are ready. */
export const readinessOf = <T extends KubeObject>(object: T): T => {
  const ready = (object as { status?: { readyReplicas?: unknown } }).status?.readyReplicas;
  return {
    ...metadataOf(object),
    ...(typeof ready === 'number' ? { status: { readyReplicas: ready } } : {}),
  } as T;
};

/** How each kind is watched (the reasons are in this module's comment). */
export interface WatchShape {
  resource: ResourceType;
  /** Ask the server for metadata only, and keep nothing else. */
  metadataOnly?: boolean;
  /** What the cache keeps of a full object, when not all of it (default: all but managedFields). */
  keep?: <T extends KubeObject>(object: T) => T;
  /** A client-side filter, for what no selector can express. */
  filter?: (object: KubeObject) => boolean;
  /** The label an object must carry to be sent at all: the watch's label selector (the key exists). */
  requiredLabel?: string;
}

/** Whether `object` is one the shape's watch is sent (its label selector), as the API server decides it. */
export const selectedBy = (shape: WatchShape, object: KubeObject): boolean =>
  shape.requiredLabel === undefined || object.metadata.labels?.[shape.requiredLabel] !== undefined;

export const WATCH_SHAPES: Record<keyof WatchSources, WatchShape> = {
  clusters: { resource: RESOURCES.clusters },
  classes: { resource: RESOURCES.classes },
  cnpgClusters: { resource: RESOURCES.cnpgClusters },
  poolers: { resource: RESOURCES.poolers },
  secrets: { resource: RESOURCES.secrets, metadataOnly: true },
  configMaps: { resource: RESOURCES.configMaps, metadataOnly: true },
  deployments: {
    resource: RESOURCES.deployments,
    keep: readinessOf,
    filter: ownedByPooler,
    requiredLabel: POOLER_NAME_LABEL,
  },
  databases: { resource: RESOURCES.databases },
  cnpgDatabases: { resource: RESOURCES.cnpgDatabases },
};

/** What the cache keeps of each object of a shape. */
export const cachedFormOf = (shape: WatchShape): (<T extends KubeObject>(object: T) => T) =>
  shape.metadataOnly ? metadataOf : (shape.keep ?? slim);

/** Builds one source per watched kind, each typed as the driver reads it, from a maker of sources. */
export function watchSourcesFrom(make: <T extends KubeObject>(shape: WatchShape) => ObjectSource<T>): WatchSources {
  return {
    clusters: make<PostgresCluster>(WATCH_SHAPES.clusters),
    classes: make<PostgresClusterClass>(WATCH_SHAPES.classes),
    cnpgClusters: make<CnpgCluster>(WATCH_SHAPES.cnpgClusters),
    poolers: make<Pooler>(WATCH_SHAPES.poolers),
    secrets: make<KubeObject>(WATCH_SHAPES.secrets),
    configMaps: make<KubeObject>(WATCH_SHAPES.configMaps),
    deployments: make<KubeObject>(WATCH_SHAPES.deployments),
    databases: make<PostgresDatabase>(WATCH_SHAPES.databases),
    cnpgDatabases: make<CnpgDatabase>(WATCH_SHAPES.cnpgDatabases),
  };
}

export function createWatchSources(kc: KubeConfig, options: WatchSourceOptions = {}): WatchSources {
  const namespaces = options.namespaces ?? (options.namespace !== undefined ? [options.namespace] : undefined);
  if (namespaces !== undefined && namespaces.length === 0)
    throw new Error('createWatchSources: an empty namespace list');
  if (namespaces !== undefined && new Set(namespaces).size !== namespaces.length) {
    throw new Error(`createWatchSources: a namespace is listed twice in ${namespaces.join(',')}`);
  }
  const informer = <T extends KubeObject>(shape: WatchShape, namespace: string | undefined): Informer<T> =>
    new Informer<T>(kc, {
      resource: shape.resource,
      transform: cachedFormOf(shape),
      ...options.timing,
      ...(options.log ? { log: options.log } : {}),
      ...(namespace !== undefined ? { namespace } : {}),
      ...(shape.metadataOnly ? { metadataOnly: true } : {}),
      ...(shape.filter ? { filter: shape.filter } : {}),
      ...(shape.requiredLabel ? { labelSelector: shape.requiredLabel } : {}),
    });
  const make = <T extends KubeObject>(shape: WatchShape): ObjectSource<T> => {
    // Cluster-scoped kinds (classes) and the all-namespaces mode: one informer.
    if (!shape.resource.namespaced || namespaces === undefined) return informer<T>(shape, undefined);
    const [only] = namespaces;
    if (namespaces.length === 1 && only !== undefined) return informer<T>(shape, only);
    const parts = new Map(namespaces.map((n) => [n, informer<T>(shape, n)] as const));
    return new MultiNamespaceSource<T>(`${shape.resource.plural} in ${namespaces.join(',')}`, parts);
  };
  return watchSourcesFrom(make);
}
