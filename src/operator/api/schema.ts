/**
 * The one schema source of the pgfsm API (group pgfsm.io, version v1alpha1).
 *
 * TypeBox gives both the TypeScript types (`Static<...>`) and the JSON schema that becomes the CRDs'
 * `openAPIV3Schema`, so the types the operator compiles against and the schema the API server enforces
 * cannot drift. CEL rules (`x-kubernetes-validations`) live here too, next to the fields they guard.
 */
import { type Static, type TLiteral, type TSchema, type TUnion, Type } from '@sinclair/typebox';
import { BackupStatus, ClassBackup, ClusterBackup, Restore, RestoreStatus } from './backup-schema.ts';
import {
  BOOLEAN_PARAMETERS,
  COMPARED_RESOURCES,
  DNS_1123_SUBDOMAIN,
  FALSE_SPELLINGS,
  FIXED_PARAMETERS,
  HUGEPAGES_PREFIX,
  IMAGE_NAME_HINT,
  IMAGE_NAME_PATTERN,
  LABEL_NAME_PATTERN,
  LABEL_VALUE_PATTERN,
  LIMITS,
  MAX_ROLE_NAME_BYTES,
  MEMORY_PARAMETERS,
  MEMORY_VALUE_PATTERN,
  MIN_MAJOR_UPGRADE_TARGET,
  MIN_POSTGRES_MAJOR,
  MIN_STORAGE,
  PARAMETER_NAME_PATTERN,
  PG_HBA_REFERENCE_MESSAGE,
  PG_HBA_REFERENCE_PATTERN,
  PGBOUNCER_PARAMETERS,
  POD_ANTI_AFFINITY_TYPES,
  POD_RESOURCES_HINT,
  POSTGRES_RESERVED_ROLE_NAMES,
  RESERVED_ROLE_NAMES,
  RESERVED_ROLE_PREFIXES,
  RESOURCE_NAME_PATTERN,
  ROLE_NAME_PATTERN,
  SINGLE_LINE_PATTERN,
  TAINT_EFFECTS,
  TOLERATION_OPERATORS,
  TRUE_SPELLINGS,
  WAL_LEVELS,
} from './cnpg-rules.ts';
import {
  type PostgresDatabaseSpec,
  PostgresDatabaseSpec as PostgresDatabaseSpecSchema,
  type PostgresDatabaseStatus,
  PostgresDatabaseStatus as PostgresDatabaseStatusSchema,
} from './database-schema.ts';
import { cel, DeletionPolicy, lifecycleStatusProperties } from './schema-parts.ts';

export type {
  BackupStatus,
  ClassBackup,
  ClusterBackup,
  ObjectStorePolicy,
  Restore,
  RestoreStatus,
} from './backup-schema.ts';
export { Condition, DeletionPolicy, Phase } from './schema-parts.ts';
export type { PostgresDatabaseSpec, PostgresDatabaseStatus };

export const GROUP = 'pgfsm.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Longest PostgresCluster name: derived names such as `<name>-pooler-rw` must stay valid object names. */
export const MAX_CLUSTER_NAME_LENGTH = 50;

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

