/**
 * The one schema source of the pgfsm API (group pgfsm.io, version v1alpha1).
 *
 * TypeBox gives both the TypeScript types (`Static<...>`) and the JSON schema that becomes the CRDs'
 * `openAPIV3Schema`, so the types the operator compiles against and the schema the API server enforces
 * cannot drift. CEL rules (`x-kubernetes-validations`) live here too, next to the fields they guard.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import {
  BOOLEAN_PARAMETERS,
  COMPARED_RESOURCES,
  DNS_1123_SUBDOMAIN,
  FALSE_SPELLINGS,
  FIXED_PARAMETERS,
  HUGEPAGES_PREFIX,
  LIMITS,
  MAX_ROLE_NAME_BYTES,
  MEMORY_PARAMETERS,
  MEMORY_VALUE_PATTERN,
  MIN_MAJOR_UPGRADE_TARGET,
  MIN_POSTGRES_MAJOR,
  MIN_STORAGE,
  PARAMETER_NAME_PATTERN,
  PGBOUNCER_PARAMETERS,
  POD_RESOURCES_HINT,
  POSTGRES_RESERVED_ROLE_NAMES,
  RESERVED_ROLE_NAMES,
  RESERVED_ROLE_PREFIXES,
  RESOURCE_NAME_PATTERN,
  ROLE_NAME_PATTERN,
  SINGLE_LINE_PATTERN,
  TRUE_SPELLINGS,
  WAL_LEVELS,
} from './cnpg-rules.ts';
import {
  type PostgresDatabaseSpec,
  PostgresDatabaseSpec as PostgresDatabaseSpecSchema,
  type PostgresDatabaseStatus,
  PostgresDatabaseStatus as PostgresDatabaseStatusSchema,
} from './database-schema.ts';
import { DeletionPolicy, lifecycleStatusProperties } from './schema-parts.ts';

export { Condition, DeletionPolicy, Phase } from './schema-parts.ts';
export type { PostgresDatabaseSpec, PostgresDatabaseStatus };

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

/** A CEL rule whose message is computed (it names the offending key); `message` is the fallback. */
const celNaming = (rule: string, messageExpression: string, message: string) => ({ rule, messageExpression, message });

/** A CEL list literal of strings. */
const celList = (values: readonly string[]) => `[${values.map((value) => `'${value}'`).join(', ')}]`;

/** The CEL quantity of a PostgreSQL size that matches MEMORY_VALUE_PATTERN, read as CNPG reads it (bare = MB). */
const celPgMemory = (value: string) =>
  `quantity(${value}.matches('^[0-9]+$') ? ${value} + 'Mi' : ${value}.replace(' ', '').replace('kB', 'Ki')` +
  `.replace('MB', 'Mi').replace('GB', 'Gi').replace('TB', 'Ti').replace('B', ''))`;

/** The CEL test that parameter `key` of map `map` is set to a PostgreSQL size CNPG can read. */
const celPgMemorySet = (map: string, key: string) =>
  `'${key}' in ${map} && ${map}['${key}'].matches(r'${MEMORY_VALUE_PATTERN}')`;

/** A Kubernetes resource quantity such as `10Gi` or `500m`. */
export const Quantity = Type.String({
  // Bounded so the API server can cost the CEL rules that read it.
  maxLength: 63,
  pattern: '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$',
  description: 'A Kubernetes quantity, e.g. 10Gi',
});

/** The size of each instance's volume: a quantity, and enough for PostgreSQL (MIN_STORAGE). */
const StorageSize = Type.String({
  ...Quantity,
  description: `Size of each instance's volume, a Kubernetes quantity of at least ${MIN_STORAGE}, e.g. 10Gi`,
  'x-kubernetes-validations': [
    cel(
      // isQuantity: what the pattern refuses must not also fail to evaluate here.
      `!isQuantity(self) || quantity(self).compareTo(quantity('${MIN_STORAGE}')) >= 0`,
      `storage must be at least ${MIN_STORAGE}: PostgreSQL keeps its data and its WAL on this volume (CloudNativePG keeps 512MB of WAL by default)`,
    ),
  ],
});

const StringMap = Type.Record(Type.String(), Type.String());

