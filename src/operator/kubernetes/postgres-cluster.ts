/**
 * The PostgresCluster and PostgresClusterClass ports: reads, the finalizer and the status, each written
 * by JSON merge patch (custom resources do not take strategic merge patches). The PostgresDatabase's port
 * (postgres-database.ts) is built from the same {@link reconciledObjectPort}.
 */
import type { ObjectMeta, PostgresCluster, PostgresClusterClass, PostgresClusterStatus } from '../api/schema.ts';
import type { ClassPort, ClusterKey, PostgresClusterPort } from '../core/ports.ts';
import { namedClass } from '../domain/config.ts';
import { call, getOrUndefined } from './errors.ts';
import { customObjectOf, type RawObject } from './objects.ts';
import { RESOURCES, type ResourceType, resourcePath } from './resources.ts';
import { CONTENT, type RestClient } from './rest.ts';

const resourceVersionOf = (object: unknown): string | undefined => {
  const version = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof version === 'string' ? version : undefined;
};

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The JSON merge patch that turns `previous` into `next`: keys that disappeared become `null`, so the
 * stored status ends up equal to `next` (a plain `{status: next}` would keep them, e.g. a stale
 * `managedRolesStatus.failed`). Lists are replaced whole, which is what the conditions list needs.
 */
export function mergePatchFrom(previous: unknown, next: unknown): unknown {
  if (!isMap(previous) || !isMap(next)) return next;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(previous)) if (next[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(next)) {
    if (value !== undefined) patch[key] = mergePatchFrom(previous[key], value);
  }
  return patch;
}

/**
 * What the PostgresCluster and the PostgresDatabase share: each is read by key, carries pgfsm's finalizer and
 * reports on its status subresource, with the same conditional writes.
 */
export interface ReconciledObjectPort<T, S> {
  get(key: ClusterKey): Promise<T | undefined>;
  addFinalizer(object: T, finalizer: string): Promise<string | undefined>;
  removeFinalizer(object: T, finalizer: string): Promise<string | undefined>;
  writeStatus(object: T, status: S): Promise<T | undefined>;
}

type Reconciled<S> = { metadata: ObjectMeta & { namespace: string }; status?: S };

/** The port of one reconciled kind (`type`): the PostgresCluster's semantics, below, for either. */
export function reconciledObjectPort<T extends Reconciled<S>, S>(
  rest: RestClient,
  type: ResourceType,
): ReconciledObjectPort<T, S> {
  const path = (o: T, subresource?: string) => resourcePath(type, o.metadata, subresource);
  const mergePatch = (at: string, body: object) =>
    rest.request<RawObject>({ method: 'PATCH', path: at, body, contentType: CONTENT.mergePatch });
  const what = (verb: string, o: T) => `${verb} ${type.kind} ${o.metadata.namespace}/${o.metadata.name}`;

  /**
   * Finalizers are written with the resourceVersion of the object the core decided on: the merge patch
   * replaces the whole list, so a stale write must fail (409) instead of dropping someone else's finalizer.
   * An object that is already gone needs no finalizer change. Answers the version the write led to.
   */
  const writeFinalizers = async (object: T, finalizers: string[]) => {
    const body = { metadata: { resourceVersion: object.metadata.resourceVersion, finalizers } };
    const written = await getOrUndefined({ what: what('update finalizers of', object) }, () =>
      mergePatch(path(object), body),
    );
    return resourceVersionOf(written);
  };

  return {
    async get(key) {
      const raw = await getOrUndefined({ what: `get ${type.kind} ${key.namespace}/${key.name}` }, () =>
        rest.request<RawObject>({ method: 'GET', path: resourcePath(type, key) }),
      );
      return raw === undefined ? undefined : customObjectOf<T>(raw);
    },
    async addFinalizer(object, finalizer) {
      const finalizers = object.metadata.finalizers ?? [];
      return finalizers.includes(finalizer) ? undefined : writeFinalizers(object, [...finalizers, finalizer]);
    },
    async removeFinalizer(object, finalizer) {
      const finalizers = object.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return undefined;
      return writeFinalizers(
        object,
        finalizers.filter((f) => f !== finalizer),
      );
    },
    /**
     * Conditional on the resourceVersion of `object` (ports.ts): a status computed from an old view fails
     * with 409 and the pass runs again on the newer object, instead of overwriting a newer status. The
     * patch is computed against the status of `object`, which the condition guarantees is the stored one.
     */
    async writeStatus(object, status) {
      const body = {
        metadata: { resourceVersion: object.metadata.resourceVersion },
        status: mergePatchFrom(object.status, status),
      };
      const written = await call({ what: what('write status of', object) }, () =>
        mergePatch(path(object, 'status'), body),
      );
      return written ? customObjectOf<T>(written) : undefined;
    },
  };
}

