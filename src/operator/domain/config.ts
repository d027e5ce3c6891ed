/**
 * Merging a cluster's spec over its class defaults, and validating the result. Invalid input never
 * throws: it becomes an `InvalidSpec` result naming the offending field, which the machine reports as
 * `Stalled` until the spec or the class changes.
 */

import type { Static, TSchema } from '@sinclair/typebox';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import {
  BOOLEAN_PARAMETERS,
  COMPARED_RESOURCES,
  DNS_1035_LABEL,
  FAILOVER_SLOTS_PREFIX,
  FIXED_PARAMETERS,
  HUGEPAGES_PREFIX,
  hasPgHbaReference,
  IMAGE_NAME_HINT,
  imageVersion,
  isDns1123Subdomain,
  isImageName,
  isLabelName,
  isParameterName,
  isPodResourceName,
  isPostgresReservedRole,
  isReservedRole,
  LIMITS,
  MAX_ROLE_NAME_BYTES,
  MEMORY_PARAMETERS,
  MIN_MAJOR_UPGRADE_TARGET,
  MIN_POSTGRES_MAJOR,
  MIN_STORAGE,
  PG_HBA_REFERENCE_MESSAGE,
  PGBOUNCER_PARAMETERS,
  POD_RESOURCES_HINT,
  pgBoolean,
  pgMemoryBytes,
  WAL_LEVELS,
  WAL_SIZE_DEFAULTS,
} from '../api/cnpg-rules.ts';
import {
  type Affinity,
  type ConnectionPoolerConfig,
  type DeletionPolicy,
  MAX_CLUSTER_NAME_LENGTH,
  type ManagedRole,
  type Monitoring,
  type PoolMode,
  PostgresClusterClassSpec,
  PostgresClusterSpec,
  type ResourceRequirements,
  type TopologySpreadConstraint,
  type WalStorage,
} from '../api/schema.ts';
import { type BackupConfig, mergeBackup, type RestoreConfig } from './backup/policy.ts';
import { classField } from './field-names.ts';
import type { CnpgCluster } from './objects.ts';
import type { Observation } from './observation.ts';
import { OWNED_FIELDS_ANNOTATION, ownedFieldsOf } from './owned-keys.ts';
import { quantityValue, sameQuantity } from './quantity.ts';
import { isRecord } from './records.ts';
import { mayAdopt, ownershipOf } from './vocabulary.ts';

export interface PoolerConfig {
  instances: number;
  mode: PoolMode;
  parameters: Record<string, string>;
}

export interface MergedConfig {
  instances: number;
  /** The version run: the one set, else the one imageName's tag names (then it may be `17` or `17.2`). */
  postgresVersion: string;
  /** A pinned image; without it pgfsm runs POSTGRES_IMAGE:<postgresVersion>. */
  imageName?: string;
  storage: string;
  storageClass?: string;
  walStorage?: WalStorage;
  affinity?: Affinity;
  topologySpreadConstraints?: TopologySpreadConstraint[];
  monitoring?: Monitoring;
  resources: ResourceRequirements;
  postgresqlConfig: Record<string, string>;
  pgHBA: string[];
  primaryUpdateMethod: 'restart' | 'switchover';
  /** Present only when the pooler is enabled. */
  pooler?: PoolerConfig;
  managedRoles: ManagedRole[];
  deletionPolicy: DeletionPolicy;
  /** Present only when the cluster is backed up (its class has a policy and the cluster does not switch it off). */
  backup?: BackupConfig;
  /** Present only when the cluster starts from another cluster's backups. */
  restore?: RestoreConfig;
}

export type MergeResult = { ok: true; config: MergedConfig } | { ok: false; field: string; message: string };

const DEFAULT_POOLER_INSTANCES = 3;
const DEFAULT_POOL_MODE: PoolMode = 'transaction';

const invalid = (field: string, message: string): MergeResult => ({
  ok: false,
  field,
  message: `${field}: ${message}`,
});

/**
 * The schemas compiled once: a compiled check costs a fraction of a microsecond where walking the schema for
 * errors costs several, on every tick of every cluster. Only a value the check refuses is walked for its errors.
 */
const compiled = new Map<TSchema, TypeCheck<TSchema>>();
const checkerOf = (schema: TSchema) => {
  let checker = compiled.get(schema);
  if (!checker) {
    checker = TypeCompiler.Compile(schema);
    compiled.set(schema, checker);
  }
  return checker;
};