const ResourceMap = (what: string) =>
  Type.Record(Type.String(), Quantity, {
    description: `${what} by resource name: ${POD_RESOURCES_HINT}`,
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
    requests: Type.Optional(ResourceMap('What the scheduler reserves for each instance')),
    limits: Type.Optional(ResourceMap('The most each instance may use')),
  },
  {
    description:
      'CPU and memory requests and limits of each PostgreSQL instance (CNPG spec.resources). Taken whole from the ' +
      'cluster when it sets it, else from its class; a request is never above its limit',
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
const PgHBA = Type.Array(
  {
    ...ConfigLine(LIMITS.pgHbaLine),
    description: 'One pg_hba.conf line, e.g. hostssl all all 10.0.0.0/8 scram-sha-256',
    'x-kubernetes-validations': [cel(`!self.matches(r'${PG_HBA_REFERENCE_PATTERN}')`, PG_HBA_REFERENCE_MESSAGE)],
  },
  {
    maxItems: LIMITS.pgHbaLines,
    description:
      "Lines CloudNativePG adds to pg_hba.conf before its own (CNPG spec.postgresql.pg_hba). The cluster's list, when " +
      "not empty, replaces the class's",
  },
);

const Instances = Type.Integer({
  minimum: 1,
  maximum: 10,
  description:
    'Number of PostgreSQL instances (CNPG spec.instances): one primary and the rest streaming replicas, 1 to 10. ' +
    'More than 1 needs wal_log_hints on (the default)',
});
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

/** The CEL major version an image name's tag starts with; only for a value that matches IMAGE_NAME_PATTERN. */
const celImageMajor = (value: string) =>
  `int(${value}.find(':[0-9]+([._-][A-Za-z0-9._-]*)?(@sha256:[a-f0-9]{64})?$').substring(1).find('^[0-9]+'))`;
const celImageReadable = (value: string) => `${value}.matches(r'${IMAGE_NAME_PATTERN}')`;
/** A postgresVersion whose major int() can read (a stored one may be anything). */
const celVersionReadable = (value: string) => `${value}.matches('^[0-9]{1,6}([.].*)?$')`;
const celVersionMajor = (value: string) => `int(${value}.split('.')[0])`;

const ImageName = Type.String({
  minLength: 1,
  maxLength: LIMITS.imageName,
  description:
    'A pinned PostgreSQL image (CNPG spec.imageName), e.g. ghcr.io/cloudnative-pg/postgresql:17.2-standard-bookworm; ' +
    'its tag must start with the PostgreSQL version. When set it wins over postgresVersion, which may then be left ' +
    'out or must name the same major version. Without it pgfsm runs ghcr.io/cloudnative-pg/postgresql:<postgresVersion>',
  'x-kubernetes-validations': [
    cel(celImageReadable('self'), IMAGE_NAME_HINT),
    cel(
      `!${celImageReadable('self')} || ${celImageMajor('self')} >= ${MIN_POSTGRES_MAJOR}`,
      `imageName must run PostgreSQL ${MIN_POSTGRES_MAJOR} or newer: CloudNativePG supports PostgreSQL ${MIN_POSTGRES_MAJOR} and later`,
    ),
  ],
});

/** A StorageClass's name: a DNS-1123 subdomain. */
const StorageClassName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: DNS_1123_SUBDOMAIN, description });

export const WalStorage = Type.Object(
  {
    size: Type.String({
      ...Quantity,
      description: `Size of each instance's WAL volume, a Kubernetes quantity of at least ${MIN_STORAGE}; it can grow, never shrink`,
      'x-kubernetes-validations': [
        cel(
          `!isQuantity(self) || quantity(self).compareTo(quantity('${MIN_STORAGE}')) >= 0`,
          `walStorage.size must be at least ${MIN_STORAGE}: PostgreSQL keeps up to max_wal_size (1GB by default) of WAL there`,
        ),
      ],
    }),
    storageClass: Type.Optional(
      StorageClassName(
        "StorageClass of the WAL volumes (CNPG spec.walStorage.storageClass); the cluster's default class when " +
          'left out. Fixed once the WAL volumes exist (set or left out)',
      ),
    ),
  },
  {
    description:
      'A separate volume for the WAL of each instance (CNPG spec.walStorage). Once set it cannot be removed ' +
      '(CloudNativePG cannot disable a WAL volume) and its size cannot shrink. The cluster overrides the class field by field',
  },
);

/** A label name, as a toleration's key, a node selector's or a label selector's key, and a topologyKey are. */
const LabelName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 317, pattern: LABEL_NAME_PATTERN, description });
const LabelValue = (description: string) => Type.String({ maxLength: 63, pattern: LABEL_VALUE_PATTERN, description });
/** A map of label names to label values, bounded; the keys are checked by CEL (a record's keys have no schema). */
const LabelMap = (field: string, description: string, maxProperties: number) =>
  Type.Record(Type.String(), LabelValue('A label value: at most 63 letters, digits, -, _ and .'), {
    description,
    maxProperties,
    'x-kubernetes-validations': [
      celNaming(
        `self.all(k, k.size() <= 317 && k.matches(r'${LABEL_NAME_PATTERN}'))`,
        `'${field}.' + self.filter(k, k.size() > 317 || !k.matches(r'${LABEL_NAME_PATTERN}'))[0] + ' is no label name: an optional DNS subdomain and /, then at most 63 letters, digits, -, _ and . starting and ending with a letter or digit'`,
        `${field} has a key that is no label name`,
      ),
    ],
  });

