/**
 * The ports a reconcile pass uses, reading from the informers' caches instead of the API, as
 * controller-runtime's cache-backed client does: the watches that wake a cluster already hold its
 * world, so a pass makes no read request for what they hold, and a Ready cluster whose world does not
 * change costs nothing but its watches. Writes go to the API unchanged.
 *
 * Where a stale view could cause a wrong write, and what guards it:
 * - The status and the finalizers are written conditional on the resourceVersion the pass read
 *   (the PostgresCluster port): a pass decided on an old cluster fails with a conflict and runs again.
 * - A class the cache does not hold is read fresh: its absence is reported as a failure (see `classes`).
 * - A cluster being deleted is read fresh: deletion is where the policy decides between deleting and
 *   releasing the children, and a just-edited policy must not be missed in favour of a cached one.
 * - Children are applied conditional on the resourceVersion the pass saw (Sightings below), or, for one
 *   it saw absent, on its still being absent (the write creates it or conflicts); owner patches are
 *   conditional on the version the adapter reads, and a Secret is created (never applied): a stale child
 *   conflicts, it is never overwritten.
 * - A pass reads the cluster as its own last status write left it while the watch has not delivered that
 *   write yet (OwnWrites below), as client-go's MutationCache does: the next pass, woken by a child the
 *   last one wrote, would otherwise start from the version before and have its status write conflict.
 * - A child this process created is not read as absent while the watch has not delivered it (ExpectedInCache
 *   below): the pass ends in a conflict instead and runs again once the cache shows it.
 * - What the caches keep as metadata only (Secrets, ConfigMaps) has its content — a Secret's key names,
 *   a ConfigMap's data — read by one GET each time its resourceVersion moves, and remembered under it.
 *   The cache says whether the object exists and which version it is; a version is immutable, so the
 *   content remembered under it is exact.
 */
import { performance } from 'node:perf_hooks';
import type { OwnerReference, PostgresCluster } from '../api/schema.ts';
import { PortError } from '../core/errors.ts';
import type { ChildPort, ClusterKey, Ports, Seen } from '../core/ports.ts';
import type { CnpgCluster, KubeObject, ObjectRef, Pooler, PoolerView } from '../domain/objects.ts';
import type { ObjectSource, WatchSources } from './sources.ts';

/**
 * A copy per read: the caches' objects are shared, and nothing downstream may change them by accident. Objects and
 * arrays are copied, strings are not (they cannot be changed): structuredClone also copied every string of the
 * cluster and its children on every pass, and what a pass writes back (its status, the children's owners) kept
 * those copies, so each pass left strings for the next full GC instead of sharing the cache's. Anything that is
 * not plain JSON data (a Date) is cloned as before.
 */
function copy<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copy) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const key of Object.keys(out)) {
    const part = out[key];
    if (typeof part === 'object' && part !== null) out[key] = copy(part);
  }
  return out as T;
}

/** A resourceVersion as the number it is on etcd, or undefined when it is not one (then it is never compared). */
const revision = (version: string | undefined) => (version && /^[0-9]+$/.test(version) ? BigInt(version) : undefined);

/**
 * The PostgresClusters as this process's own status writes left them, kept only until the cache holds
 * that version or a later one. Versions are compared as the etcd revisions they are, as client-go's
 * MutationCache does; one that is not a number is never taken over the cache.
 */
class OwnWrites {
  private readonly objects = new Map<string, PostgresCluster>();

  constructor(private readonly source: ObjectSource) {
    source.on((event) => {
      const key = keyOf(event.object.metadata.namespace ?? '', event.object.metadata.name);
      const mine = this.objects.get(key);
      if (mine && (event.type === 'delete' || !ahead(mine, event.object))) this.objects.delete(key);
    });
  }

  written(object: PostgresCluster | undefined): void {
    if (!object) return;
    // The watch may have delivered the write before its answer came: then nothing is kept (nor left behind).
    const namespace = object.metadata.namespace ?? '';
    const seen = this.source.get(namespace, object.metadata.name);
    if (seen ? !ahead(object, seen) : revision(object.metadata.resourceVersion) === undefined) return;
    this.objects.set(keyOf(namespace, object.metadata.name), object);
  }

  /** `cached`, or this process's own later write of the same object when the cache is behind it. */
  newest(cached: PostgresCluster | undefined): PostgresCluster | undefined {
    if (!cached) return undefined;
    const key = keyOf(cached.metadata.namespace ?? '', cached.metadata.name);
    const mine = this.objects.get(key);
    if (!mine) return cached;
    if (mine.metadata.uid === cached.metadata.uid && ahead(mine, cached)) return mine;
    this.objects.delete(key);
    return cached;
  }
}