/** The first schema error of a value, as `path: message`, or undefined when the value is valid. */
function firstSchemaError(schema: typeof PostgresClusterSpec | typeof PostgresClusterClassSpec, value: unknown) {
  if (checkerOf(schema).Check(value)) return undefined;
  const first = Value.Errors(schema, value).First();
  if (!first) return undefined;
  return { path: fieldPathOf(first.path), message: first.message };
}

/** A JSON pointer (`/managedRoles/0/name`) as Kubernetes names a field (`managedRoles[0].name`). */
function fieldPathOf(pointer: string): string {
  const segments = pointer.split('/').slice(1);
  return segments
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, s) => (/^[0-9]+$/.test(s) ? `${path}[${s}]` : path ? `${path}.${s}` : s), '');
}

/**
 * The class a cluster names, read from a spec that may be anything (an object stored before the CRD rules,
 * or written with validation off): undefined when it names none, which makes the spec invalid rather than
 * its class missing.
 */
export function namedClass(cluster: unknown): string | undefined {
  const name = untrustedSpec(cluster).class;
  return typeof name === 'string' && name.length > 0 ? name : undefined;
}

/**
 * The names of the Secrets a cluster's managed roles refer to, each once, read from a spec that may be
 * anything (as `namedClass`): what the watch mapping and the observation both need.
 */
export function referencedRoleSecrets(cluster: unknown): string[] {
  const roles = untrustedSpec(cluster).managedRoles;
  const names = (Array.isArray(roles) ? roles : []).map((role: unknown) => {
    const ref = isRecord(role) && isRecord(role.passwordSecretRef) ? role.passwordSecretRef : {};
    return ref.name;
  });
  return [...new Set(names.filter((n): n is string => typeof n === 'string' && n.length > 0))];
}

const untrustedSpec = (cluster: unknown): Record<string, unknown> =>
  isRecord(cluster) && isRecord(cluster.spec) ? cluster.spec : {};

/** Major version as a number ("17.2" -> 17). */
const major = (version: string) => Number(/^(\d+)/.exec(version)?.[1] ?? Number.NaN);

/**
 * The last merge of each cluster (by uid), beside the inputs it was made from as JSON. Merging validates the
 * spec and the class against the schemas and CNPG's admission rules, about half of a pass's assessment, and
 * its inputs change only when someone edits the spec or the class, or CNPG's running storage or image moves:
 * so it runs again only then, not on every status change of every cluster. Comparing the inputs costs a
 * JSON.stringify of two small specs. It costs about 1 KB per cluster (the inputs and the merge: heap after GC
 * at 10,000 clusters in memory 125 → 135 MB). Bounded, so that churn (clusters created and deleted) cannot
 * grow it: beyond the bound the oldest entry goes and is merged again if that cluster ever passes again.
 */
const lastMerges = new Map<string, { inputs: string; result: MergeResult }>();
export const MAX_REMEMBERED_MERGES = 16_384;

/** What a merge reads of an observation, as JSON; undefined if it is not JSON (then nothing is remembered). */
function mergeInputs(observation: Observation): string | undefined {
  const { cluster, clusterClass } = observation;
  try {
    const running = runningSpecOf(observation);
    return JSON.stringify([
      cluster.metadata.name,
      cluster.spec,
      clusterClass?.metadata.name,
      clusterClass?.spec,
      running?.storage?.size,
      running?.imageName,
      running?.storage?.storageClass,
      running?.walStorage,
      observation.cnpg?.metadata.annotations?.[OWNED_FIELDS_ANNOTATION],
    ]);
  } catch {
    return undefined;
  }
}

/**
 * Besides creating it, the one thing a person can do about a class that does not exist that the API accepts:
 * `spec.class` is immutable, so it is a new PostgresCluster, which keeps the data only if the deletion retains it.
 */
export function recreateWithClass(spec: { clusterDeletionPolicy?: unknown } | undefined): string {
  const keeps =
    spec?.clusterDeletionPolicy === 'Delete'
      ? 'its clusterDeletionPolicy is Delete, so its data goes with it: set it to Retain first to keep the data for the new cluster'
      : 'its clusterDeletionPolicy is Retain, so its data is kept and the new cluster adopts it';
  return `delete this PostgresCluster and create it again naming an existing class (spec.class cannot change; ${keeps})`;
}

/**
 * The spec of the CNPG Cluster this PostgresCluster runs, or may take over: its own, or an orphan handed over
 * (`mayAdopt`). What anyone else's CNPG Cluster of the same name runs bounds nothing: pgfsm will not touch it,
 * and the cluster step reports it for what it is (not ours: `kubectl annotate … pgfsm.io/adopt=true`), rather
 * than a merge judging the spec against it ("major version cannot go down") before that could show.
 */