const ResourceMap = Type.Record(Type.String(), Quantity, {
  maxProperties: LIMITS.resources,
  'x-kubernetes-validations': [
    celNaming(
      `self.all(k, k.matches(r'${RESOURCE_NAME_PATTERN}'))`,
      `self.filter(k, !k.matches(r'${RESOURCE_NAME_PATTERN}'))[0] + ' is no resource of a PostgreSQL pod: ${POD_RESOURCES_HINT}'`,
      POD_RESOURCES_HINT,
    ),
  ],
});

const hasHugepages = (map: string) =>
  `(has(self.${map}) && self.${map}.exists(k, k.startsWith('${HUGEPAGES_PREFIX}')))`;
const nonZero = (map: string, key: string) =>
  `(has(self.${map}) && '${key}' in self.${map} && quantity(self.${map}['${key}']).compareTo(quantity('0')) != 0)`;

/** CNPG's resource rules: a request never above its limit, hugepages requested as limited and never alone. */
const resourceRules = [
  ...COMPARED_RESOURCES.map((resource) =>
    cel(
      `!has(self.requests) || !has(self.limits) || !('${resource}' in self.requests) || !('${resource}' in self.limits) || quantity(self.limits['${resource}']).compareTo(quantity('0')) == 0 || quantity(self.requests['${resource}']).compareTo(quantity(self.limits['${resource}'])) <= 0`,
      `resources.requests.${resource} must be less than or equal to resources.limits.${resource}`,
    ),
  ),
  cel(
    `!has(self.requests) || !has(self.limits) || self.requests.all(k, !k.startsWith('${HUGEPAGES_PREFIX}') || !(k in self.limits) || quantity(self.requests[k]).compareTo(quantity(self.limits[k])) == 0)`,
    `resources.requests.${HUGEPAGES_PREFIX}* must equal resources.limits.${HUGEPAGES_PREFIX}* of the same page size`,
  ),
  cel(
    `!(${hasHugepages('requests')} || ${hasHugepages('limits')}) || ${nonZero('requests', 'cpu')} || ${nonZero('requests', 'memory')} || ${nonZero('limits', 'cpu')} || ${nonZero('limits', 'memory')}`,
    `resources with ${HUGEPAGES_PREFIX}* must also set a cpu or memory request or limit`,
  ),
];

export const ResourceRequirements = Type.Object(
  {
    requests: Type.Optional(ResourceMap),
    limits: Type.Optional(ResourceMap),
  },
  {
    description: 'CPU and memory requests and limits of each PostgreSQL instance',
    'x-kubernetes-validations': resourceRules,
  },
);

const FIXED = celList(FIXED_PARAMETERS);
const BOOLEANS = celList([...TRUE_SPELLINGS, ...FALSE_SPELLINGS]);

/** One line of a configuration file, bounded: CNPG copies it into the file as it is. */
const ConfigLine = (maxLength: number) => Type.String({ maxLength, pattern: SINGLE_LINE_PATTERN });

/**
 * PostgreSQL parameters: bounded in size, named as PostgreSQL names them, none CNPG fixes, one line each, and the
 * values CNPG parses in a form it accepts.
 */
