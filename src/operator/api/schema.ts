/**
 * The one schema source of the pgfsm API (group pgfsm.io, version v1alpha1).
 *
 * TypeBox gives both the TypeScript types (`Static<...>`) and the JSON schema that becomes the CRDs'
 * `openAPIV3Schema`, so the types the operator compiles against and the schema the API server enforces
 * cannot drift. CEL rules (`x-kubernetes-validations`) live here too, next to the fields they guard.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

export const GROUP = 'pgfsm.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Longest PostgresCluster name: derived names such as `<name>-pooler-rw` must stay valid object names. */
export const MAX_CLUSTER_NAME_LENGTH = 50;

const cel = (rule: string, message: string, fieldPath?: string) => ({
  rule,
  message,
  ...(fieldPath ? { fieldPath } : {}),
});

/** A Kubernetes resource quantity such as `10Gi` or `500m`. */
export const Quantity = Type.String({
  // Bounded so the API server can cost the CEL rules that read it.
  maxLength: 63,
  pattern: '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$',
  description: 'A Kubernetes quantity, e.g. 10Gi',
});

const StringMap = Type.Record(Type.String(), Type.String());

export const ResourceRequirements = Type.Object(
  {
    requests: Type.Optional(Type.Record(Type.String(), Quantity)),
    limits: Type.Optional(Type.Record(Type.String(), Quantity)),
  },
  { description: 'CPU and memory requests and limits of each PostgreSQL instance' },
);

const Instances = Type.Integer({ minimum: 1, maximum: 10 });
const PostgresVersion = Type.String({
  maxLength: 8,
  pattern: '^[0-9]+(\\.[0-9]+)?$',
  description: 'PostgreSQL version, major or major.minor (e.g. 17 or 17.2)',
});

export const PoolMode = Type.Union([Type.Literal('session'), Type.Literal('transaction')], {
  description: 'PgBouncer pool mode; CNPG accepts only session and transaction',
});

export const ConnectionPoolerConfig = Type.Object({
  instances: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, default: 3 })),
  mode: Type.Optional({ ...PoolMode, default: 'transaction' }),
  parameters: Type.Optional(StringMap),
});

export const ClassConfig = Type.Object({
  instances: Type.Optional({ ...Instances, default: 1 }),
  storage: Type.Optional(Quantity),
  postgresVersion: Type.Optional(PostgresVersion),
  resources: Type.Optional(ResourceRequirements),
  postgresqlConfig: Type.Optional(StringMap),
  pgHBA: Type.Optional(Type.Array(Type.String())),
  connectionPoolerEnabled: Type.Optional(Type.Boolean({ default: false })),
});

export const PostgresClusterClassSpec = Type.Object(
  {
    provisioner: Type.Literal('postgresql.cnpg.io'),
    config: Type.Optional(ClassConfig),
    cnpg: Type.Optional(
      Type.Object({
        primaryUpdateMethod: Type.Optional(
          Type.Union([Type.Literal('restart'), Type.Literal('switchover')], { default: 'switchover' }),
        ),
        connectionPooler: Type.Optional(ConnectionPoolerConfig),
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      cel(
        '!has(self.config) || !has(self.config.connectionPoolerEnabled) || !self.config.connectionPoolerEnabled || (has(self.cnpg) && has(self.cnpg.connectionPooler))',
        'cnpg.connectionPooler must be set when config.connectionPoolerEnabled is true',
        '.cnpg',
      ),
    ],
  },
);

export const ManagedRole = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 63 }),
  // CNPG reads the keys `username` and `password` of this Secret; no other key can be chosen.
  passwordSecretRef: Type.Optional(Type.Object({ name: Type.String({ minLength: 1 }) })),
  exists: Type.Optional(Type.Boolean({ default: true, description: 'false removes the role from PostgreSQL' })),
});

export const DeletionPolicy = Type.Union([Type.Literal('Delete'), Type.Literal('Retain')]);