function runningSpecOf({ cnpg, cluster }: Observation): CnpgCluster['spec'] | undefined {
  if (!cnpg) return undefined;
  const ownership = ownershipOf(cnpg.metadata.ownerReferences, cluster);
  return ownership === 'ours' || (ownership === 'orphan' && mayAdopt(cnpg.metadata)) ? cnpg.spec : undefined;
}

/** Merges the cluster's spec over its class and validates the result (`merge`), once per change of its inputs. */
export function mergeConfig(observation: Observation): MergeResult {
  const { metadata } = observation.cluster;
  const key = metadata.uid ?? `${metadata.namespace}/${metadata.name}`;
  const inputs = mergeInputs(observation);
  const last = lastMerges.get(key);
  if (inputs !== undefined && last?.inputs === inputs) return last.result;
  const result = merge(observation);
  if (inputs === undefined) return result;
  lastMerges.delete(key);
  lastMerges.set(key, { inputs, result });
  if (lastMerges.size > MAX_REMEMBERED_MERGES) lastMerges.delete(lastMerges.keys().next().value as string);
  return result;
}

function merge(observation: Observation): MergeResult {
  const { cluster, clusterClass } = observation;
  const specError = firstSchemaError(PostgresClusterSpec, cluster.spec);
  if (specError) return invalid(specError.path ? `spec.${specError.path}` : 'spec', specError.message);
  if (!clusterClass) {
    const remedy = `create the class and this cluster continues, or ${recreateWithClass(cluster.spec)}`;
    return invalid('spec.class', `PostgresClusterClass ${cluster.spec.class} not found: ${remedy}`);
  }
  const classError = firstSchemaError(PostgresClusterClassSpec, clusterClass.spec);
  if (classError) {
    const field = classError.path ? `spec.${classError.path}` : 'spec';
    return invalid(`class ${clusterClass.metadata.name} ${field}`, classError.message);
  }

  const spec = cluster.spec;
  const defaults = clusterClass.spec.config ?? {};
  const instances = spec.instances ?? defaults.instances;
  const imageName = spec.imageName ?? defaults.imageName;
  const imageField = spec.imageName !== undefined ? 'spec.imageName' : classField(clusterClass, 'config.imageName');
  if (imageName !== undefined && !isImageName(imageName))
    return invalid(imageField, `${imageName}: ${IMAGE_NAME_HINT}`);
  const setVersion = spec.postgresVersion ?? defaults.postgresVersion;
  const versionField =
    spec.postgresVersion !== undefined ? 'spec.postgresVersion' : classField(clusterClass, 'config.postgresVersion');
  // imageName wins: postgresVersion may only repeat its major, wherever each of the two was set.
  const imageTagVersion = imageName === undefined ? undefined : imageVersion(imageName);
  if (imageTagVersion !== undefined && setVersion !== undefined && major(setVersion) !== major(imageTagVersion)) {
    return invalid(
      versionField,
      `${setVersion} is not the major version of imageName ${imageName} (${imageField}): imageName decides the image, so postgresVersion must be ${major(imageTagVersion)} or left out (or set imageName beside it)`,
    );
  }
  const postgresVersion = setVersion ?? imageTagVersion;
  /** The field that decides the version run: imageName when one is set. */
  const runField = imageName !== undefined ? imageField : versionField;
  const storage = spec.storage ?? defaults.storage;
  if (instances === undefined) return invalid('spec.instances', 'required: set it here or in the class config');
  if (postgresVersion === undefined) {
    return invalid('spec.postgresVersion', 'required: set it here or in the class config');
  }
  if (storage === undefined) return invalid('spec.storage', 'required: set it here or in the class config');

  // What CNPG already runs bounds what we may ask for: storage never shrinks, the major never goes down.
  // The CRD's CEL rules guard the cluster's own edits; these guard class-default changes too.
  const running = runningSpecOf(observation);
  const runningStorage = typeof running?.storage?.size === 'string' ? running.storage.size : undefined;
  if (runningStorage && (quantityValue(storage) ?? 0) < (quantityValue(runningStorage) ?? 0)) {
    return invalid('spec.storage', `cannot shrink from ${runningStorage} to ${storage}`);
  }
  // The CRDs refuse a smaller size since their rule exists; one stored before it is refused here, unless CNPG
  // already runs volumes of that size: a running database is not stopped for a rule it has outlived.
  const tooSmall = (quantityValue(storage) ?? 0) < (quantityValue(MIN_STORAGE) ?? 0);
  if (tooSmall && !sameQuantity(storage, runningStorage)) {
    return invalid(
      spec.storage === undefined ? classField(clusterClass, 'config.storage') : 'spec.storage',
      `${storage} is too small: at least ${MIN_STORAGE}, for PostgreSQL keeps its data and its WAL on this volume`,
    );
  }
  const runningVersion = typeof running?.imageName === 'string' ? imageVersion(running.imageName) : undefined;
  if (runningVersion && major(postgresVersion) < major(runningVersion)) {
    return invalid(
      imageName !== undefined ? runField : 'spec.postgresVersion',
      `major version cannot go down from ${runningVersion} to ${postgresVersion}`,
    );
  }
  if (
    runningVersion &&
    major(postgresVersion) > major(runningVersion) &&
    major(postgresVersion) < MIN_MAJOR_UPGRADE_TARGET
  ) {
    return invalid(
      runField,
      `a major upgrade from ${runningVersion} must go to ${MIN_MAJOR_UPGRADE_TARGET} or newer, not ${postgresVersion}: CloudNativePG cannot upgrade to an older major`,
    );
  }

  const storageClass = spec.storageClass ?? defaults.storageClass;
  const walStorage = mergedObject(defaults.walStorage, spec.walStorage) as WalStorage | undefined;
  const volumeProblem = volumesAgainstRunning(observation, running, { storageClass, walStorage });
  if (volumeProblem) return volumeProblem;

  const poolerEnabled = spec.connectionPoolerEnabled ?? defaults.connectionPoolerEnabled ?? false;
  const poolerClass: Static<typeof ConnectionPoolerConfig> | undefined = clusterClass.spec.cnpg?.connectionPooler;
  if (poolerEnabled && !poolerClass) {
    return invalid(
      'spec.connectionPoolerEnabled',
      `the pooler is enabled but class ${clusterClass.metadata.name} has no cnpg.connectionPooler`,
    );
  }

  // The CRD refuses such a line since its rule exists (CloudNativePG 1.29 would refuse the Cluster); an object
  // stored before it still gets here. Only the list in effect counts: the cluster's, when not empty, replaces the class's.
  const ownHba = (spec.pgHBA?.length ?? 0) > 0;
  const referenced = (ownHba ? (spec.pgHBA ?? []) : (defaults.pgHBA ?? [])).findIndex(hasPgHbaReference);
  if (referenced >= 0) {
    const field = ownHba ? `spec.pgHBA[${referenced}]` : classField(clusterClass, `config.pgHBA[${referenced}]`);
    return invalid(field, PG_HBA_REFERENCE_MESSAGE);
  }

  const roleNames = new Set<string>();
  for (const [i, role] of (spec.managedRoles ?? []).entries()) {
    if (roleNames.has(role.name)) return invalid(`spec.managedRoles[${i}].name`, `duplicate role ${role.name}`);
    roleNames.add(role.name);
    // The CRD refuses such a name since its rule exists; an object stored before it still gets here.
    const secret = role.passwordSecretRef?.name;
    if (secret !== undefined && !isDns1123Subdomain(secret)) {
      return invalid(
        `spec.managedRoles[${i}].passwordSecretRef.name`,
        `${secret} is no Secret name: it must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)`,
      );
    }
  }

  const backups = mergeBackup(cluster, clusterClass);
  if (!backups.ok) return backups;

  const config: MergedConfig = {
    instances,
    postgresVersion,
    storage,
    resources: spec.resources ?? defaults.resources ?? {},
    postgresqlConfig: { ...(defaults.postgresqlConfig ?? {}), ...(spec.postgresqlConfig ?? {}) },
    pgHBA: spec.pgHBA?.length ? spec.pgHBA : (defaults.pgHBA ?? []),
    primaryUpdateMethod: clusterClass.spec.cnpg?.primaryUpdateMethod ?? 'switchover',
    ...(poolerEnabled && poolerClass
      ? {
          pooler: {
            instances: poolerClass.instances ?? DEFAULT_POOLER_INSTANCES,
            mode: poolerClass.mode ?? DEFAULT_POOL_MODE,
            parameters: poolerClass.parameters ?? {},
          },
        }
      : {}),
    managedRoles: spec.managedRoles ?? [],
    deletionPolicy: spec.clusterDeletionPolicy ?? 'Retain',
  };
  // The day-one CNPG fields: set only when set somewhere, so a cluster using none sends none of them.
  const affinity = mergedObject(defaults.affinity, spec.affinity);
  const topologySpreadConstraints = spec.topologySpreadConstraints ?? defaults.topologySpreadConstraints;
  const monitoring = mergedObject(defaults.monitoring, spec.monitoring);
  if (imageName !== undefined) config.imageName = imageName;
  if (storageClass !== undefined) config.storageClass = storageClass;
  if (walStorage !== undefined) config.walStorage = walStorage;
  if (affinity !== undefined) config.affinity = affinity;
  if (topologySpreadConstraints !== undefined) config.topologySpreadConstraints = topologySpreadConstraints;
  if (monitoring !== undefined) config.monitoring = monitoring;
  if (backups.backup) config.backup = backups.backup;
  if (backups.restore) config.restore = backups.restore;
  return cnpgAdmission(observation, config) ?? { ok: true, config };
}