const PostgresqlConfig = Type.Record(Type.String(), ConfigLine(LIMITS.parameterValue), {
  maxProperties: LIMITS.parameters,
  description: `PostgreSQL parameters (at most ${LIMITS.parameters}); the ones CloudNativePG fixes cannot be set`,
  'x-kubernetes-validations': [
    cel(
      `self.all(k, k.size() <= ${LIMITS.parameterName})`,
      `postgresqlConfig parameter names must be at most ${LIMITS.parameterName} characters`,
    ),
    cel(
      `self.all(k, k.matches(r'${PARAMETER_NAME_PATTERN}'))`,
      "postgresqlConfig parameter names must be PostgreSQL's: letters, digits and '_', not starting with a digit, with at most one '.' (an extension's parameter)",
    ),
    celNaming(
      `self.all(k, !(k in ${FIXED}))`,
      `'postgresqlConfig.' + self.filter(k, k in ${FIXED})[0] + ' cannot be set: CloudNativePG fixes this parameter (every parameter it does not fix is allowed)'`,
      'postgresqlConfig sets a parameter CloudNativePG fixes (port, listen_addresses, data_directory, …)',
    ),
    cel(
      `!('wal_level' in self) || self['wal_level'] in ${celList(WAL_LEVELS)}`,
      `postgresqlConfig.wal_level must be ${WAL_LEVELS.join(' or ')} (CloudNativePG archives WAL, which rules out minimal)`,
    ),
    ...BOOLEAN_PARAMETERS.map((key) =>
      cel(
        `!('${key}' in self) || self['${key}'].lowerAscii() in ${BOOLEANS}`,
        `postgresqlConfig.${key} must be a PostgreSQL boolean: on, off, true, false, yes, no, 1 or 0`,
      ),
    ),
    ...MEMORY_PARAMETERS.map((key) =>
      cel(
        `!('${key}' in self) || self['${key}'].matches(r'${MEMORY_VALUE_PATTERN}')`,
        `postgresqlConfig.${key} must be a size such as 128MB or 1GB (units B, kB, MB, GB, TB; a bare number means MB)`,
      ),
    ),
    cel(
      `!(${celPgMemorySet('self', 'min_wal_size')}) || !(${celPgMemorySet('self', 'max_wal_size')}) || ${celPgMemory("self['min_wal_size']")}.compareTo(quantity('0')) == 0 || ${celPgMemory("self['max_wal_size']")}.compareTo(quantity('0')) == 0 || ${celPgMemory("self['min_wal_size']")}.compareTo(${celPgMemory("self['max_wal_size']")}) < 0`,
      'postgresqlConfig.min_wal_size must be smaller than postgresqlConfig.max_wal_size',
    ),
  ],
});

const SHARED_BUFFERS = celPgMemory("self.postgresqlConfig['shared_buffers']");
const coversSharedBuffers = (map: string) =>
  `(has(self.resources.${map}) && self.resources.${map}.exists(k, k.startsWith('${HUGEPAGES_PREFIX}') && ${SHARED_BUFFERS}.compareTo(quantity(self.resources.${map}[k])) <= 0))`;

/** CNPG's rules across fields of one config (the cluster's or the class's): judged here when both are set. */
const configRules = [
  cel(
    `!has(self.instances) || self.instances <= 1 || !has(self.postgresqlConfig) || !('wal_log_hints' in self.postgresqlConfig) || !(self.postgresqlConfig['wal_log_hints'].lowerAscii() in ${celList(FALSE_SPELLINGS)})`,
    'postgresqlConfig.wal_log_hints must be on when instances is greater than 1',
  ),
  cel(
    `!has(self.postgresqlConfig) || !(${celPgMemorySet('self.postgresqlConfig', 'shared_buffers')}) || !has(self.resources) || !has(self.resources.requests) || !('memory' in self.resources.requests) || quantity(self.resources.requests['memory']).compareTo(quantity('0')) == 0 || ${SHARED_BUFFERS}.compareTo(quantity(self.resources.requests['memory'])) <= 0 || ${coversSharedBuffers('requests')} || ${coversSharedBuffers('limits')}`,
    'resources.requests.memory must be at least postgresqlConfig.shared_buffers (or a hugepages-* resource must hold it)',
  ),
];

/** PostgreSQL's pg_hba lines, bounded in number and length. */
const PgHBA = Type.Array(ConfigLine(LIMITS.pgHbaLine), { maxItems: LIMITS.pgHbaLines });

const Instances = Type.Integer({ minimum: 1, maximum: 10 });
const PostgresVersion = Type.String({
  maxLength: 8,
  pattern: '^[0-9]+(\\.[0-9]+)?$',
  description: `PostgreSQL version, major or major.minor (e.g. 17 or 17.2), ${MIN_POSTGRES_MAJOR} or newer`,
  'x-kubernetes-validations': [
    cel(
      `!self.matches('^[0-9]+') || int(self.split('.')[0]) >= ${MIN_POSTGRES_MAJOR}`,
      `postgresVersion must be ${MIN_POSTGRES_MAJOR} or newer: CloudNativePG supports PostgreSQL ${MIN_POSTGRES_MAJOR} and later`,
    ),
  ],
});

export const PoolMode = Type.Union([Type.Literal('session'), Type.Literal('transaction')], {
  description: 'PgBouncer pool mode; CNPG accepts only session and transaction',
});