const literals = <const T extends string>(values: readonly T[], description: string): TUnion<TLiteral<T>[]> =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    { description },
  );

/** CNPG's toleration rules (`validateTolerations`), which Kubernetes' Pod validation shares. */
const Toleration = Type.Object(
  {
    key: Type.Optional(
      Type.String({
        maxLength: 317,
        pattern: `^$|${LABEL_NAME_PATTERN}`,
        description: 'The taint key the toleration matches; empty (with operator Exists) matches every taint',
      }),
    ),
    operator: Type.Optional(
      literals(TOLERATION_OPERATORS, 'Equal (the default): the taint value must equal value. Exists: any value'),
    ),
    value: Type.Optional(LabelValue('The taint value matched under operator Equal; empty under Exists')),
    effect: Type.Optional(
      literals(
        TAINT_EFFECTS,
        'The taint effect matched: NoSchedule, PreferNoSchedule or NoExecute; every effect when left out',
      ),
    ),
    tolerationSeconds: Type.Optional(
      Type.Integer({
        description: 'How long an instance stays on a node once a NoExecute taint appears; only with effect NoExecute',
      }),
    ),
  },
  {
    description: 'A Kubernetes toleration, as on a Pod',
    'x-kubernetes-validations': [
      cel(
        "(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')",
        'affinity.tolerations[].operator must be Exists when key is empty (such a toleration matches every taint)',
      ),
      cel(
        "!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
        'affinity.tolerations[].effect must be NoExecute when tolerationSeconds is set',
      ),
      cel(
        "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",
        'affinity.tolerations[].value must be empty when operator is Exists',
      ),
    ],
  },
);

export const Affinity = Type.Object(
  {
    enablePodAntiAffinity: Type.Optional(
      Type.Boolean({
        description:
          'Keep instances apart (CNPG spec.affinity.enablePodAntiAffinity): CloudNativePG gives its Pods an ' +
          'anti-affinity on topologyKey unless this is false',
      }),
    ),
    topologyKey: Type.Optional(
      LabelName(
        'The node label instances are kept apart on, e.g. topology.kubernetes.io/zone; CloudNativePG uses kubernetes.io/hostname when left out',
      ),
    ),
    podAntiAffinityType: Type.Optional(
      literals(
        POD_ANTI_AFFINITY_TYPES,
        "preferred (CloudNativePG's default): instances may share a topology domain when no other is free. " +
          'required: an instance stays Pending until a domain of its own is free',
      ),
    ),
    nodeSelector: Type.Optional(
      LabelMap(
        'affinity.nodeSelector',
        'Node labels every instance\'s node must have (CNPG spec.affinity.nodeSelector), e.g. {"node-role/db": "true"}',
        LIMITS.nodeSelector,
      ),
    ),
    tolerations: Type.Optional(
      Type.Array(Toleration, {
        maxItems: LIMITS.tolerations,
        description:
          'Taints the instances tolerate (CNPG spec.affinity.tolerations), e.g. nodes reserved for databases',
      }),
    ),
  },
  {
    description:
      'Where the instances may run: a subset of CNPG spec.affinity (enablePodAntiAffinity, topologyKey, ' +
      'podAntiAffinityType, nodeSelector, tolerations). The cluster overrides the class field by field; ' +
      'nodeSelector and tolerations each as a whole',
  },
);

const LabelSelectorRequirement = Type.Object(
  {
    key: LabelName('The label the requirement reads'),
    operator: literals(['In', 'NotIn', 'Exists', 'DoesNotExist'], 'How the label is compared with values'),
    values: Type.Optional(
      Type.Array(LabelValue('A label value'), {
        maxItems: LIMITS.matchValues,
        description: 'The values In and NotIn compare with; empty for Exists and DoesNotExist',
      }),
    ),
  },
  {
    description: 'A label selector requirement',
    'x-kubernetes-validations': [
      cel(
        "self.operator in ['In', 'NotIn'] ? has(self.values) && self.values.size() > 0 : !has(self.values) || self.values.size() == 0",
        'labelSelector.matchExpressions[].values must be set for In and NotIn, and empty for Exists and DoesNotExist',
      ),
    ],
  },
);

