/**
 * The ports: everything the reconcile core needs from the world. Adapters implement them (in memory for
 * tests and the simulation, Kubernetes for the operator); nothing else talks to the API.
 */
import type { OwnerReference, PostgresCluster, PostgresClusterClass, PostgresClusterStatus } from '../api/schema.ts';
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

export interface ClusterKey {
  namespace: string;
  name: string;
}

export const keyString = (key: ClusterKey) => `${key.namespace}/${key.name}`;

/** The PostgresCluster itself: read, finalizer, status. */
export interface PostgresClusterPort {
  get(key: ClusterKey): Promise<PostgresCluster | undefined>;
  addFinalizer(cluster: PostgresCluster, finalizer: string): Promise<void>;
  removeFinalizer(cluster: PostgresCluster, finalizer: string): Promise<void>;
  writeStatus(cluster: PostgresCluster, status: PostgresClusterStatus): Promise<void>;
}

export interface ClassPort {
  get(name: string): Promise<PostgresClusterClass | undefined>;
}

/** Operations every child kind supports. */
export interface ChildPort<T extends KubeObject> {
  get(ref: ObjectRef): Promise<T | undefined>;
  delete(ref: ObjectRef): Promise<void>;
  setOwner(ref: ObjectRef, owner: OwnerReference): Promise<void>;
  releaseOwner(ref: ObjectRef, ownerUid: string): Promise<void>;
}

/** Secrets are read as key names only; the adapter generates the password when it creates one. */
export interface SecretPort extends ChildPort<SecretView> {
  create(template: SecretTemplate): Promise<void>;
}

/** The CNPG Cluster. `part` names the field manager: the cluster spec and the roles are applied apart. */
export interface CnpgClusterPort extends ChildPort<CnpgCluster> {
  apply(object: CnpgCluster, part: 'cluster' | 'managedRoles'): Promise<void>;
}

export interface PoolerPort extends ChildPort<Pooler> {
  /** The pooler with the ready replicas of its Deployment. */
  view(ref: ObjectRef): Promise<PoolerView | undefined>;
  apply(object: Pooler): Promise<void>;
}

export interface ConfigMapPort extends ChildPort<ConfigMap> {
  apply(object: ConfigMap): Promise<void>;
}

export interface EventSink {
  emit(regarding: PostgresCluster, event: KubeEvent): Promise<void>;
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
  events: EventSink;
  clock: Clock;
}
