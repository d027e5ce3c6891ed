/**
 * Which PostgresDatabases a watched change concerns, as mapping.ts tells it for the clusters: pure, reading the
 * event and the databases' cache, never throwing whatever the caches hold. A database follows its cluster:
 * the PostgresCluster, its CNPG Cluster (the roles CNPG reports) and its endpoints ConfigMap (where the
 * Secrets point) all wake the databases naming it — the reference system polled every 15 s instead, and
 * missed the pooler being turned on or off.
 */
import type { PostgresDatabase } from '../api/schema.ts';
import type { ClusterKey } from '../core/ports.ts';
import { DATABASE_LABEL } from '../domain/database/vocabulary.ts';
import type { KubeObject } from '../domain/objects.ts';
import { isRecord } from '../domain/records.ts';
import { clusterNameOfChild } from '../domain/vocabulary.ts';
import { clusterUpdateOf } from './mapping.ts';
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

/** The PostgresDatabases to reconcile because of one watch event. */
export function databasesFor(
  event: SourceEvent,
  databases: (namespace: string) => readonly PostgresDatabase[],
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
      const owner = (object.metadata.ownerReferences ?? []).find((o) => o.kind === 'PostgresDatabase' && o.controller);
      return owner ? [{ namespace, name: owner.name }] : [];
    }
    case 'Secret': {
      const database = object.metadata.labels?.[DATABASE_LABEL];
      return database ? [{ namespace, name: database }] : [];
    }
    case 'PostgresCluster':
    case 'Cluster':
      return naming(name);
    case 'ConfigMap':
      return naming(clusterNameOfChild('ConfigMap', name));
    default:
      return [];
  }
}