export const TopologySpreadConstraint = Type.Object(
  {
    maxSkew: Type.Integer({
      minimum: 1,
      maximum: 2 ** 31 - 1,
      description: 'How many more instances one topology domain may have than another',
    }),
    topologyKey: LabelName('The node label whose values are the topology domains, e.g. topology.kubernetes.io/zone'),
    whenUnsatisfiable: literals(
      ['DoNotSchedule', 'ScheduleAnyway'],
      'DoNotSchedule: an instance stays Pending rather than break maxSkew. ScheduleAnyway: it is placed regardless',
    ),
    minDomains: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2 ** 31 - 1,
        description: 'The fewest eligible domains; only with whenUnsatisfiable DoNotSchedule',
      }),
    ),
    labelSelector: Type.Optional(
      Type.Object(
        {
          matchLabels: Type.Optional(
            LabelMap('labelSelector.matchLabels', 'Labels the counted Pods have', LIMITS.matchLabels),
          ),
          matchExpressions: Type.Optional(
            Type.Array(LabelSelectorRequirement, {
              maxItems: LIMITS.matchExpressions,
              description: 'Requirements the counted Pods meet, all of them',
            }),
          ),
        },
        {
          description:
            "The Pods counted in each domain. When left out pgfsm counts this cluster's instances " +
            '(matchLabels cnpg.io/cluster: <name>)',
        },
      ),
    ),
  },
  {
    description: 'A Kubernetes topology spread constraint, as on a Pod (a subset of its fields)',
    'x-kubernetes-validations': [
      cel(
        "!has(self.minDomains) || self.whenUnsatisfiable == 'DoNotSchedule'",
        'topologySpreadConstraints[].minDomains can be set only with whenUnsatisfiable DoNotSchedule',
      ),
    ],
  },
);

const TopologySpreadConstraints = Type.Array(TopologySpreadConstraint, {
  maxItems: LIMITS.topologySpreadConstraints,
  description:
    'How the instances spread over zones or nodes (CNPG spec.topologySpreadConstraints), one constraint per ' +
    "topologyKey and whenUnsatisfiable. The cluster's list, when set, replaces the class's",
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['topologyKey', 'whenUnsatisfiable'],
});

export const Monitoring = Type.Object(
  {
    enablePodMonitor: Type.Optional(
      Type.Boolean({
        description:
          'true: CloudNativePG creates a Prometheus Operator PodMonitor for the instances ' +
          '(CNPG spec.monitoring.enablePodMonitor; needs the PodMonitor CRD)',
      }),
    ),
  },
  {
    description:
      'Metrics of the instances (a subset of CNPG spec.monitoring). The cluster overrides the class field by field',
  },
);

const STORAGE_CLASS =
  "StorageClass of the instances' data volumes (CNPG spec.storage.storageClass); the Kubernetes default class " +
  'when left out. Fixed once the volumes exist, set or left out: CloudNativePG would give another class only to ' +
  'volumes it creates later';

/** The CNPG rule between imageName and postgresVersion in one config (the cluster's or the class's). */
const imageRules = [
  cel(
    `!has(self.imageName) || !has(self.postgresVersion) || !${celImageReadable('self.imageName')} || !${celVersionReadable('self.postgresVersion')} || ${celImageMajor('self.imageName')} == ${celVersionMajor('self.postgresVersion')}`,
    "postgresVersion must name the major version of imageName's tag: imageName decides the image, so postgresVersion can only repeat its major (or be left out)",
    '.postgresVersion',
  ),
];

export const PoolMode = Type.Union([Type.Literal('session'), Type.Literal('transaction')], {
  description: 'PgBouncer pool mode; CNPG accepts only session and transaction',
});

