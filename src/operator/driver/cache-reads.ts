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
 * - A pass reads every object as this process's own last write left it — the cluster's status and
 *   finalizers, a child applied, created or given an owner, a child deleted (read as absent) — while the
 *   watch has not delivered that write yet (own-writes.ts), as client-go's MutationCache does. Deciding on
 *   the version before would repeat the write and its announcement (roles applied again, a Pooler deleted
 *   again), or have the status write conflict. A child that a read of the API (the read-back after a lost
 *   answer) found is served the same way.
 * - What the caches keep as metadata only (Secrets, ConfigMaps) has its content — a Secret's key names,
 *   a ConfigMap's data — read by one GET each time its resourceVersion moves, and remembered under it.
 *   The cache says whether the object exists and which version it is; a version is immutable, so the
 *   content remembered under it is exact.
 */
import type { OwnerReference, PostgresCluster, PostgresDatabase } from '../api/schema.ts';
import type { DatabasePorts } from '../core/database/ports.ts';
import { classOf } from '../core/errors.ts';
import type { ChildPort, ClusterKey, Ports, Seen } from '../core/ports.ts';
import type {
  CnpgCluster,
  ConfigMap,
  KubeObject,
  ObjectRef,
  Pooler,
  PoolerView,
  SecretView,
} from '../domain/objects.ts';
import { databaseWritesKnown } from './database-cache-reads.ts';
import { OwnWrites } from './own-writes.ts';
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

/**
 * Content that only a GET can give, remembered per object under the resourceVersion it was read at.
 * Entries go when the object leaves the cache, so memory follows what exists.
 */
class ContentByVersion<T extends KubeObject> {
  private readonly read = new Map<string, T>();

