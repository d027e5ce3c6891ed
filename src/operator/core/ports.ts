/**
 * The ports: everything the reconcile core needs from the world. Adapters implement them (in memory for
 * tests and the simulation, Kubernetes for the operator); nothing else talks to the API.
 */
import type {
  ObjectMeta,
  OwnerReference,
  PostgresCluster,
  PostgresClusterClass,
  PostgresClusterStatus,
} from '../api/schema.ts';
import type { CnpgBackup, ObjectStore, ScheduledBackup } from '../domain/backup/objects.ts';
import type { KubeEvent, SecretTemplate } from '../domain/effects.ts';
import type {
  CnpgCluster,
  ConfigMap,
  KubeObject,
  ObjectRef,
  Pooler,
  PoolerView,
  SecretView,
} from '../domain/objects.ts';
import type { PostgresDatabasePort } from './database/ports.ts';

export interface ClusterKey {
  namespace: string;
  name: string;
}

export const keyString = (key: ClusterKey) => `${key.namespace}/${key.name}`;

/**
 * The PostgresCluster itself: read, finalizer, status. Every write is conditional on the resourceVersion
 * of the `cluster` it is given — the one the pass read — so that a pass decided on an old view (a stale
 * cache, a paused leader) conflicts instead of overwriting newer state. A finalizer write answers the
 * version the object is at after it (undefined when nothing was written or the object is gone), which
 * the pass's later writes are conditional on instead; a status write answers the object as stored after
 * it (undefined when there is nothing to tell), which a cache-reading port serves to the next pass until
 * its watch has caught up (driver/cache-reads.ts).
 */
export interface PostgresClusterPort {
  get(key: ClusterKey): Promise<PostgresCluster | undefined>;
  addFinalizer(cluster: PostgresCluster, finalizer: string): Promise<string | undefined>;
  removeFinalizer(cluster: PostgresCluster, finalizer: string): Promise<string | undefined>;
  writeStatus(cluster: PostgresCluster, status: PostgresClusterStatus): Promise<PostgresCluster | undefined>;
}

/**
 * The PostgresClusterClass: read by the passes; its finalizer (`pgfsm.io/class-in-use`,
 * domain/class-protection.ts) written by the driver's class protection, never by a pass. Finalizer writes are
 * conditional on the resourceVersion of the class given, as the cluster's are, and answer the version the
 * object is at after them (undefined when nothing was written or the class is gone).
 */
export interface ClassPort {
  get(name: string): Promise<PostgresClusterClass | undefined>;
  addFinalizer(clusterClass: PostgresClusterClass, finalizer: string): Promise<string | undefined>;
  removeFinalizer(clusterClass: PostgresClusterClass, finalizer: string): Promise<string | undefined>;
  /**
   * The PostgresClusters that name the class, read from the API now rather than from a cache (the re-check
   * before a finalizer is removed: a cluster the watch has not delivered yet may name it), as their objects.
   */
  usersOf(name: string): Promise<PostgresCluster[]>;
}

/**
 * Operations every child kind supports. An owner write answers the object as stored after it (or as it was,
 * when nothing needed to change), when the adapter knows it: a cache-reading port serves it to the next pass
 * until its watch has caught up (driver/own-writes.ts).
 */
export interface ChildPort<T extends KubeObject> {
  get(ref: ObjectRef): Promise<T | undefined>;
  delete(ref: ObjectRef): Promise<void>;
  setOwner(ref: ObjectRef, owner: OwnerReference): Promise<T | undefined>;
  releaseOwner(ref: ObjectRef, ownerUid: string): Promise<T | undefined>;
}

/**
 * Secrets are read as key names only; the adapter generates the password when it creates one. A create
 * answers the Secret as created (key names only), when the adapter knows it, so it need not be read back.
 */
export interface SecretPort extends ChildPort<SecretView> {
  create(template: SecretTemplate): Promise<SecretView | undefined>;
}

/**
 * The live object an apply was decided on, as the pass observed it (metadata is enough). The adapter
 * writes conditional on its resourceVersion, so that a write decided on an old view — a stale cache, a
 * paused leader — conflicts instead of overwriting newer state. When the pass saw none (undefined), the
 * write creates the object only if it still does not exist, and fails as a conflict if it does, in the
 * same request: an object the view missed is never written over nor adopted, and the pass runs again on
 * a fresh view. An apply that never creates (the managed roles, which carry no owner) reads the object
 * when handed none.
 */
export type Seen = KubeObject | undefined;

/**
 * The CNPG Cluster. `part` names the field manager: the cluster spec and the roles are applied apart. An
 * apply answers the object as stored, when the adapter knows it (as for the owner writes).
 */
export interface CnpgClusterPort extends ChildPort<CnpgCluster> {
  apply(object: CnpgCluster, part: 'cluster' | 'managedRoles', seen?: Seen): Promise<CnpgCluster | undefined>;
}

export interface PoolerPort extends ChildPort<Pooler> {
  /** The pooler with the ready replicas of its Deployment. */
  view(ref: ObjectRef): Promise<PoolerView | undefined>;
  /** Answers the Pooler as stored, when the adapter knows it. */
  apply(object: Pooler, seen?: Seen): Promise<Pooler | undefined>;
}

/** An apply answers the ConfigMap as the API server stored it, when the adapter knows it. */
export interface ConfigMapPort extends ChildPort<ConfigMap> {
  apply(object: ConfigMap, seen?: Seen): Promise<ConfigMap | undefined>;
}

/** A child written by server-side apply as pgfsm's one field manager; answers the object as stored, when known. */
export interface AppliedChildPort<T extends KubeObject> extends ChildPort<T> {
  apply(object: T, seen?: Seen): Promise<T | undefined>;
}

/**
 * The backup objects (issue 36): the Barman Cloud Plugin's ObjectStores and CloudNativePG's ScheduledBackups and
 * Backups. Where the plugin's CRD is not installed, an ObjectStore reads as absent (a 404) and its apply fails.
 */
export interface BackupPorts {
  objectStores: AppliedChildPort<ObjectStore>;
  scheduledBackups: AppliedChildPort<ScheduledBackup>;
  backups: AppliedChildPort<CnpgBackup>;
}

/** What an Event is about: a PostgresCluster or a PostgresDatabase. */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { namespace: string };
}

export interface EventSink {
  emit(regarding: EventSubject, event: KubeEvent): Promise<void>;
}

export interface Clock {
  now(): number;
}

export interface Ports {
  /**
   * The same ports reading the API itself, when these read a cache (src/operator/driver/cache-reads.ts):
   * for the reads that must see what the API holds now, such as reading back a write whose answer was lost.
   */
  direct?: Ports;
  clusters: PostgresClusterPort;
  classes: ClassPort;
  secrets: SecretPort;
  cnpgClusters: CnpgClusterPort;
  poolers: PoolerPort;
  configMaps: ConfigMapPort;
  /**
   * PostgresDatabases: a cluster's pass lists those of its namespace to push their roles (the one writer of
   * `managed.roles`, domain/database/roles.ts); a database's pass reads and writes its own (core/database).
   */
  databases: PostgresDatabasePort;
  /**
   * The backup objects. Optional so that an adapter without them (a test's fake) needs no change: a cluster with a
   * backup policy then observes none of its backup objects, and its writes of them fail (core/execute.ts).
   */
  backupObjects?: BackupPorts;
  events: EventSink;
  clock: Clock;
}