export function postgresClusterPort(rest: RestClient): PostgresClusterPort {
  return reconciledObjectPort<PostgresCluster, PostgresClusterStatus>(rest, RESOURCES.clusters);
}

/** Clusters per page of the re-check's list: pages keep a fleet's list from arriving as one huge answer. */
const LIST_PAGE = 500;

/**
 * The class port. `namespaces`: those the operator watches (`--namespace`), whose PostgresClusters the re-check
 * lists one namespace at a time (a namespaced install may list nowhere else); all of them when absent.
 */
export function classPort(rest: RestClient, namespaces?: readonly string[]): ClassPort {
  const path = (name: string) => resourcePath(RESOURCES.classes, { name });
  /**
   * As the cluster's finalizers (reconciledObjectPort): a merge patch of the whole list, conditional on the
   * resourceVersion of the class the decision was made on, so that a stale write fails (409) instead of dropping
   * someone else's finalizer. A class already gone needs no change.
   */
  const writeFinalizers = async (clusterClass: PostgresClusterClass, finalizers: string[]) => {
    const { name, resourceVersion } = clusterClass.metadata;
    const written = await getOrUndefined({ what: `update finalizers of PostgresClusterClass ${name}` }, () =>
      rest.request<RawObject>({
        method: 'PATCH',
        path: path(name),
        body: { metadata: { resourceVersion, finalizers } },
        contentType: CONTENT.mergePatch,
      }),
    );
    return resourceVersionOf(written);
  };
  const listIn = async (namespace: string | undefined) => {
    const items: PostgresCluster[] = [];
    let next: string | undefined;
    do {
      const page = await call({ what: `list PostgresClusters${namespace ? ` in ${namespace}` : ''}` }, () =>
        rest.request<{ items?: RawObject[]; metadata?: { continue?: string } }>({
          method: 'GET',
          path: resourcePath(RESOURCES.clusters, { namespace }),
          query: { limit: String(LIST_PAGE), ...(next ? { continue: next } : {}) },
        }),
      );
      for (const item of page?.items ?? []) items.push(customObjectOf<PostgresCluster>(item));
      next = page?.metadata?.continue || undefined;
    } while (next);
    return items;
  };
  return {
    async get(name) {
      const raw = await getOrUndefined({ what: `get PostgresClusterClass ${name}` }, () =>
        rest.request<RawObject>({ method: 'GET', path: path(name) }),
      );
      return raw === undefined ? undefined : customObjectOf<PostgresClusterClass>(raw);
    },
    async addFinalizer(clusterClass, finalizer) {
      const finalizers = clusterClass.metadata.finalizers ?? [];
      return finalizers.includes(finalizer) ? undefined : writeFinalizers(clusterClass, [...finalizers, finalizer]);
    },
    async removeFinalizer(clusterClass, finalizer) {
      const finalizers = clusterClass.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return undefined;
      return writeFinalizers(
        clusterClass,
        finalizers.filter((f) => f !== finalizer),
      );
    },
    async usersOf(name) {
      const lists = await Promise.all((namespaces ?? [undefined]).map(listIn));
      return lists.flat().filter((cluster) => namedClass(cluster) === name);
    },
  };
}