export const PostgresClusterSpec = Type.Object(
  {
    class: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
      description: 'Name of the PostgresClusterClass; immutable',
      'x-kubernetes-validations': [cel('self == oldSelf', 'class is immutable')],
    }),
    instances: Type.Optional(Instances),
    postgresVersion: Type.Optional(PostgresVersion),
    storage: Type.Optional(Quantity),
    resources: Type.Optional(ResourceRequirements),
    postgresqlConfig: Type.Optional(StringMap),
    pgHBA: Type.Optional(Type.Array(Type.String())),
    connectionPoolerEnabled: Type.Optional(Type.Boolean()),
    managedRoles: Type.Optional(
      Type.Array(ManagedRole, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] }),
    ),
    clusterDeletionPolicy: Type.Optional({ ...DeletionPolicy, default: 'Retain' }),
    suspend: Type.Optional(Type.Boolean({ default: false, description: 'true stops all writes to the children' })),
  },
  {
    'x-kubernetes-validations': [
      cel('!has(oldSelf.storage) || has(self.storage)', 'storage cannot be removed once set', '.storage'),
      cel(
        '!has(oldSelf.storage) || !has(self.storage) || quantity(self.storage).compareTo(quantity(oldSelf.storage)) >= 0',
        'storage cannot shrink',
        '.storage',
      ),
      cel(
        '!has(oldSelf.postgresVersion) || has(self.postgresVersion)',
        'postgresVersion cannot be removed once set',
        '.postgresVersion',
      ),
      cel(
        "!has(oldSelf.postgresVersion) || !has(self.postgresVersion) || int(self.postgresVersion.split('.')[0]) >= int(oldSelf.postgresVersion.split('.')[0])",
        'the major version of postgresVersion cannot go down',
        '.postgresVersion',
      ),
    ],
  },
);

export const Condition = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String(),
  message: Type.String(),
});

export const Phase = Type.Union(
  ['Pending', 'Provisioning', 'Ready', 'Degraded', 'Failed', 'Suspended', 'Deleting'].map((p) => Type.Literal(p)),
);

export const PostgresClusterStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  phase: Type.Optional(Phase),
  state: Type.Optional(Type.String({ description: "The statechart's state value; the persisted source of truth" })),
  stateSince: Type.Optional(Type.String({ format: 'date-time', description: 'When the machine entered `state`' })),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
  provisionerRef: Type.Optional(
    Type.Object({
      apiVersion: Type.String(),
      kind: Type.String(),
      namespace: Type.String(),
      name: Type.String(),
      uid: Type.Optional(Type.String()),
    }),
  ),
  connectionPoolerStatus: Type.Optional(Type.Object({ enabled: Type.Boolean() })),
  managedRolesStatus: Type.Optional(
    Type.Object({
      reconciled: Type.Optional(Type.Array(Type.String())),
      pending: Type.Optional(Type.Array(Type.String())),
      failed: Type.Optional(StringMap),
    }),
  ),
  resources: Type.Optional(
    Type.Object({
      secretRef: Type.Optional(Type.Object({ name: Type.String(), key: Type.String() })),
      configMapRef: Type.Optional(Type.Object({ name: Type.String() })),
    }),
  ),
  instances: Type.Optional(Type.Integer()),
  readyInstances: Type.Optional(Type.Integer()),
  currentPrimary: Type.Optional(Type.String()),
});

export type Quantity = Static<typeof Quantity>;
export type PoolMode = Static<typeof PoolMode>;
export type ClassConfig = Static<typeof ClassConfig>;
export type PostgresClusterClassSpec = Static<typeof PostgresClusterClassSpec>;
export type ManagedRole = Static<typeof ManagedRole>;
export type DeletionPolicy = Static<typeof DeletionPolicy>;
export type PostgresClusterSpec = Static<typeof PostgresClusterSpec>;
export type Condition = Static<typeof Condition>;
export type Phase = Static<typeof Phase>;
export type PostgresClusterStatus = Static<typeof PostgresClusterStatus>;
export type ResourceRequirements = Static<typeof ResourceRequirements>;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface PostgresCluster {
  apiVersion: typeof API_VERSION;
  kind: 'PostgresCluster';
  metadata: ObjectMeta & { namespace: string };
  spec: PostgresClusterSpec;
  status?: PostgresClusterStatus;
}

export interface PostgresClusterClass {
  apiVersion: typeof API_VERSION;
  kind: 'PostgresClusterClass';
  metadata: ObjectMeta;
  spec: PostgresClusterClassSpec;
}

/** Schemas by kind, for the CRD generator. */
export const schemas: Record<'PostgresCluster' | 'PostgresClusterClass', { spec: TSchema; status?: TSchema }> = {
  PostgresCluster: { spec: PostgresClusterSpec, status: PostgresClusterStatus },
  PostgresClusterClass: { spec: PostgresClusterClassSpec },
};