/** Whether `mine` is at a later revision than `seen`; never when either version is not a number. */
function ahead(mine: KubeObject, seen: KubeObject): boolean {
  const written = revision(mine.metadata.resourceVersion);
  const cached = revision(seen.metadata.resourceVersion);
  return written !== undefined && cached !== undefined && written > cached;
}

/** How long a creation is expected in the cache before it is given up on (a watch that never delivers it). */
export const EXPECTED_CREATION_MS = 30_000;

/**
 * The children of one kind that this process created and its cache does not show yet, as the "expectations"
 * of kube-controller-manager's controllers. A pass that would read one as absent fails with a conflict
 * instead, and runs again when the watch delivers the object (its event wakes the cluster). Deciding on the
 * older view would create it again: the create-only apply conflicts, and should that answer be lost on the
 * way, the read-back after a lost answer (core/execute.ts) finds the earlier pass's object and counts the
 * write as its own, announcing a second creation (seen under the fault proxy). A creation whose own answer
 * was lost is expected too once that read-back has found it. An entry goes as soon as the cache has any
 * event of the object, or after EXPECTED_CREATION_MS; only objects not yet cached are kept. The children's
 * caches keep every object of their kind (no selector), so each expected one does arrive.
 */
class ExpectedInCache {
  private readonly expected = new Map<string, number>();

  constructor(
    private readonly source: ObjectSource,
    private readonly kind: string,
  ) {
    source.on((event) => {
      if (this.expected.size > 0)
        this.expected.delete(keyOf(event.object.metadata.namespace ?? '', event.object.metadata.name));
    });
  }

  /** `object` exists: this process's write created it (answered), or a read of the API just found it. */
  exists(object: KubeObject | undefined): void {
    const namespace = object?.metadata.namespace ?? '';
    const name = object?.metadata.name;
    if (!name || this.source.get(namespace, name)) return;
    this.expected.set(keyOf(namespace, name), performance.now() + EXPECTED_CREATION_MS);
  }

  /**
   * The cached object; absent only when the cache is not known to lag behind: a child known to exist that
   * the cache lacks throws a conflict.
   */
  get<T extends KubeObject>(ref: ObjectRef): T | undefined {
    const cached = this.source.get(ref.namespace, ref.name) as T | undefined;
    if (cached || this.expected.size === 0) return cached;
    const key = keyOf(ref.namespace, ref.name);
    const until = this.expected.get(key);
    if (until === undefined) return undefined;
    if (performance.now() >= until) {
      this.expected.delete(key);
      return undefined;
    }
    throw new PortError(
      'conflict',
      `${this.kind} ${ref.namespace}/${ref.name} exists (this operator wrote or read it) but is not in its cache yet`,
    );
  }
}

/**
 * Content that only a GET can give, remembered per object under the resourceVersion it was read at.
 * Entries go when the object leaves the cache, so memory follows what exists.
 */
class ContentByVersion<T extends KubeObject> {
  private readonly read = new Map<string, T>();

  constructor(
    private readonly source: ObjectSource,
    private readonly fetch: (ref: ObjectRef) => Promise<T | undefined>,
  ) {
    source.on((event) => {
      if (event.type === 'delete')
        this.read.delete(keyOf(event.object.metadata.namespace ?? '', event.object.metadata.name));
    });
  }

  /** What a write answered: the object as stored, so the version it led to needs no read. */
  written(object: T | undefined): void {
    if (object?.metadata.resourceVersion)
      this.read.set(keyOf(object.metadata.namespace ?? '', object.metadata.name), object);
  }

  async get(ref: ObjectRef): Promise<T | undefined> {
    const cached = this.source.get(ref.namespace, ref.name);
    if (!cached) return undefined;
    const key = keyOf(ref.namespace, ref.name);
    const known = this.read.get(key);
    if (known && known.metadata.resourceVersion === cached.metadata.resourceVersion) return copy(known);
    const fresh = await this.fetch(ref);
    if (fresh) this.read.set(key, fresh);
    else this.read.delete(key);
    return fresh && copy(fresh);
  }
}

/**
 * Joined, not concatenated: a template literal makes a tree of string pieces (one per `+`), which a map key
 * keeps for as long as the entry lives; a join makes one flat string, about half the size (measured with
 * bench/heap-owners.ts on the in-memory fleet).
 */
const keyOf = (namespace: string, name: string) => [namespace, name].join('/');

