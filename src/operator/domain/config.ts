/**
 * Merging a cluster's spec over its class defaults, and validating the result. Invalid input never
 * throws: it becomes an `InvalidSpec` result naming the offending field, which the machine reports as
 * `Stalled` until the spec or the class changes.
 */

import type { Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import {
  type ConnectionPoolerConfig,
  type DeletionPolicy,
  type ManagedRole,
  type PoolMode,
  PostgresClusterClassSpec,
  PostgresClusterSpec,
  type ResourceRequirements,
} from '../api/schema.ts';
import type { Observation } from './observation.ts';
import { quantityValue } from './quantity.ts';

export interface PoolerConfig {
  instances: number;
  mode: PoolMode;
  parameters: Record<string, string>;
}

export interface MergedConfig {
  instances: number;
  postgresVersion: string;
  storage: string;
  resources: ResourceRequirements;
  postgresqlConfig: Record<string, string>;
  pgHBA: string[];
  primaryUpdateMethod: 'restart' | 'switchover';
  /** Present only when the pooler is enabled. */
  pooler?: PoolerConfig;
  managedRoles: ManagedRole[];
  deletionPolicy: DeletionPolicy;
}

export type MergeResult = { ok: true; config: MergedConfig } | { ok: false; field: string; message: string };

const DEFAULT_POOLER_INSTANCES = 3;
const DEFAULT_POOL_MODE: PoolMode = 'transaction';

const invalid = (field: string, message: string): MergeResult => ({
  ok: false,
  field,
  message: `${field}: ${message}`,
});

/** The first schema error of a value, as `path: message`, or undefined when the value is valid. */
function firstSchemaError(schema: typeof PostgresClusterSpec | typeof PostgresClusterClassSpec, value: unknown) {
  const first = Value.Errors(schema, value).First();
  if (!first) return undefined;
  const path = first.path.replace(/^\//, '').replaceAll('/', '.');
  return { path, message: first.message };
}

/** Major version as a number ("17.2" -> 17). */
const major = (version: string) => Number(/^(\d+)/.exec(version)?.[1] ?? Number.NaN);

export function mergeConfig(observation: Observation): MergeResult {
  const { cluster, clusterClass, cnpg } = observation;
  const specError = firstSchemaError(PostgresClusterSpec, cluster.spec);
  if (specError) return invalid(specError.path ? `spec.${specError.path}` : 'spec', specError.message);
  if (!clusterClass) return invalid('spec.class', `PostgresClusterClass ${cluster.spec.class} not found`);
  const classError = firstSchemaError(PostgresClusterClassSpec, clusterClass.spec);
  if (classError) {
    const field = classError.path ? `spec.${classError.path}` : 'spec';
    return invalid(`class ${clusterClass.metadata.name} ${field}`, classError.message);
  }

  const spec = cluster.spec;
  const defaults = clusterClass.spec.config ?? {};
  const instances = spec.instances ?? defaults.instances;
  const postgresVersion = spec.postgresVersion ?? defaults.postgresVersion;
  const storage = spec.storage ?? defaults.storage;
  if (instances === undefined) return invalid('spec.instances', 'required: set it here or in the class config');
  if (postgresVersion === undefined) {
    return invalid('spec.postgresVersion', 'required: set it here or in the class config');
  }
  if (storage === undefined) return invalid('spec.storage', 'required: set it here or in the class config');

  // What CNPG already runs bounds what we may ask for: storage never shrinks, the major never goes down.
  // The CRD's CEL rules guard the cluster's own edits; these guard class-default changes too.
  const running = cnpg?.spec;
  const runningStorage = typeof running?.storage?.size === 'string' ? running.storage.size : undefined;
  if (runningStorage && (quantityValue(storage) ?? 0) < (quantityValue(runningStorage) ?? 0)) {
    return invalid('spec.storage', `cannot shrink from ${runningStorage} to ${storage}`);
  }
  const runningVersion = typeof running?.imageName === 'string' ? running.imageName.split(':').at(-1) : undefined;
  if (runningVersion && /^[0-9]/.test(runningVersion) && major(postgresVersion) < major(runningVersion)) {
    return invalid('spec.postgresVersion', `major version cannot go down from ${runningVersion} to ${postgresVersion}`);
  }

  const poolerEnabled = spec.connectionPoolerEnabled ?? defaults.connectionPoolerEnabled ?? false;
  const poolerClass: Static<typeof ConnectionPoolerConfig> | undefined = clusterClass.spec.cnpg?.connectionPooler;
  if (poolerEnabled && !poolerClass) {
    return invalid(
      'spec.connectionPoolerEnabled',
      `the pooler is enabled but class ${clusterClass.metadata.name} has no cnpg.connectionPooler`,
    );
  }

  const roleNames = new Set<string>();
  for (const [i, role] of (spec.managedRoles ?? []).entries()) {
    if (roleNames.has(role.name)) return invalid(`spec.managedRoles[${i}].name`, `duplicate role ${role.name}`);
    roleNames.add(role.name);
  }

  return {
    ok: true,
    config: {
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
    },
  };
}