/** The class's object with the cluster's fields over it, field by field; undefined when neither sets a field. */
function mergedObject<T extends object>(defaults: T | undefined, own: T | undefined): T | undefined {
  const merged = { ...(defaults ?? {}), ...(own ?? {}) } as T;
  return Object.keys(merged).length > 0 ? merged : undefined;
}

/**
 * What CNPG does not take on a running cluster's volumes (its webhook's validateWalStorageChange and
 * validateStorageConfigurationChange), and a storage class it would give only to volumes it creates later. The
 * CRD's rules guard the cluster's own edits; these guard class-default changes and a field pgfsm sent and would
 * now drop (OWNED_FIELDS_ANNOTATION: one someone else set on the CNPG Cluster is not pgfsm's to drop).
 */
function volumesAgainstRunning(
  observation: Observation,
  running: CnpgCluster['spec'] | undefined,
  wanted: { storageClass: string | undefined; walStorage: WalStorage | undefined },
): MergeResult | undefined {
  const { cluster, clusterClass, cnpg } = observation;
  if (!running || !cnpg || !clusterClass) return undefined;
  const spec = cluster.spec;
  const owned = ownedFieldsOf(cnpg.metadata.annotations);
  const field = (key: string, own: unknown) =>
    own !== undefined ? `spec.${key}` : classField(clusterClass, `config.${key}`);
  const later =
    'CloudNativePG would give it only to volumes it creates later, leaving the instances on different storage';
  const runningClass = running.storage?.storageClass;
  if (runningClass !== undefined && wanted.storageClass !== undefined && wanted.storageClass !== runningClass) {
    return invalid(
      field('storageClass', spec.storageClass),
      `cannot change from ${runningClass} to ${wanted.storageClass}: ${later}`,
    );
  }
  if (runningClass !== undefined && wanted.storageClass === undefined && owned.has('storage.storageClass')) {
    return invalid('spec.storageClass', `cannot be removed: the volumes use ${runningClass}, and ${later}`);
  }
  // Added to volumes created without one (they have the default class): the same later. Unless pgfsm sent it
  // before: then the running cluster lost it by hand (drift), and sending it again restores what was there.
  if (runningClass === undefined && wanted.storageClass !== undefined && !owned.has('storage.storageClass')) {
    return invalid(
      field('storageClass', spec.storageClass),
      `cannot be added: the volumes were created without one (they have the default class), and ${later}`,
    );
  }
  const runningWal = running.walStorage;
  if (!runningWal) return undefined;
  if (!wanted.walStorage) {
    return owned.has('walStorage')
      ? invalid('spec.walStorage', 'cannot be removed: CloudNativePG cannot disable a WAL volume once configured')
      : undefined;
  }
  const runningSize = typeof runningWal.size === 'string' ? runningWal.size : undefined;
  if (runningSize && (quantityValue(wanted.walStorage.size) ?? 0) < (quantityValue(runningSize) ?? 0)) {
    return invalid(
      field('walStorage.size', spec.walStorage?.size),
      `cannot shrink from ${runningSize} to ${wanted.walStorage.size}: CloudNativePG refuses to shrink a volume`,
    );
  }
  const walClass = runningWal.storageClass;
  const wantedClass = wanted.walStorage.storageClass;
  if (walClass !== undefined && wantedClass !== undefined && wantedClass !== walClass) {
    return invalid(
      field('walStorage.storageClass', spec.walStorage?.storageClass),
      `cannot change from ${walClass} to ${wantedClass}: ${later}`,
    );
  }
  if (walClass !== undefined && wantedClass === undefined && owned.has('walStorage.storageClass')) {
    return invalid('spec.walStorage.storageClass', `cannot be removed: the WAL volumes use ${walClass}, and ${later}`);
  }
  if (walClass === undefined && wantedClass !== undefined && !owned.has('walStorage.storageClass')) {
    return invalid(
      field('walStorage.storageClass', spec.walStorage?.storageClass),
      `cannot be added: the WAL volumes were created without one (they have the default class), and ${later}`,
    );
  }
  return undefined;
}

