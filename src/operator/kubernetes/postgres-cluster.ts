/**
 * The PostgresCluster and PostgresClusterClass ports: reads, the finalizer and the status, each written
 * by JSON merge patch (custom resources do not take strategic merge patches).
 */
import type { PostgresCluster, PostgresClusterClass, PostgresClusterStatus } from '../api/schema.ts';
import type { ClassPort, PostgresClusterPort } from '../core/ports.ts';
import { call, getOrUndefined } from './errors.ts';
import { customObjectOf, type RawObject } from './objects.ts';
import { RESOURCES, resourcePath } from './resources.ts';
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

export function postgresClusterPort(rest: RestClient): PostgresClusterPort {
  const path = (c: PostgresCluster, subresource?: string) => resourcePath(RESOURCES.clusters, c.metadata, subresource);
  const mergePatch = (at: string, body: object) =>
    rest.request<RawObject>({ method: 'PATCH', path: at, body, contentType: CONTENT.mergePatch });
  const what = (verb: string, c: PostgresCluster) =>
    `${verb} PostgresCluster ${c.metadata.namespace}/${c.metadata.name}`;

  /**
   * Finalizers are written with the resourceVersion of the object the core decided on: the merge patch
   * replaces the whole list, so a stale write must fail (409) instead of dropping someone else's finalizer.
   * A cluster that is already gone needs no finalizer change. Answers the version the write led to.
   */
  const writeFinalizers = async (cluster: PostgresCluster, finalizers: string[]) => {
    const body = { metadata: { resourceVersion: cluster.metadata.resourceVersion, finalizers } };
    const written = await getOrUndefined({ what: what('update finalizers of', cluster) }, () =>
      mergePatch(path(cluster), body),
    );
    return resourceVersionOf(written);
  };

  return {
    async get(key) {
      const raw = await getOrUndefined({ what: `get PostgresCluster ${key.namespace}/${key.name}` }, () =>
        rest.request<RawObject>({ method: 'GET', path: resourcePath(RESOURCES.clusters, key) }),
      );
      return raw === undefined ? undefined : customObjectOf<PostgresCluster>(raw);
    },
    async addFinalizer(cluster, finalizer) {
      const finalizers = cluster.metadata.finalizers ?? [];
      return finalizers.includes(finalizer) ? undefined : writeFinalizers(cluster, [...finalizers, finalizer]);
    },
    async removeFinalizer(cluster, finalizer) {
      const finalizers = cluster.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) return undefined;
      return writeFinalizers(
        cluster,
        finalizers.filter((f) => f !== finalizer),
      );
    },
    /**
     * Conditional on the resourceVersion of `cluster` (ports.ts): a status computed from an old view fails
     * with 409 and the pass runs again on the newer object, instead of overwriting a newer status. The
     * patch is computed against the status of `cluster`, which the condition guarantees is the stored one.
     */
    async writeStatus(cluster, status: PostgresClusterStatus) {
      const body = {
        metadata: { resourceVersion: cluster.metadata.resourceVersion },
        status: mergePatchFrom(cluster.status, status),
      };
      const written = await call({ what: what('write status of', cluster) }, () =>
        mergePatch(path(cluster, 'status'), body),
      );
      return written ? customObjectOf<PostgresCluster>(written) : undefined;
    },
  };
}

export function classPort(rest: RestClient): ClassPort {
  return {
    async get(name) {
      const raw = await getOrUndefined({ what: `get PostgresClusterClass ${name}` }, () =>
        rest.request<RawObject>({ method: 'GET', path: resourcePath(RESOURCES.classes, { name }) }),
      );
      return raw === undefined ? undefined : customObjectOf<PostgresClusterClass>(raw);
    },
  };
}