  constructor(
    source: ObjectSource,
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

  /** The content of `shown`, the object as the cache (or this process's own write of it) shows it. */
  async get(ref: ObjectRef, shown: KubeObject | undefined): Promise<T | undefined> {
    if (!shown) return undefined;
    const key = keyOf(ref.namespace, ref.name);
    const known = this.read.get(key);
    if (known && known.metadata.resourceVersion === shown.metadata.resourceVersion) return copy(known);
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

  /** What the pass saw of `ref`: the object, or nothing (then an apply creates it only if still absent). */
  note(ref: ObjectRef, object: KubeObject | undefined): void {
    if (!object) {
      if (this.seen.size > 0) this.seen.delete([ref.kind, ref.namespace, ref.name].join('/'));
      return;
    }
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
  return cacheReadingPorts(ports, sources).ports;
}

/** The cluster's ports reading from the caches, and the database's beside them (both as `pgfsm run` has them). */
export interface CacheReadingPorts {
  ports: Ports;
  /** The database's ports, sharing the cluster's, their writes known to the cluster's reads at once. */
  databasePorts?: DatabasePorts;
}

/**
 * {@link readingFromCaches}, and with `databasePorts` the PostgresDatabase's ports over the same own writes: a
 * database's pass writes the connection Secrets its cluster's pass reads (the roles' password Secrets) and,
 * through the shared ports, its own status and finalizers, which the cluster's pass lists. Each answer is kept
 * as the cluster's own writes are, so the cluster's next pass reads them the moment they are made, not when the
 * Secrets' watch delivers them: deciding on a cache without the Secret and again once it shows it pushed the
 * same roles twice (issue 37, `ManagedRolesApplied` said twice with watches 20–200 ms late).
 */
export function cacheReadingPorts(
  ports: Ports,
  sources: WatchSources,
  databasePorts?: DatabasePorts,
): CacheReadingPorts {
  const sightings = new Sightings([sources.cnpgClusters, sources.poolers, sources.configMaps]);
  const own = {
    clusters: new OwnWrites<PostgresCluster>(sources.clusters),
    databases: new OwnWrites<PostgresDatabase>(sources.databases),
    cnpgClusters: new OwnWrites<CnpgCluster>(sources.cnpgClusters),
    poolers: new OwnWrites<Pooler>(sources.poolers),
    configMaps: new OwnWrites<ConfigMap>(sources.configMaps),
    secrets: new OwnWrites<SecretView>(sources.secrets),
  };
  /** A child as the pass sees it — the cache, or this process's own newer write of it — noted for the apply. */
  const shown = <T extends KubeObject>(writes: OwnWrites<T>, ref: ObjectRef): T | undefined => {
    const object = writes.get(ref.namespace, ref.name);
    sightings.note(ref, object);
    return object;
  };
  const cached =
    <T extends KubeObject>(writes: OwnWrites<T>) =>
    async (ref: ObjectRef): Promise<T | undefined> => {
      const object = shown(writes, ref);
      return object && copy(object);
    };
  /** An apply decided on what the pass saw; its answer is what the next pass reads until the watch delivers it. */
  const applied = async <T extends KubeObject>(
    object: KubeObject,
    written: (answer: T | undefined) => void,
    apply: (seen: Seen) => Promise<T | undefined>,
  ) => {
    const answer = await apply(sightings.take(object));
    written(answer);
    return answer;
  };
  /**
   * A finalizer write answered with the version it led to: the cluster at that version is the one the write was
   * conditional on with only its finalizers changed, so it is known exactly and kept as an own write until the
   * watch delivers it. Without it, the next pass read the cluster from a cache that had not caught up and,
   * seeing no finalizer, went to Pending and added it again (a conflict), deciding on that stale view. Built
   * from the cached object at the version written against (never the pass's, whose status may be one held
   * for it: core/announcements.ts); when the cache holds another version, nothing is kept.
   */
  const finalizersOf =
    <T extends PostgresCluster | PostgresDatabase>(writes: OwnWrites<T>) =>
    (object: T, version: string | undefined, edit: (finalizers: string[]) => string[]): string | undefined => {
      const { namespace = '', name } = object.metadata;
      const read = writes.get(namespace, name);
      if (version !== undefined && read && read.metadata.resourceVersion === object.metadata.resourceVersion) {
        const finalizers = edit(read.metadata.finalizers ?? []);
        writes.written({ ...read, metadata: { ...read.metadata, finalizers, resourceVersion: version } });
      }
      return version;
    };
  const finalizersWritten = finalizersOf(own.clusters);
  // The same for a PostgresDatabase's finalizer, written by its pass through the shared ports.
  const databaseFinalizersWritten = finalizersOf(own.databases);
  const readAfterConflict = async (cluster: PostgresCluster) => {
    const { namespace = '', name } = cluster.metadata;
    try {
      own.clusters.written(await ports.clusters.get({ namespace, name }));
    } catch {
      // The next pass reads the cache as it is: only its status write conflicts again.
    }
  };
  const secretContent = new ContentByVersion(sources.secrets, (ref) => ports.secrets.get(ref));
  const configMapContent = new ContentByVersion(sources.configMaps, (ref) => ports.configMaps.get(ref));
  /** Secrets and ConfigMaps are cached as metadata: an answer also says their content at its version. */
  const withContent =
    <T extends KubeObject>(writes: OwnWrites<T>, content: ContentByVersion<T>) =>
    (object: T | undefined) => {
      writes.written(object);
      content.written(object);
    };
  /** Per kind, what keeps an answer (or a read of the API) for the passes that follow. */
  const written = {
    cnpgClusters: (object: CnpgCluster | undefined) => own.cnpgClusters.written(object),
    poolers: (object: Pooler | undefined) => own.poolers.written(object),
    secrets: withContent(own.secrets, secretContent),
    configMaps: withContent(own.configMaps, configMapContent),
  };
  const cachedPooler = cached(own.poolers);

  const direct = ports.direct ?? ports;
  /**
   * A read of the API (the read-back after a lost answer) says what the object is now: served to the next
   * pass like an own write until the watch delivers it, so a creation whose answer was lost is not read as
   * absent and made again.
   */
  const remembering = <P extends { get(ref: ObjectRef): Promise<KubeObject | undefined> }>(
    port: P,
    remember: (object: Awaited<ReturnType<P['get']>>) => void,
  ): P =>
    Object.assign(Object.create(port) as P, {
      get: async (ref: ObjectRef) => {
        const object = (await port.get(ref)) as Awaited<ReturnType<P['get']>>;
        remember(object);
        return object;
      },
    });

  const reading: Ports = {
    ...ports,
    direct: {
      ...direct,
      secrets: remembering(direct.secrets, written.secrets),
      cnpgClusters: remembering(direct.cnpgClusters, written.cnpgClusters),
      poolers: remembering(direct.poolers, written.poolers),
      configMaps: remembering(direct.configMaps, written.configMaps),
    },
    clusters: {
      addFinalizer: async (cluster, finalizer) =>
        finalizersWritten(cluster, await ports.clusters.addFinalizer(cluster, finalizer), (f) => [...f, finalizer]),
      removeFinalizer: async (cluster, finalizer) =>
        finalizersWritten(cluster, await ports.clusters.removeFinalizer(cluster, finalizer), (f) =>
          f.filter((x) => x !== finalizer),
        ),
      async writeStatus(cluster, status) {
        try {
          const written = await ports.clusters.writeStatus(cluster, status);
          own.clusters.written(written);
          return written;
        } catch (error) {
          // A conflict says the cache is behind this cluster (a write whose answer was lost may have landed):
          // read it now, so that the next pass starts from the version that won instead of conflicting
          // again on every pass until the watch delivers it.
          if (classOf(error) === 'conflict') await readAfterConflict(cluster);
          throw error;
        }
      },
      async get(key: ClusterKey) {
        // Only over a cluster the cache holds: one it does not is deleted, or not yet this process's to see.
        if (!sources.clusters.get(key.namespace, key.name)) return undefined;
        const cluster = own.clusters.get(key.namespace, key.name);
        if (!cluster) return undefined;
        return cluster.metadata.deletionTimestamp ? ports.clusters.get(key) : copy(cluster);
      },
    },
    // A PostgresDatabase as the cluster's is read: from the cache, as this process's own last write left it, and
    // fresh while it is being deleted (its policy decides what is dropped). Every cluster pass lists its
    // namespace's databases (the roles it pushes): from the cache, at no request.
    databases: {
      addFinalizer: async (database, finalizer) =>
        databaseFinalizersWritten(database, await ports.databases.addFinalizer(database, finalizer), (f) => [
          ...f,
          finalizer,
        ]),
      removeFinalizer: async (database, finalizer) =>
        databaseFinalizersWritten(database, await ports.databases.removeFinalizer(database, finalizer), (f) =>
          f.filter((x) => x !== finalizer),
        ),
      list: async (namespace) =>
        sources.databases.list(namespace).map((d) => copy(own.databases.get(namespace, d.metadata.name) ?? d)),
      async get(key: ClusterKey) {
        const database = own.databases.get(key.namespace, key.name);
        if (!database) return undefined;
        return database.metadata.deletionTimestamp ? ports.databases.get(key) : copy(database);
      },
      async writeStatus(database, status) {
        const written = await ports.databases.writeStatus(database, status);
        own.databases.written(written);
        return written;
      },
    },
    classes: {
      // The finalizer writes and the re-check's list are the class protection's (class-protection.ts), which
      // reads the caches itself: they go to the API unchanged.
      addFinalizer: (clusterClass, finalizer) => ports.classes.addFinalizer(clusterClass, finalizer),
      removeFinalizer: (clusterClass, finalizer) => ports.classes.removeFinalizer(clusterClass, finalizer),
      usersOf: (name) => ports.classes.usersOf(name),
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
      ...writesOf(ports.secrets, own.secrets, written.secrets),
      get: async (ref) => secretContent.get(ref, own.secrets.get(ref.namespace, ref.name)),
      create: async (template) => {
        const secret = await ports.secrets.create(template);
        written.secrets(secret);
        return secret;
      },
    },
    cnpgClusters: {
      ...writesOf(ports.cnpgClusters, own.cnpgClusters, written.cnpgClusters),
      get: cached(own.cnpgClusters),
      apply: (object, part) =>
        applied(object, written.cnpgClusters, (seen) => ports.cnpgClusters.apply(object, part, seen)),
    },
    poolers: {
      ...writesOf(ports.poolers, own.poolers, written.poolers),
      apply: (object) => applied(object, written.poolers, (seen) => ports.poolers.apply(object, seen)),
      get: cachedPooler,
      async view(ref: ObjectRef): Promise<PoolerView | undefined> {
        const pooler = await cachedPooler(ref);
        if (!pooler) return undefined;
        // CNPG runs each pooler as a Deployment of the same name; its ready replicas are the readiness signal.
        return { pooler, readyReplicas: readyReplicasOf(sources.deployments.get(ref.namespace, ref.name)) };
      },
    },
    configMaps: {
      ...writesOf(ports.configMaps, own.configMaps, written.configMaps),
      get: async (ref) => configMapContent.get(ref, shown(own.configMaps, ref)),
      apply: (object) => applied(object, written.configMaps, (seen) => ports.configMaps.apply(object, seen)),
    },
  };
  if (!databasePorts) return { ports: reading };
  const secrets = {
    written: written.secrets,
    deleted: (ref: ObjectRef) => own.secrets.deleted(ref.namespace, ref.name),
  };
  return { ports: reading, databasePorts: databaseWritesKnown(databasePorts, reading, secrets) };
}

/**
 * The writes of a child port, each answer kept as an own write (`written`), and a delete answered read as
 * absent until the watch delivers it (the adapters are classes: their methods stay bound to them).
 */
function writesOf<T extends KubeObject>(
  port: ChildPort<T>,
  writes: OwnWrites<T>,
  written: (object: T | undefined) => void,
) {
  return {
    delete: async (ref: ObjectRef) => {
      await port.delete(ref);
      writes.deleted(ref.namespace, ref.name);
    },
    setOwner: async (ref: ObjectRef, owner: OwnerReference) => {
      const answer = await port.setOwner(ref, owner);
      written(answer);
      return answer;
    },
    releaseOwner: async (ref: ObjectRef, ownerUid: string) => {
      const answer = await port.releaseOwner(ref, ownerUid);
      written(answer);
      return answer;
    },
  };
}
