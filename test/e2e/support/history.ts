/**
 * Every version of the objects of a namespace, as the API server's watches deliver them: so that a test can say
 * that something *never* happened (a CNPG Database that was never created, a role that was never pushed, a Secret
 * whose data never changed), not merely that it is not so at the moment of looking.
 *
 * A watch that ends is resumed from the last resourceVersion seen (bookmarks keep it fresh). A resumption the API
 * server refuses (410 Gone: the versions in between are compacted away) is a gap: counted, so that a test can
 * refuse to call a history complete that is not.
 */
import { Watch } from '@kubernetes/client-node';
import type { E2e } from './node.ts';

export interface KubeObject {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    ownerReferences?: { kind?: string; name?: string; uid?: string; controller?: boolean }[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  [key: string]: unknown;
}

export interface Version<T extends KubeObject = KubeObject> {
  /** ADDED, MODIFIED or DELETED. */
  type: string;
  object: T;
  /** Date.now() when the event arrived. */
  at: number;
}

export interface History {
  /** Every version seen of `resource` (a key of the paths given to `recordHistory`), optionally of one name. */
  versions<T extends KubeObject = KubeObject>(resource: string, name?: string): Version<T>[];
  /** Resumptions the API server refused: versions may be missing around these moments. */
  readonly gaps: string[];
  /** Resolves once every watch is open (from then on, every version is seen). */
  ready(): Promise<void>;
  stop(): void;
}

/** The namespaced collection paths of the kinds the second-team suite watches. */
export const collectionPaths = (namespace: string) => ({
  secrets: `/api/v1/namespaces/${namespace}/secrets`,
  cnpgClusters: `/apis/postgresql.cnpg.io/v1/namespaces/${namespace}/clusters`,
  cnpgDatabases: `/apis/postgresql.cnpg.io/v1/namespaces/${namespace}/databases`,
  postgresDatabases: `/apis/pgfsm.io/v1alpha1/namespaces/${namespace}/postgresdatabases`,
});

export function recordHistory(e2e: E2e, paths: Record<string, string>): History {
  const watch = new Watch(e2e.node.kubeConfig);
  const seen = new Map<string, Version[]>(Object.keys(paths).map((k) => [k, []]));
  const gaps: string[] = [];
  const aborts = new Map<string, AbortController>();
  const started: Promise<void>[] = [];
  let stopped = false;

  const follow = (resource: string, path: string, resourceVersion: string | undefined, onStart?: () => void) => {
    if (stopped) return;
    let last = resourceVersion;
    const query: Record<string, string | boolean> = { allowWatchBookmarks: true };
    if (last) query.resourceVersion = last;
    // `watch` calls `done` before it returns when the request fails, and only later when an open stream ends.
    let ended = false;
    let opened = false;
    const restart = (error: unknown) => {
      ended = true;
      if (stopped) return;
      const failure = error as { statusCode?: number; code?: number } | null;
      if (failure?.statusCode === 410 || failure?.code === 410) {
        gaps.push(`${resource}: watch from ${last} expired (410) at ${new Date().toISOString()}`);
        last = undefined;
      }
      setTimeout(() => follow(resource, path, last, opened ? undefined : onStart), error ? 200 : 0);
    };
    void watch
      .watch(
        path,
        query,
        (type, object: KubeObject) => {
          const rv = object?.metadata?.resourceVersion;
          if (type === 'ERROR') {
            // A Status object in the stream ends the watch; a 410 among them means versions were compacted away.
            if ((object as { code?: number }).code === 410) {
              gaps.push(`${resource}: watch from ${last} expired (410) at ${new Date().toISOString()}`);
              last = undefined;
            }
            return;
          }
          if (rv) last = rv;
          if (type === 'BOOKMARK') return;
          seen.get(resource)?.push({ type, object, at: Date.now() });
        },
        (error) => restart(error),
      )
      .then((abort) => {
        if (ended) return;
        opened = true;
        aborts.set(resource, abort);
        onStart?.();
      }, restart);
  };

  for (const [resource, path] of Object.entries(paths)) {
    started.push(new Promise<void>((resolve) => follow(resource, path, undefined, resolve)));
  }

  return {
    versions<T extends KubeObject = KubeObject>(resource: string, name?: string) {
      const all = (seen.get(resource) ?? []) as Version<T>[];
      return name === undefined ? [...all] : all.filter((v) => v.object.metadata?.name === name);
    },
    gaps,
    ready: async () => {
      await Promise.all(started);
    },
    stop() {
      stopped = true;
      for (const abort of aborts.values()) abort.abort();
    },
  };
}