/**
 * What CloudNativePG's admission would refuse in the objects built from the merged config (docs/cnpg-admission.md).
 * The CRDs refuse most of it already; this also catches what only shows once a cluster meets its class (a class's
 * shared_buffers over the cluster's memory request, a class's instances against the cluster's wal_log_hints) and
 * objects stored before the CRD rules existed. Each problem names the field it came from: the cluster's own when it
 * set it, else the class's.
 */
function cnpgAdmission(observation: Observation, config: MergedConfig): MergeResult | undefined {
  const { cluster } = observation;
  const clusterClass = observation.clusterClass;
  if (!clusterClass) return undefined;
  const spec = cluster.spec;
  /** Where a top-level config field came from: the cluster's spec or its class's config. */
  const source = (key: 'instances' | 'postgresVersion' | 'resources') =>
    spec[key] !== undefined ? `spec.${key}` : classField(clusterClass, `config.${key}`);
  // A parameter is named where it is set; one set nowhere (a parameter another one requires) is the cluster's to set.
  const parameterMap = (key: string) =>
    spec.postgresqlConfig?.[key] === undefined && clusterClass.spec.config?.postgresqlConfig?.[key] !== undefined
      ? classField(clusterClass, 'config.postgresqlConfig')
      : 'spec.postgresqlConfig';
  const parameter = (key: string) => `${parameterMap(key)}.${key}`;

  if (cluster.metadata.name.length > MAX_CLUSTER_NAME_LENGTH) {
    return invalid(
      'metadata.name',
      `${cluster.metadata.name.length} characters is too long: at most ${MAX_CLUSTER_NAME_LENGTH}, so that the names of its children stay valid (CloudNativePG refuses longer Cluster names)`,
    );
  }
  if (!new RegExp(DNS_1035_LABEL).test(cluster.metadata.name)) {
    return invalid(
      'metadata.name',
      `${cluster.metadata.name} is no DNS-1035 label (lower-case letters, digits and '-', starting with a letter); CloudNativePG names Services after it`,
    );
  }
  if (major(config.postgresVersion) < MIN_POSTGRES_MAJOR) {
    return invalid(
      source('postgresVersion'),
      `${config.postgresVersion} is too old: CloudNativePG supports PostgreSQL ${MIN_POSTGRES_MAJOR} and later`,
    );
  }
  for (const [i, role] of config.managedRoles.entries()) {
    if (isReservedRole(role.name)) {
      return invalid(
        `spec.managedRoles[${i}].name`,
        `${role.name} is reserved by CloudNativePG or PostgreSQL (postgres, streaming_replica, cnpg_*, pg_*); choose another name`,
      );
    }
    if (isPostgresReservedRole(role.name)) {
      return invalid(`spec.managedRoles[${i}].name`, `${role.name} is reserved by PostgreSQL; choose another name`);
    }
    const bytes = Buffer.byteLength(role.name, 'utf8');
    if (bytes > MAX_ROLE_NAME_BYTES) {
      return invalid(
        `spec.managedRoles[${i}].name`,
        `${bytes} bytes is too long: at most ${MAX_ROLE_NAME_BYTES} bytes in UTF-8, as PostgreSQL cuts longer names`,
      );
    }
  }

  const parameters = config.postgresqlConfig;
  for (const key of Object.keys(parameters)) {
    // Such a key is quoted, and only its start: it may hold line breaks or be as long as the object allows.
    const quoted = () => `${parameterMap(key)}[${JSON.stringify(key.slice(0, 64))}${key.length > 64 ? '…' : ''}]`;
    if (key.length > LIMITS.parameterName) {
      return invalid(quoted(), `parameter names must be at most ${LIMITS.parameterName} characters`);
    }
    if (!isParameterName(key)) {
      return invalid(
        quoted(),
        "is no PostgreSQL parameter name: letters, digits and '_', not starting with a digit, with at most one '.' (CloudNativePG writes it into postgresql.conf as it is)",
      );
    }
    if ((FIXED_PARAMETERS as readonly string[]).includes(key)) {
      return invalid(parameter(key), 'cannot be set: CloudNativePG fixes this parameter');
    }
  }
  const walLevel = parameters.wal_level;
  if (walLevel !== undefined && !(WAL_LEVELS as readonly string[]).includes(walLevel)) {
    return invalid(
      parameter('wal_level'),
      `must be ${WAL_LEVELS.join(' or ')}, not ${walLevel} (CloudNativePG archives WAL, which rules out minimal)`,
    );
  }
  for (const key of BOOLEAN_PARAMETERS) {
    const value = parameters[key];
    if (value !== undefined && pgBoolean(value) === undefined) {
      return invalid(parameter(key), `${value} is no PostgreSQL boolean (on, off, true, false, yes, no, 1, 0)`);
    }
  }
  for (const key of MEMORY_PARAMETERS) {
    const value = parameters[key];
    if (value !== undefined && pgMemoryBytes(value) === undefined) {
      return invalid(
        parameter(key),
        `${value} is no size CloudNativePG reads (e.g. 128MB or 1GB; units B, kB, MB, GB, TB; a bare number means MB)`,
      );
    }
  }
  const minWal = pgMemoryBytes(parameters.min_wal_size ?? WAL_SIZE_DEFAULTS.min_wal_size) ?? 0;
  const maxWal = pgMemoryBytes(parameters.max_wal_size ?? WAL_SIZE_DEFAULTS.max_wal_size) ?? 0;
  if (minWal > 0 && maxWal > 0 && minWal >= maxWal) {
    const key = parameters.min_wal_size !== undefined ? 'min_wal_size' : 'max_wal_size';
    return invalid(
      parameter(key),
      `min_wal_size (${parameters.min_wal_size ?? `default ${WAL_SIZE_DEFAULTS.min_wal_size}`}) must be smaller than max_wal_size (${parameters.max_wal_size ?? `default ${WAL_SIZE_DEFAULTS.max_wal_size}`})`,
    );
  }
  if (parameters.wal_log_hints !== undefined && pgBoolean(parameters.wal_log_hints) === false && config.instances > 1) {
    return invalid(
      parameter('wal_log_hints'),
      `must be on with ${config.instances} instances (${source('instances')}): CloudNativePG needs it to rejoin replicas`,
    );
  }
  const failoverSlots = Object.keys(parameters).find((key) => key.startsWith(FAILOVER_SLOTS_PREFIX));
  if (failoverSlots && pgBoolean(parameters.hot_standby_feedback ?? '') !== true) {
    return invalid(
      parameter('hot_standby_feedback'),
      `must be on when ${failoverSlots} is set: CloudNativePG requires it for the pg_failover_slots extension`,
    );
  }

  const resourceProblem = resourcesAdmission(config, source('resources'), parameter);
  if (resourceProblem) return resourceProblem;
  const schedulingProblem = schedulingAdmission(observation, config);
  if (schedulingProblem) return schedulingProblem;

  for (const key of Object.keys(config.pooler?.parameters ?? {})) {
    if (!(PGBOUNCER_PARAMETERS as readonly string[]).includes(key)) {
      return invalid(
        classField(clusterClass, `cnpg.connectionPooler.parameters.${key}`),
        'cannot be set: CloudNativePG reserves this PgBouncer parameter or does not know it (allowed: docs/cnpg-admission.md)',
      );
    }
  }
  return undefined;
}