/**
 * What the current pass of each cluster saw of the children it may apply — their identity and version —
 * handed to the apply that follows, so that the write is conditional on what it was decided on rather
 * than on a version read at write time (ports.ts, `Seen`). A cluster has one pass at a time (the work
 * queue), so a child's entry is its cluster's current pass's. An apply takes its entry, and one that finds
 * none is handed none, as for a child the pass saw absent: the adapter then creates the child only if it
 * still does not exist (a conflict otherwise, and the pass runs again), except the roles, which never
 * create and read afresh. A second apply of the same object in one pass would find none: the pipeline
 * stops at a step that writes, so it makes none, and the roles, whose step comes after the spec's, read.
 * Only children that exist are kept, and each goes when its object leaves the cache, so memory follows
 * what exists.
 */
class Sightings {
  /**
   * Only what an apply reads of what the pass saw (ports.ts, `Seen`: its version and owners, the owners array
   * shared with the cached object, which is never changed); the rest of `Seen` is the applied object's own
   * identity. About a quarter of the two objects per child it was, kept per child of every cluster.
   */
  private readonly seen = new Map<string, { resourceVersion: string | undefined; ownerReferences: unknown }>();

  constructor(sources: ObjectSource[]) {
    for (const source of sources) {
      source.on((event) => {
        if (event.type === 'delete') this.seen.delete(this.keyOf(event.object));
      });
    }
  }

  note(_ref: ObjectRef, object: KubeObject | undefined): void {
    if (!object) return;
    const { resourceVersion, ownerReferences } = object.metadata;
    this.seen.set(this.keyOf(object), { resourceVersion, ownerReferences });
  }

  take(object: KubeObject): Seen {
    const key = this.keyOf(object);
    const seen = this.seen.get(key);
    if (!seen) return undefined;
    this.seen.delete(key);
    const { resourceVersion, ownerReferences } = seen;
    return {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: {
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        ...(resourceVersion !== undefined ? { resourceVersion } : {}),
        ...(ownerReferences !== undefined ? { ownerReferences } : {}),
      },
    } as KubeObject;
  }

  private keyOf(object: KubeObject): string {
    return [object.kind, object.metadata.namespace ?? '', object.metadata.name].join('/');
  }
}

const readyReplicasOf = (deployment: KubeObject | undefined): number => {
  const ready = (deployment as { status?: { readyReplicas?: unknown } } | undefined)?.status?.readyReplicas;
  return typeof ready === 'number' ? ready : 0;
};

