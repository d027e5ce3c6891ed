/**
 * The shapes of the Kubernetes objects pgfsm reads and writes, reduced to the fields it uses.
 * Adapters translate between these and the API; the pure core only ever sees these.
 */
import type { ObjectMeta, OwnerReference } from '../api/schema.ts';
import type { ExternalCluster, PluginConfiguration, RecoveryBootstrap } from './backup/objects.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta & { namespace?: string };
}

/** A reference to one object, enough to get, patch or delete it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * A Secret as the core sees it: which keys it holds, never their values. Adapters strip `data`
 * before anything reaches the core, so no secret value can leak into status, events or logs.
 */
export interface SecretView extends KubeObject {
  kind: 'Secret';
  keys: string[];
}

export interface ConfigMap extends KubeObject {
  kind: 'ConfigMap';
  data?: Record<string, string>;
}

export interface CnpgRoleConfiguration {
  name: string;
  ensure?: 'present' | 'absent';
  login?: boolean;
  passwordSecret?: { name: string };
}

/** The part of CNPG's `spec.affinity` pgfsm writes (docs/operations.md: what pgfsm owns on the CNPG Cluster). */
export interface CnpgAffinity {
  enablePodAntiAffinity?: boolean;
  topologyKey?: string;
  podAntiAffinityType?: 'preferred' | 'required';
  nodeSelector?: Record<string, string>;
  tolerations?: Array<{
    key?: string;
    operator?: 'Equal' | 'Exists';
    value?: string;
    effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
    tolerationSeconds?: number;
  }>;
  [other: string]: unknown;
}

/** A Kubernetes topology spread constraint, as pgfsm writes it into CNPG's `spec.topologySpreadConstraints`. */
export interface CnpgTopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  minDomains?: number;
  labelSelector?: {
    matchLabels?: Record<string, string>;
    matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
  };
}

export interface CnpgClusterSpec {
  instances?: number;
  imageName?: string;
  primaryUpdateMethod?: 'restart' | 'switchover';
  postgresql?: { parameters?: Record<string, string>; pg_hba?: string[] };
  superuserSecret?: { name: string };
  enableSuperuserAccess?: boolean;
  bootstrap?: {
    initdb?: { database?: string; owner?: string; secret?: { name: string } };
    /** Only when the cluster starts from a restore (domain/backup/recovery.ts). */
    recovery?: RecoveryBootstrap;
  };
  /** Only the Barman Cloud Plugin's entry, when the cluster is backed up (domain/backup/store.ts). */
  plugins?: PluginConfiguration[];
  externalClusters?: ExternalCluster[];
  storage?: { size?: string; storageClass?: string };
  walStorage?: { size?: string; storageClass?: string };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  affinity?: CnpgAffinity;
  topologySpreadConstraints?: CnpgTopologySpreadConstraint[];
  monitoring?: { enablePodMonitor?: boolean; [other: string]: unknown };
  managed?: { roles?: CnpgRoleConfiguration[] };
  [other: string]: unknown;
}

export interface CnpgClusterStatus {
  phase?: string;
  phaseReason?: string;
  instances?: number;
  readyInstances?: number;
  currentPrimary?: string;
  writeService?: string;
  readService?: string;
  /**
   * The image CNPG has taken up for the cluster: its controller sets it from `spec.imageName` when it first
   * reconciles a new one (`reconcileImage`), before it rolls the instances. CNPG v1.28 publishes no
   * observedGeneration, so this is the one sign that it has seen a new image.
   */
  image?: string;
  managedRolesStatus?: {
    byStatus?: Record<string, string[] | undefined>;
    cannotReconcile?: Record<string, string[] | undefined>;
  };
  /** CNPG's conditions; pgfsm reads ContinuousArchiving and LastBackupSucceeded (domain/backup/health.ts). */
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }>;
}

export interface CnpgCluster extends KubeObject {
  apiVersion: 'postgresql.cnpg.io/v1';
  kind: 'Cluster';
  spec: CnpgClusterSpec;
  status?: CnpgClusterStatus;
}

export interface PoolerSpec {
  cluster: { name: string };
  type: 'rw' | 'ro' | 'r';
  instances?: number;
  pgbouncer: { poolMode?: 'session' | 'transaction'; parameters?: Record<string, string> };
}

export interface Pooler extends KubeObject {
  apiVersion: 'postgresql.cnpg.io/v1';
  kind: 'Pooler';
  spec: PoolerSpec;
  status?: { instances?: number };
}

/**
 * What pgfsm knows about one pooler: the CNPG object plus the ready replicas of the Deployment CNPG
 * runs for it. CNPG's own `status.instances` counts scheduled pods, so it is no readiness signal.
 */
export interface PoolerView {
  pooler: Pooler;
  readyReplicas: number;
}

export type { ObjectMeta, OwnerReference };

export const CNPG_API_VERSION = 'postgresql.cnpg.io/v1';

/** The label CNPG puts on the Deployment it runs for a Pooler (since v1.22), naming the Pooler. */
export const POOLER_NAME_LABEL = 'cnpg.io/poolerName';

export function refOf(object: KubeObject): ObjectRef {
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    namespace: object.metadata.namespace ?? '',
    name: object.metadata.name,
  };
}
