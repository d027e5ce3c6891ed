/** The CloudNativePG Database object a PostgresDatabase owns: the database itself, its schemas and extensions. */
import type { PostgresDatabase } from '../../api/schema.ts';
import { holds } from '../holds.ts';
import { CNPG_API_VERSION, type ObjectRef } from '../objects.ts';
import { childNames } from '../vocabulary.ts';
import type { CnpgDatabase } from './observation.ts';
import { databaseLabels, ownerReferenceToDatabase } from './vocabulary.ts';

export const cnpgDatabaseRef = (database: PostgresDatabase): ObjectRef => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Database',
  namespace: database.metadata.namespace,
  name: database.metadata.name,
});

/**
 * Every field spelled out, defaults included, so that what the API server stores equals what was sent and
 * drift is a plain comparison. The reclaim policy follows `deletionPolicy`: CNPG drops the database when its
 * Database object goes only under `delete`.
 */
export function desiredCnpgDatabase(database: PostgresDatabase): CnpgDatabase {
  const { spec } = database;
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Database',
    metadata: {
      name: database.metadata.name,
      namespace: database.metadata.namespace,
      labels: databaseLabels(database),
      ownerReferences: [ownerReferenceToDatabase(database)],
    },
    spec: {
      cluster: { name: childNames(spec.cluster).cnpgCluster },
      name: spec.name,
      owner: spec.owner,
      ensure: 'present',
      databaseReclaimPolicy: spec.deletionPolicy === 'Delete' ? 'delete' : 'retain',
      schemas: (spec.schemas ?? []).map((s) => ({ name: s.name, owner: spec.owner, ensure: 'present' as const })),
      extensions: (spec.extensions ?? []).map((e) => ({ name: e.name, ensure: 'present' as const })),
    },
  };
}

/**
 * The spec fields that differ, by name: what pgfsm sends and does not find stored. What CNPG's webhook adds
 * (defaults) is no drift; an empty list sent and none stored is none either (the API server drops it).
 */
export function cnpgDatabaseDrift(observed: CnpgDatabase, desired: CnpgDatabase): string[] {
  const o = observed.spec as Record<string, unknown>;
  const d = desired.spec as Record<string, unknown>;
  return Object.keys(d)
    .filter((key) => !holds(o[key] ?? (Array.isArray(d[key]) ? [] : undefined), d[key]))
    .sort();
}

/** CNPG has applied the current spec: `applied` is about this generation, not an older one. */
export const cnpgApplied = (db: CnpgDatabase) =>
  db.status?.applied === true && db.status.observedGeneration === db.metadata.generation;

/** CNPG tried this generation and says why it could not. */
export const cnpgRefused = (db: CnpgDatabase) =>
  db.status?.applied === false && db.status.observedGeneration === db.metadata.generation && !!db.status.message;