/**
 * The CRD's rules on tolerations, node selectors and topology spread constraints (CNPG's validateTolerations, and
 * the Pod validation the API server applies when CNPG creates the instances), for objects stored before them.
 */
function schedulingAdmission(observation: Observation, config: MergedConfig): MergeResult | undefined {
  const { cluster, clusterClass } = observation;
  if (!clusterClass) return undefined;
  const own = cluster.spec;
  const where = (key: 'nodeSelector' | 'tolerations') =>
    own.affinity?.[key] !== undefined ? `spec.affinity.${key}` : classField(clusterClass, `config.affinity.${key}`);
  const badKey = (map: Record<string, string> | undefined) => Object.keys(map ?? {}).find((k) => !isLabelName(k));
  const selectorKey = badKey(config.affinity?.nodeSelector);
  if (selectorKey !== undefined) {
    return invalid(`${where('nodeSelector')}[${JSON.stringify(selectorKey.slice(0, 64))}]`, 'is no label name');
  }
  for (const [i, toleration] of (config.affinity?.tolerations ?? []).entries()) {
    const at = `${where('tolerations')}[${i}]`;
    if (!toleration.key && toleration.operator !== 'Exists') {
      return invalid(`${at}.operator`, 'must be Exists when key is empty (such a toleration matches every taint)');
    }
    if (toleration.tolerationSeconds !== undefined && toleration.effect !== 'NoExecute') {
      return invalid(`${at}.effect`, 'must be NoExecute when tolerationSeconds is set');
    }
    if (toleration.operator === 'Exists' && toleration.value) {
      return invalid(`${at}.value`, 'must be empty when operator is Exists');
    }
  }
  const tscField =
    own.topologySpreadConstraints !== undefined
      ? 'spec.topologySpreadConstraints'
      : classField(clusterClass, 'config.topologySpreadConstraints');
  const seen = new Set<string>();
  for (const [i, constraint] of (config.topologySpreadConstraints ?? []).entries()) {
    const at = `${tscField}[${i}]`;
    const pair = `${constraint.topologyKey} ${constraint.whenUnsatisfiable}`;
    if (seen.has(pair)) return invalid(at, `a second constraint on ${pair}: one per topologyKey and whenUnsatisfiable`);
    seen.add(pair);
    if (constraint.minDomains !== undefined && constraint.whenUnsatisfiable !== 'DoNotSchedule') {
      return invalid(`${at}.minDomains`, 'can be set only with whenUnsatisfiable DoNotSchedule');
    }
    const labelKey = badKey(constraint.labelSelector?.matchLabels);
    if (labelKey !== undefined) {
      return invalid(`${at}.labelSelector.matchLabels[${JSON.stringify(labelKey.slice(0, 64))}]`, 'is no label name');
    }
    for (const [j, requirement] of (constraint.labelSelector?.matchExpressions ?? []).entries()) {
      const listed = requirement.operator === 'In' || requirement.operator === 'NotIn';
      if (listed !== (requirement.values ?? []).length > 0) {
        return invalid(
          `${at}.labelSelector.matchExpressions[${j}].values`,
          'must be set for In and NotIn, and empty for Exists and DoesNotExist',
        );
      }
    }
  }
  return undefined;
}

