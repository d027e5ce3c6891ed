/**
 * Which PostgresDatabases a watched change concerns, as mapping.ts tells it for the clusters: pure, reading the
 * event and the databases' cache, never throwing whatever the caches hold. A database follows its cluster:
 * the PostgresCluster, its CNPG Cluster (the roles CNPG reports) and its endpoints ConfigMap (where the
 * Secrets point) all wake the databases naming it — the reference system polled every 15 s instead, and
 * missed the pooler being turned on or off.
 */
import type { PostgresDatabase } from '../api/schema.ts';
import type { ClusterKey } from '../core/ports.ts';
import { rolesOf } from '../domain/database/roles.ts';
import { DATABASE_LABEL } from '../domain/database/vocabulary.ts';
import type { KubeObject } from '../domain/objects.ts';
import { isRecord } from '../domain/records.ts';
import { clusterNameOfChild } from '../domain/vocabulary.ts';
import { clusterUpdateOf } from './mapping.ts';
import { SecretNameIndex } from './secret-index.ts';
import type { SourceEvent } from './sources.ts';

/** The queue key of a PostgresDatabase: apart from the clusters' `namespace/name` keys in the same queue. */
export const DATABASE_KEY_PREFIX = 'PostgresDatabase:';
export const databaseKeyString = (key: ClusterKey) => `${DATABASE_KEY_PREFIX}${key.namespace}/${key.name}`;
export const isDatabaseKey = (key: string) => key.startsWith(DATABASE_KEY_PREFIX);

const clusterOf = (database: unknown): string | undefined => {
  const spec = isRecord(database) ? database.spec : undefined;
  return isRecord(spec) && typeof spec.cluster === 'string' ? spec.cluster : undefined;
};

/** The cluster a PostgresDatabase names, which pushes its roles: for the clusters' mapping. */
export function clusterOfDatabase(object: KubeObject): ClusterKey | undefined {
  const name = clusterOf(object);
  return name ? { namespace: object.metadata.namespace ?? '', name } : undefined;
}

/** The names of a PostgresDatabase's connection Secrets (`<database>-<role>`, domain/database/roles.ts). */
const secretNamesOf = (database: KubeObject): string[] =>
  rolesOf(database as PostgresDatabase).map((role) => role.secretName);

/** The databases whose roles' Secrets have each name (`databasesUsingSecret`), kept as mapping.ts keeps the clusters'. */
export class DatabaseSecretIndex extends SecretNameIndex {
  constructor() {
    super('PostgresDatabase', secretNamesOf);
  }
}

/** Who names a Secret, by its name: an index, or a scan of the namespace's cached databases. */
export type DatabasesUsingSecret = (namespace: string, name: string) => readonly ClusterKey[];

/** The PostgresDatabase that controls an object (its CNPG Database, a connection Secret), if any. */
function controllingDatabase(object: KubeObject): string | undefined {
  const owners: unknown = object.metadata.ownerReferences;
  const owner = (Array.isArray(owners) ? owners : []).find(
    (o) => isRecord(o) && o.kind === 'PostgresDatabase' && o.controller === true,
  );
  return isRecord(owner) && typeof owner.name === 'string' ? owner.name : undefined;
}

/**
 * The PostgresDatabases a Secret event concerns: the one its label names, the one that controls it, and every one
 * whose roles' Secrets have its name. The last is what makes a hand-over take effect at once: a Secret planted or
 * left under that name has no owner and perhaps no label, and `kubectl annotate … pgfsm.io/adopt=true` changes
 * nothing else on it, yet it is exactly what the database waits for (issue 37, point 2).
 */
export function databasesOfSecret(secret: KubeObject, using: DatabasesUsingSecret | undefined): ClusterKey[] {
  const namespace = secret.metadata.namespace ?? '';
  const labels: unknown = secret.metadata.labels;
  const labelled = isRecord(labels) ? labels[DATABASE_LABEL] : undefined;
  const names = new Set<string>();
  if (typeof labelled === 'string' && labelled) names.add(labelled);
  const controller = controllingDatabase(secret);
  if (controller) names.add(controller);
  for (const key of using?.(namespace, secret.metadata.name) ?? []) names.add(key.name);
  return [...names].map((name) => ({ namespace, name }));
}

/** `DatabasesUsingSecret` by a scan of the cached databases (tests; the controller keeps an index). */
export const scanningDatabases =
  (databases: (namespace: string) => readonly PostgresDatabase[]): DatabasesUsingSecret =>
  (namespace, name) =>
    databases(namespace)
      .filter((d) => secretNamesOf(d).includes(name))
      .map((d) => ({ namespace, name: d.metadata.name }));

/**
 * The PostgresDatabases to reconcile because of one watch event. `using` finds the databases naming a Secret
 * (the controller's index); without it, the namespace's databases are scanned.
 */
export function databasesFor(
  event: SourceEvent,
  databases: (namespace: string) => readonly PostgresDatabase[],
  using: DatabasesUsingSecret = scanningDatabases(databases),
): ClusterKey[] {
  const { object } = event;
  const namespace = object.metadata?.namespace ?? '';
  const name = object.metadata?.name;
  if (typeof name !== 'string') return [];
  const naming = (cluster: string | undefined) =>
    cluster === undefined
      ? []
      : databases(namespace)
          .filter((d) => clusterOf(d) === cluster)
          .map((d) => ({ namespace, name: d.metadata.name }));
  switch (object.kind) {
    case 'PostgresDatabase':
      // Its own status changes wake nothing: they are its pass's writes (or, if someone else's, the next wake repairs them).
      if (event.type === 'update' && event.old && clusterUpdateOf(event.old, object) !== 'lifecycle') return [];
      return [{ namespace, name }];
    case 'Database': {
      const owner = controllingDatabase(object);
      return owner ? [{ namespace, name: owner }] : [];
    }
    case 'Secret':
      return databasesOfSecret(object, using);
    case 'PostgresCluster':
    case 'Cluster':
      return naming(name);
    case 'ConfigMap':
      return naming(clusterNameOfChild('ConfigMap', name));
    default:
      return [];
  }
}