export const ConnectionPoolerConfig = Type.Object(
  {
    instances: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, default: 3, description: 'PgBouncer Pods of each Pooler (rw and ro)' }),
    ),
    mode: Type.Optional({ ...PoolMode, default: 'transaction' }),
    parameters: Type.Optional(
      Type.Record(
        Type.String(),
        { ...ConfigLine(LIMITS.parameterValue), description: 'A PgBouncer parameter value' },
        {
          maxProperties: LIMITS.poolerParameters,
          description: 'PgBouncer parameters; only the ones CloudNativePG lets a Pooler set',
          'x-kubernetes-validations': [
            celNaming(
              `self.all(k, k in ${celList(PGBOUNCER_PARAMETERS)})`,
              `'cnpg.connectionPooler.parameters.' + self.filter(k, !(k in ${celList(PGBOUNCER_PARAMETERS)}))[0] + ' cannot be set: CloudNativePG reserves it or does not know it (allowed: the PgBouncer parameters listed in docs/cnpg-admission.md, e.g. default_pool_size, max_client_conn)'`,
              'cnpg.connectionPooler.parameters sets a PgBouncer parameter CloudNativePG reserves (listen_port, pool_mode, …)',
            ),
          ],
        },
      ),
    ),
  },
  {
    description:
      'The PgBouncer Poolers (CNPG Pooler, one rw and one ro) of every cluster of this class that enables ' +
      'connectionPoolerEnabled',
  },
);

const CONNECTION_POOLER_ENABLED =
  "true: pgfsm runs two PgBouncer Poolers (rw and ro) in front of the cluster, as the class's " +
  'cnpg.connectionPooler says, and the connection endpoints point at them; false: the endpoints point at ' +
  "CloudNativePG's -rw and -ro Services and the Poolers are deleted";

export const ClassConfig = Type.Object(
  {
    instances: Type.Optional({ ...Instances, default: 1 }),
    storage: Type.Optional(StorageSize),
    storageClass: Type.Optional(StorageClassName(STORAGE_CLASS)),
    walStorage: Type.Optional(WalStorage),
    postgresVersion: Type.Optional(PostgresVersion),
    imageName: Type.Optional(ImageName),
    resources: Type.Optional(ResourceRequirements),
    postgresqlConfig: Type.Optional(PostgresqlConfig),
    pgHBA: Type.Optional(PgHBA),
    affinity: Type.Optional(Affinity),
    topologySpreadConstraints: Type.Optional(TopologySpreadConstraints),
    monitoring: Type.Optional(Monitoring),
    connectionPoolerEnabled: Type.Optional(
      Type.Boolean({
        default: false,
        description: `Default of the clusters' connectionPoolerEnabled. ${CONNECTION_POOLER_ENABLED}`,
      }),
    ),
  },
  {
    description:
      'Defaults for every cluster of the class: a cluster field that is set wins, one left out takes the value ' +
      "here (postgresqlConfig is merged key by key, the cluster's keys winning)",
    'x-kubernetes-validations': [...configRules, ...imageRules],
  },
);

export const PostgresClusterClassSpec = Type.Object(
  {
    provisioner: Type.Literal('postgresql.cnpg.io', {
      description: 'Who provisions the clusters; only CloudNativePG (postgresql.cnpg.io) is supported',
    }),
    config: Type.Optional(ClassConfig),
    cnpg: Type.Optional(
      Type.Object(
        {
          primaryUpdateMethod: Type.Optional(
            Type.Union([Type.Literal('restart'), Type.Literal('switchover')], {
              default: 'switchover',
              description:
                'How CloudNativePG updates the primary after a change that restarts it (CNPG ' +
                'spec.primaryUpdateMethod): switchover (default) promotes an updated replica first, restart ' +
                'restarts the primary in place',
            }),
          ),
          connectionPooler: Type.Optional(ConnectionPoolerConfig),
        },
        { description: 'Settings only CloudNativePG has, shared by every cluster of the class' },
      ),
    ),
    backup: Type.Optional(ClassBackup),
  },
  {
    description: 'A kind of PostgreSQL cluster: who provisions it and the defaults its clusters start from',
    'x-kubernetes-validations': [
      cel(
        '!has(self.config) || !has(self.config.connectionPoolerEnabled) || !self.config.connectionPoolerEnabled || (has(self.cnpg) && has(self.cnpg.connectionPooler))',
        'cnpg.connectionPooler must be set when config.connectionPoolerEnabled is true',
        '.cnpg',
      ),
    ],
  },
);