export const ConnectionPoolerConfig = Type.Object({
  instances: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, default: 3 })),
  mode: Type.Optional({ ...PoolMode, default: 'transaction' }),
  parameters: Type.Optional(
    Type.Record(Type.String(), ConfigLine(LIMITS.parameterValue), {
      maxProperties: LIMITS.poolerParameters,
      description: 'PgBouncer parameters; only the ones CloudNativePG lets a Pooler set',
      'x-kubernetes-validations': [
        celNaming(
          `self.all(k, k in ${celList(PGBOUNCER_PARAMETERS)})`,
          `'cnpg.connectionPooler.parameters.' + self.filter(k, !(k in ${celList(PGBOUNCER_PARAMETERS)}))[0] + ' cannot be set: CloudNativePG reserves it or does not know it (allowed: the PgBouncer parameters listed in docs/cnpg-admission.md, e.g. default_pool_size, max_client_conn)'`,
          'cnpg.connectionPooler.parameters sets a PgBouncer parameter CloudNativePG reserves (listen_port, pool_mode, …)',
        ),
      ],
    }),
  ),
});

export const ClassConfig = Type.Object(
  {
    instances: Type.Optional({ ...Instances, default: 1 }),
    storage: Type.Optional(StorageSize),
    postgresVersion: Type.Optional(PostgresVersion),
    resources: Type.Optional(ResourceRequirements),
    postgresqlConfig: Type.Optional(PostgresqlConfig),
    pgHBA: Type.Optional(PgHBA),
    connectionPoolerEnabled: Type.Optional(Type.Boolean({ default: false })),
  },
  { 'x-kubernetes-validations': configRules },
);

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
  name: Type.String({
    minLength: 1,
    maxLength: 63,
    pattern: ROLE_NAME_PATTERN,
    'x-kubernetes-validations': [
      cel(
        `!(self in ${celList(RESERVED_ROLE_NAMES)}) && ${RESERVED_ROLE_PREFIXES.map((prefix) => `!self.startsWith('${prefix}')`).join(' && ')}`,
        `managed role name cannot be ${RESERVED_ROLE_NAMES.join(' or ')} nor start with ${RESERVED_ROLE_PREFIXES.join(' or ')}: CloudNativePG and PostgreSQL reserve them`,
      ),
      cel(
        `!(self in ${celList(POSTGRES_RESERVED_ROLE_NAMES)})`,
        `managed role name cannot be ${POSTGRES_RESERVED_ROLE_NAMES.join(' or ')}: PostgreSQL reserves them (public stands for every role)`,
      ),
      cel(
        // maxLength counts characters; PostgreSQL counts the bytes of the name in UTF-8.
        `bytes(self).size() <= ${MAX_ROLE_NAME_BYTES}`,
        `managed role name must be at most ${MAX_ROLE_NAME_BYTES} bytes in UTF-8: PostgreSQL cuts longer names, so the role would be created under another name`,
      ),
    ],
  }),
  // CNPG reads the keys `username` and `password` of this Secret; no other key can be chosen.
  passwordSecretRef: Type.Optional(
    Type.Object({
      name: Type.String({
        minLength: 1,
        maxLength: 253,
        'x-kubernetes-validations': [
          cel(
            `self.matches(r'${DNS_1123_SUBDOMAIN}')`,
            "passwordSecretRef.name must be a Secret's name, a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)",
          ),
        ],
      }),
    }),
  ),
  exists: Type.Optional(Type.Boolean({ default: true, description: 'false removes the role from PostgreSQL' })),
});

/**
 * The transition rules below read both versions' majors with int(). One stored before the schema (or with it off)
 * may hold something int() cannot read; the rule must then pass rather than fail with an evaluation error, which the
 * API server would return for every write of the object, status included, leaving the operator unable to report.
 */