/** CNPG's resource rules on the merged resources (which come whole from the cluster or from the class). */
function resourcesAdmission(
  config: MergedConfig,
  field: string,
  parameter: (key: string) => string,
): MergeResult | undefined {
  const requests = config.resources.requests ?? {};
  const limits = config.resources.limits ?? {};
  for (const [map, values] of [
    ['requests', requests],
    ['limits', limits],
  ] as const) {
    const name = Object.keys(values).find((key) => !isPodResourceName(key));
    if (name !== undefined) {
      return invalid(`${field}.${map}.${name}`, `is no resource of a PostgreSQL pod: ${POD_RESOURCES_HINT}`);
    }
  }
  const amount = (value: string | undefined) => (value === undefined ? 0 : (quantityValue(value) ?? 0));
  for (const resource of COMPARED_RESOURCES) {
    const request = amount(requests[resource]);
    const limit = amount(limits[resource]);
    if (request > 0 && limit > 0 && request > limit) {
      return invalid(
        `${field}.requests.${resource}`,
        `${requests[resource]} must be less than or equal to the limit ${limits[resource]}`,
      );
    }
  }
  const hugepages = (map: Record<string, string>) => Object.keys(map).filter((k) => k.startsWith(HUGEPAGES_PREFIX));
  for (const key of hugepages(requests)) {
    if (limits[key] !== undefined && amount(requests[key]) !== amount(limits[key])) {
      return invalid(`${field}.requests.${key}`, `${requests[key]} must equal the limit ${limits[key]}`);
    }
  }
  const pages = [
    ...hugepages(requests).map((k) => amount(requests[k])),
    ...hugepages(limits).map((k) => amount(limits[k])),
  ];
  const cpuOrMemory = ['cpu', 'memory'].some((k) => amount(requests[k]) > 0 || amount(limits[k]) > 0);
  if (pages.length > 0 && !cpuOrMemory) {
    return invalid(field, `hugepages-* need a cpu or memory request or limit beside them`);
  }
  const sharedBuffers = config.postgresqlConfig.shared_buffers;
  const buffers = sharedBuffers === undefined ? undefined : pgMemoryBytes(sharedBuffers);
  const memory = amount(requests.memory);
  if (buffers !== undefined && memory > 0 && buffers > memory && !pages.some((page) => buffers <= page)) {
    return invalid(
      `${field}.requests.memory`,
      `${requests.memory} is lower than shared_buffers ${sharedBuffers} (${parameter('shared_buffers')}); request at least that much memory, or hugepages that hold it`,
    );
  }
  return undefined;
}