export const ManagedRole = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: ROLE_NAME_PATTERN,
      description: 'The PostgreSQL role name',
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
      Type.Object(
        {
          name: Type.String({
            minLength: 1,
            maxLength: 253,
            description: "The Secret, in the cluster's namespace",
            'x-kubernetes-validations': [
              cel(
                `self.matches(r'${DNS_1123_SUBDOMAIN}')`,
                "passwordSecretRef.name must be a Secret's name, a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)",
              ),
            ],
          }),
        },
        {
          description:
            "A Secret holding the role's username and password keys (CloudNativePG reads no other key); " +
            'without it the role cannot log in',
        },
      ),
    ),
    exists: Type.Optional(Type.Boolean({ default: true, description: 'false removes the role from PostgreSQL' })),
  },
  { description: 'A PostgreSQL role CloudNativePG creates and keeps as described (CNPG spec.managed.roles)' },
);

/**
 * The transition rules below read both versions' majors with int(). One stored before the schema (or with it off)
 * may hold something int() cannot read; the rule must then pass rather than fail with an evaluation error, which the
 * API server would return for every write of the object, status included, leaving the operator unable to report.
 */
const MAJORS_UNREADABLE =
  "!self.postgresVersion.matches('^[0-9]+([.].*)?$') || !oldSelf.postgresVersion.matches('^[0-9]+([.].*)?$')";

/** The major version a spec runs, in CEL: imageName's tag when it has one, else postgresVersion's; -1 if neither. */
const celEffectiveMajor = (spec: string) =>
  `(has(${spec}.imageName) && ${celImageReadable(`${spec}.imageName`)} ? ${celImageMajor(`${spec}.imageName`)} : ` +
  `(has(${spec}.postgresVersion) && ${celVersionReadable(`${spec}.postgresVersion`)} ? ${celVersionMajor(`${spec}.postgresVersion`)} : -1))`;
const NEW_MAJOR = celEffectiveMajor('self');
const OLD_MAJOR = celEffectiveMajor('oldSelf');
/** The imageName transition rules judge only changes where an imageName is involved (postgresVersion has its own). */
const IMAGE_INVOLVED = `(has(self.imageName) || has(oldSelf.imageName)) && ${NEW_MAJOR} >= 0 && ${OLD_MAJOR} >= 0`;