const MAJORS_UNREADABLE =
  "!self.postgresVersion.matches('^[0-9]+([.].*)?$') || !oldSelf.postgresVersion.matches('^[0-9]+([.].*)?$')";

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
    storage: Type.Optional(StorageSize),
    resources: Type.Optional(ResourceRequirements),
    postgresqlConfig: Type.Optional(PostgresqlConfig),
    pgHBA: Type.Optional(PgHBA),
    connectionPoolerEnabled: Type.Optional(Type.Boolean()),
    managedRoles: Type.Optional(
      Type.Array(ManagedRole, {
        maxItems: LIMITS.managedRoles,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    clusterDeletionPolicy: Type.Optional({ ...DeletionPolicy, default: 'Retain' }),
    suspend: Type.Optional(Type.Boolean({ default: false, description: 'true stops all writes to the children' })),
  },
  {
    'x-kubernetes-validations': [
      cel('!has(oldSelf.storage) || has(self.storage)', 'storage cannot be removed once set', '.storage'),
      cel(
        // isQuantity: as for MAJORS_UNREADABLE, a stored storage no quantity reads must not block every write.
        '!has(oldSelf.storage) || !has(self.storage) || !isQuantity(self.storage) || !isQuantity(oldSelf.storage) || quantity(self.storage).compareTo(quantity(oldSelf.storage)) >= 0',
        'storage cannot shrink',
        '.storage',
      ),
      cel(
        '!has(oldSelf.postgresVersion) || has(self.postgresVersion)',
        'postgresVersion cannot be removed once set',
        '.postgresVersion',
      ),
      cel(
        `!has(oldSelf.postgresVersion) || !has(self.postgresVersion) || ${MAJORS_UNREADABLE} || int(self.postgresVersion.split('.')[0]) >= int(oldSelf.postgresVersion.split('.')[0])`,
        'the major version of postgresVersion cannot go down',
        '.postgresVersion',
      ),
      cel(
        `!has(oldSelf.postgresVersion) || !has(self.postgresVersion) || ${MAJORS_UNREADABLE} || int(self.postgresVersion.split('.')[0]) <= int(oldSelf.postgresVersion.split('.')[0]) || int(self.postgresVersion.split('.')[0]) >= ${MIN_MAJOR_UPGRADE_TARGET}`,
        `a major upgrade of postgresVersion must go to ${MIN_MAJOR_UPGRADE_TARGET} or newer: CloudNativePG cannot upgrade to an older major`,
        '.postgresVersion',
      ),
      ...configRules,
    ],
  },
);

/** A child write the API server refused: which component, which object (by digest) and what it said. */
export const RejectedWrite = Type.Object({
  component: Type.Union([Type.Literal('cluster'), Type.Literal('managedRoles'), Type.Literal('pooler')]),
  digest: Type.String({ description: 'SHA-256 of the refused object, as pgfsm sent it' }),
  message: Type.String({ description: 'What the API server said, verbatim' }),
});

export const PostgresClusterStatus = Type.Object({
  ...lifecycleStatusProperties(),
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
  rejectedWrites: Type.Optional(
    Type.Array(RejectedWrite, {
      description:
        'Writes to a child the API server refused (e.g. by the CNPG webhook), remembered so that the same object is ' +
        'not sent again until the spec, the class or the world changes it',
    }),
  ),
});

export type Quantity = Static<typeof Quantity>;
export type PoolMode = Static<typeof PoolMode>;
export type ClassConfig = Static<typeof ClassConfig>;
export type PostgresClusterClassSpec = Static<typeof PostgresClusterClassSpec>;
export type ManagedRole = Static<typeof ManagedRole>;
export type PostgresClusterSpec = Static<typeof PostgresClusterSpec>;
export type PostgresClusterStatus = Static<typeof PostgresClusterStatus>;
export type RejectedWrite = Static<typeof RejectedWrite>;
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

export interface PostgresDatabase {
  apiVersion: typeof API_VERSION;
  kind: 'PostgresDatabase';
  metadata: ObjectMeta & { namespace: string };
  spec: PostgresDatabaseSpec;
  status?: PostgresDatabaseStatus;
}

/** Schemas by kind, for the CRD generator. */
export const schemas: Record<
  'PostgresCluster' | 'PostgresClusterClass' | 'PostgresDatabase',
  { spec: TSchema; status?: TSchema }
> = {
  PostgresCluster: { spec: PostgresClusterSpec, status: PostgresClusterStatus },
  PostgresClusterClass: { spec: PostgresClusterClassSpec },
  PostgresDatabase: { spec: PostgresDatabaseSpecSchema, status: PostgresDatabaseStatusSchema },
};