/** `ports` with every read a pass makes served from `sources` (see the module comment for the exceptions). */
export function readingFromCaches(ports: Ports, sources: WatchSources): Ports {
  const sightings = new Sightings([sources.cnpgClusters, sources.poolers, sources.configMaps]);
  const expected = {
    cnpgClusters: new ExpectedInCache(sources.cnpgClusters, 'Cluster'),
    poolers: new ExpectedInCache(sources.poolers, 'Pooler'),
    configMaps: new ExpectedInCache(sources.configMaps, 'ConfigMap'),
    secrets: new ExpectedInCache(sources.secrets, 'Secret'),
  };
  const cached =
    <T extends KubeObject>(cache: ExpectedInCache) =>
    async (ref: ObjectRef): Promise<T | undefined> => {
      const object = cache.get<T>(ref);
      sightings.note(ref, object);
      return object && copy(object);
    };
  /** An apply as the pass saw the object: one it saw absent creates it, which the cache is then expected to show. */
  const applied = async <T>(object: KubeObject, creations: ExpectedInCache, apply: (seen: Seen) => Promise<T>) => {
    const seen = sightings.take(object);
    const answer = await apply(seen);
    if (!seen) creations.exists(object);
    return answer;
  };
  const ownWrites = new OwnWrites(sources.clusters);
  /**
   * A finalizer write answered with the version it led to: the cluster at that version is the one the write was
   * conditional on with only its finalizers changed, so it is known exactly and kept as an own write until the
   * watch delivers it. Without it, the next pass read the cluster from a cache that had not caught up and,
   * seeing no finalizer, went to Pending and added it again (a conflict), deciding on that stale view. Built
   * from the cached object at the version written against (never the pass's, whose status may be one held
   * for it: core/announcements.ts); when the cache holds another version, nothing is kept.
   */
  const finalizersWritten = (
    cluster: PostgresCluster,
    version: string | undefined,
    edit: (finalizers: string[]) => string[],
  ): string | undefined => {
    const { namespace = '', name } = cluster.metadata;
    const read = ownWrites.newest(sources.clusters.get(namespace, name) as PostgresCluster | undefined);
    if (version !== undefined && read && read.metadata.resourceVersion === cluster.metadata.resourceVersion) {
      const finalizers = edit(read.metadata.finalizers ?? []);
      ownWrites.written({ ...read, metadata: { ...read.metadata, finalizers, resourceVersion: version } });
    }
    return version;
  };
  const secretContent = new ContentByVersion(sources.secrets, (ref) => ports.secrets.get(ref));
  const configMapContent = new ContentByVersion(sources.configMaps, (ref) => ports.configMaps.get(ref));
  const cachedPooler = cached<Pooler>(expected.poolers);

  const direct = ports.direct ?? ports;
  /** A read of the API (the read-back after a lost answer) that finds a child: the cache is expected to show it. */
  const expecting = <P extends { get(ref: ObjectRef): Promise<KubeObject | undefined> }>(
    port: P,
    creations: ExpectedInCache,
  ): P =>
    Object.assign(Object.create(port) as P, {
      get: async (ref: ObjectRef) => {
        const object = await port.get(ref);
        creations.exists(object);
        return object;
      },
    });

  return {
    ...ports,
    direct: {
      ...direct,
      secrets: expecting(direct.secrets, expected.secrets),
      cnpgClusters: expecting(direct.cnpgClusters, expected.cnpgClusters),
      poolers: expecting(direct.poolers, expected.poolers),
      configMaps: expecting(direct.configMaps, expected.configMaps),
    },
    clusters: {
      addFinalizer: async (cluster, finalizer) =>
        finalizersWritten(cluster, await ports.clusters.addFinalizer(cluster, finalizer), (f) => [...f, finalizer]),
      removeFinalizer: async (cluster, finalizer) =>
        finalizersWritten(cluster, await ports.clusters.removeFinalizer(cluster, finalizer), (f) =>
          f.filter((x) => x !== finalizer),
        ),
      async writeStatus(cluster, status) {
        const written = await ports.clusters.writeStatus(cluster, status);
        ownWrites.written(written);
        return written;
      },
      async get(key: ClusterKey) {
        const cluster = ownWrites.newest(sources.clusters.get(key.namespace, key.name) as PostgresCluster | undefined);
        if (!cluster) return undefined;
        return cluster.metadata.deletionTimestamp ? ports.clusters.get(key) : copy(cluster);
      },
    },
    classes: {
      async get(name: string) {
        const clusterClass = sources.classes.get('', name);
        if (clusterClass) return copy(clusterClass);
        // Absent from the cache is not yet absent: the classes and the clusters are separate watches, so a
        // class applied just before its clusters (`kubectl apply -f` on a folder) can reach the cache after
        // them, and a pass deciding on that would store Failed.ClassMissing and warn of a class that exists
        // (seen in the sandbox). Only a miss reads the API, so a cluster whose class is there costs nothing.
        return ports.classes.get(name);
      },
    },
    secrets: {
      ...writesOf(ports.secrets),
      get: async (ref) => {
        // Only for its refusal while the cache lags behind a Secret known to exist: the content is read below.
        expected.secrets.get(ref);
        return secretContent.get(ref);
      },
      create: async (template) => {
        const secret = await ports.secrets.create(template);
        secretContent.written(secret);
        expected.secrets.exists(secret ?? { apiVersion: 'v1', kind: 'Secret', metadata: template.ref });
        return secret;
      },
    },
    cnpgClusters: {
      ...writesOf(ports.cnpgClusters),
      get: cached<CnpgCluster>(expected.cnpgClusters),
      apply: (object, part) =>
        applied(object, expected.cnpgClusters, (seen) => ports.cnpgClusters.apply(object, part, seen)),
    },
    poolers: {
      ...writesOf(ports.poolers),
      apply: (object) => applied(object, expected.poolers, (seen) => ports.poolers.apply(object, seen)),
      get: cachedPooler,
      async view(ref: ObjectRef): Promise<PoolerView | undefined> {
        const pooler = await cachedPooler(ref);
        if (!pooler) return undefined;
        // CNPG runs each pooler as a Deployment of the same name; its ready replicas are the readiness signal.
        return { pooler, readyReplicas: readyReplicasOf(sources.deployments.get(ref.namespace, ref.name)) };
      },
    },
    configMaps: {
      ...writesOf(ports.configMaps),
      get: async (ref) => {
        sightings.note(ref, expected.configMaps.get(ref));
        return configMapContent.get(ref);
      },
      apply: async (object) => {
        const answer = await applied(object, expected.configMaps, (seen) => ports.configMaps.apply(object, seen));
        configMapContent.written(answer);
        return answer;
      },
    },
  };
}

/** The writes of a child port, unchanged (the adapters are classes: their methods stay bound to them). */
function writesOf(port: ChildPort<KubeObject>) {
  return {
    delete: (ref: ObjectRef) => port.delete(ref),
    setOwner: (ref: ObjectRef, owner: OwnerReference) => port.setOwner(ref, owner),
    releaseOwner: (ref: ObjectRef, ownerUid: string) => port.releaseOwner(ref, ownerUid),
  };
}