export const PostgresClusterSpec = Type.Object(
  {
    class: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
      description: 'Name of the PostgresClusterClass whose config gives this cluster its defaults; immutable',
      'x-kubernetes-validations': [cel('self == oldSelf', 'class is immutable')],
    }),
    instances: Type.Optional(Instances),
    postgresVersion: Type.Optional(PostgresVersion),
    imageName: Type.Optional(ImageName),
    storage: Type.Optional(StorageSize),
    storageClass: Type.Optional(StorageClassName(STORAGE_CLASS)),
    walStorage: Type.Optional(WalStorage),
    resources: Type.Optional(ResourceRequirements),
    postgresqlConfig: Type.Optional(PostgresqlConfig),
    pgHBA: Type.Optional(PgHBA),
    affinity: Type.Optional(Affinity),
    topologySpreadConstraints: Type.Optional(TopologySpreadConstraints),
    monitoring: Type.Optional(Monitoring),
    connectionPoolerEnabled: Type.Optional(
      Type.Boolean({
        description: `${CONNECTION_POOLER_ENABLED}. Left out: the class's config.connectionPoolerEnabled`,
      }),
    ),
    managedRoles: Type.Optional(
      Type.Array(ManagedRole, {
        maxItems: LIMITS.managedRoles,
        description:
          'PostgreSQL roles of the cluster, beside the ones its PostgresDatabases ask for (pgfsm is the only writer ' +
          "of CNPG's spec.managed.roles and merges both). A role removed from the list stays in PostgreSQL; set " +
          'exists: false to drop it',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    clusterDeletionPolicy: Type.Optional({
      ...DeletionPolicy,
      default: 'Retain',
      // What src/operator/domain/deletion.ts does (its retainableChildren); test/unit/crds.test.ts holds them together.
      description:
        'What deleting the PostgresCluster does to its children. Either way the Poolers are deleted first. ' +
        'Retain (default): the CNPG Cluster with its volumes, the superuser Secret and the endpoints ConfigMap ' +
        'stay, released (no owner, annotated pgfsm.io/adopt) so that a new PostgresCluster of the same name takes ' +
        'them back. Delete: the CNPG Cluster is deleted with its volumes, so every database in it is gone for ' +
        'good, and the Secret and the endpoints ConfigMap too',
    }),
    suspend: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'true stops all writes to the children (the status is still reported); false resumes them',
      }),
    ),
    backup: Type.Optional(ClusterBackup),
    restore: Type.Optional(Restore),
  },
  {
    description:
      "The cluster a team wants. Fields left out take their class's config; instances, postgresVersion (or " +
      'imageName) and storage must be set here or there',
    'x-kubernetes-validations': [
      cel('!has(oldSelf.storage) || has(self.storage)', 'storage cannot be removed once set', '.storage'),
      cel(
        // isQuantity: as for MAJORS_UNREADABLE, a stored storage no quantity reads must not block every write.
        '!has(oldSelf.storage) || !has(self.storage) || !isQuantity(self.storage) || !isQuantity(oldSelf.storage) || quantity(self.storage).compareTo(quantity(oldSelf.storage)) >= 0',
        'storage cannot shrink',
        '.storage',
      ),
      // On the spec, not the field: a rule on storageClass itself runs only when both versions have it, so it
      // could not see the class added to a cluster created without one (whose volumes have the default class).
      cel(
        'has(self.storageClass) == has(oldSelf.storageClass) && (!has(self.storageClass) || self.storageClass == oldSelf.storageClass)',
        'storageClass cannot be added, changed nor removed once the cluster exists: the volumes keep the class they were created with (the Kubernetes default one when it was left out), and CloudNativePG would give another only to volumes it creates later, leaving the instances on different storage',
        '.storageClass',
      ),
      cel(
        '!has(oldSelf.walStorage) || has(self.walStorage)',
        'walStorage cannot be removed once set: CloudNativePG cannot disable a WAL volume once configured',
        '.walStorage',
      ),
      cel(
        '!has(oldSelf.walStorage) || !has(self.walStorage) || !isQuantity(self.walStorage.size) || !isQuantity(oldSelf.walStorage.size) || quantity(self.walStorage.size).compareTo(quantity(oldSelf.walStorage.size)) >= 0',
        'walStorage.size cannot shrink: CloudNativePG refuses to shrink a volume',
        '.walStorage.size',
      ),
      // The same for the WAL volumes once they exist; a WAL volume added later may come with any class.
      cel(
        '!has(oldSelf.walStorage) || (has(self.walStorage) ? has(self.walStorage.storageClass) == has(oldSelf.walStorage.storageClass) && (!has(self.walStorage.storageClass) || self.walStorage.storageClass == oldSelf.walStorage.storageClass) : !has(oldSelf.walStorage.storageClass))',
        'walStorage.storageClass cannot be added, changed nor removed once the WAL volume exists: the WAL volumes keep the class they were created with, and CloudNativePG would give another only to WAL volumes it creates later',
        '.walStorage.storageClass',
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
      cel(
        `!(${IMAGE_INVOLVED}) || ${NEW_MAJOR} >= ${OLD_MAJOR}`,
        'the major version of imageName cannot go down (CloudNativePG cannot downgrade PostgreSQL)',
        '.imageName',
      ),
      cel(
        `!(${IMAGE_INVOLVED}) || ${NEW_MAJOR} <= ${OLD_MAJOR} || ${NEW_MAJOR} >= ${MIN_MAJOR_UPGRADE_TARGET}`,
        `a major upgrade of imageName must go to ${MIN_MAJOR_UPGRADE_TARGET} or newer: CloudNativePG cannot upgrade to an older major`,
        '.imageName',
      ),
      // On the spec, as storageClass: a rule on restore itself would not run when it is added or removed.
      cel(
        'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
        'restore cannot be added, changed nor removed once the cluster exists: a restore starts a new cluster (create another PostgresCluster to restore again)',
        '.restore',
      ),
      ...configRules,
      ...imageRules,
    ],
  },
);

/** A child write the API server refused: which component, which object (by digest) and what it said. */
export const RejectedWrite = Type.Object(
  {
    component: Type.Union([Type.Literal('cluster'), Type.Literal('managedRoles'), Type.Literal('pooler')], {
      description: 'Which child: the CNPG Cluster, its managed roles, or a Pooler',
    }),
    digest: Type.String({ description: 'SHA-256 of the refused object, as pgfsm sent it' }),
    message: Type.String({ description: 'What the API server said, verbatim' }),
  },
  { description: 'A write to a child the API server refused' },
);

export const PostgresClusterStatus = Type.Object(
  {
    ...lifecycleStatusProperties(),
    provisionerRef: Type.Optional(
      Type.Object(
        {
          apiVersion: Type.String({ description: 'postgresql.cnpg.io/v1' }),
          kind: Type.String({ description: 'Cluster' }),
          namespace: Type.String({ description: "The CNPG Cluster's namespace, the PostgresCluster's" }),
          name: Type.String({ description: "The CNPG Cluster's name" }),
          uid: Type.Optional(Type.String({ description: "The CNPG Cluster's uid" })),
        },
        { description: 'The CNPG Cluster that runs this cluster' },
      ),
    ),
    connectionPoolerStatus: Type.Optional(
      Type.Object(
        { enabled: Type.Boolean({ description: 'Whether the PgBouncer Poolers serve the endpoints' }) },
        { description: 'The PgBouncer Poolers' },
      ),
    ),
    managedRolesStatus: Type.Optional(
      Type.Object(
        {
          reconciled: Type.Optional(
            Type.Array(Type.String({ description: 'A role name' }), {
              description: 'Roles of spec.managedRoles that CloudNativePG reports reconciled',
            }),
          ),
          pending: Type.Optional(
            Type.Array(Type.String({ description: 'A role name' }), {
              description: 'Roles not reconciled yet, or waiting for their password Secret',
            }),
          ),
          failed: Type.Optional(
            Type.Record(Type.String(), Type.String({ description: 'Why CloudNativePG could not reconcile it' }), {
              description: "Roles CloudNativePG cannot reconcile, by name, with CloudNativePG's errors",
            }),
          ),
        },
        { description: 'How the roles of spec.managedRoles stand in PostgreSQL, as CloudNativePG last reported them' },
      ),
    ),
    resources: Type.Optional(
      Type.Object(
        {
          secretRef: Type.Optional(
            Type.Object(
              {
                name: Type.String({ description: "The Secret's name" }),
                key: Type.String({ description: 'The key that holds the password' }),
              },
              { description: "The superuser Secret (CloudNativePG's basic-auth shape: username and password)" },
            ),
          ),
          configMapRef: Type.Optional(
            Type.Object(
              { name: Type.String({ description: "The ConfigMap's name" }) },
              { description: 'The ConfigMap of connection endpoints (hosts and ports, read-write and read-only)' },
            ),
          ),
        },
        { description: "Objects published for the cluster's users" },
      ),
    ),
    instances: Type.Optional(Type.Integer({ description: 'PostgreSQL instances CloudNativePG runs' })),
    readyInstances: Type.Optional(Type.Integer({ description: 'Of those, the ready ones' })),
    currentPrimary: Type.Optional(Type.String({ description: 'The Pod of the current primary' })),
    backup: Type.Optional(BackupStatus),
    restore: Type.Optional(RestoreStatus),
    rejectedWrites: Type.Optional(
      Type.Array(RejectedWrite, {
        description:
          'Writes to a child the API server refused (e.g. by the CNPG webhook), remembered so that the same object is ' +
          'not sent again until the spec, the class or the world changes it',
      }),
    ),
  },
  { description: 'What pgfsm last observed and decided; written by the operator only' },
);

export type Quantity = Static<typeof Quantity>;
export type PoolMode = Static<typeof PoolMode>;
export type ClassConfig = Static<typeof ClassConfig>;
export type PostgresClusterClassSpec = Static<typeof PostgresClusterClassSpec>;
export type ManagedRole = Static<typeof ManagedRole>;
export type PostgresClusterSpec = Static<typeof PostgresClusterSpec>;
export type PostgresClusterStatus = Static<typeof PostgresClusterStatus>;
export type RejectedWrite = Static<typeof RejectedWrite>;
export type ResourceRequirements = Static<typeof ResourceRequirements>;
export type WalStorage = Static<typeof WalStorage>;
export type Affinity = Static<typeof Affinity>;
export type TopologySpreadConstraint = Static<typeof TopologySpreadConstraint>;
export type Monitoring = Static<typeof Monitoring>;

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
