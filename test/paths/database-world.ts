/**
 * Makes the in-memory API hold exactly the world a database sample describes, keeping what the system under
 * test stored itself (the PostgresDatabase's status), as world.ts does for the cluster's samples.
 */
import type { DatabaseObservation } from '../../src/operator/domain/database/observation.ts';
import type { MemoryApiServer, StoredObject } from '../../src/tools/memory/api-server.ts';
import { FIXTURE_PASSWORD } from './world.ts';

const WORLD_KINDS = ['PostgresCluster', 'Cluster', 'ConfigMap', 'Database', 'Secret', 'PostgresDatabase'];
const idOf = (o: { kind: string; metadata: { namespace?: string; name: string } }) =>
  `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const stored = (o: object) => structuredClone(o) as unknown as StoredObject;

function worldOf(o: DatabaseObservation): StoredObject[] {
  const objects: StoredObject[] = [];
  for (const x of [o.cluster, o.cnpg, o.endpoints, o.cnpgDatabase]) if (x) objects.push(stored(x));
  for (const view of Object.values(o.secrets)) {
    if (!view) continue;
    const { keys, values, ...secret } = view;
    const data = Object.fromEntries(
      keys.map((k) => [
        k,
        Buffer.from(values[k as keyof typeof values] ?? (k === 'password' ? FIXTURE_PASSWORD : k)).toString('base64'),
      ]),
    );
    objects.push({ ...stored(secret), data });
  }
  for (const d of o.databases) if (d.metadata.name !== o.database.metadata.name) objects.push(stored(d));
  return objects;
}

export function forceDatabaseWorld(api: MemoryApiServer, observation: DatabaseObservation): void {
  const wanted = worldOf(observation);
  const self = idOf(observation.database);
  const wantedIds = new Set([...wanted.map(idOf), self]);
  for (const kind of WORLD_KINDS) {
    for (const o of api.list(kind)) {
      if (wantedIds.has(idOf(o))) continue;
      // Finalizers first: the world loses the object at once, as a sample says it is gone.
      if (o.metadata.finalizers?.length) api.put({ ...o, metadata: { ...o.metadata, finalizers: [] } });
      const ref = { kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name };
      if (api.get(ref)) api.delete(ref);
    }
  }
  for (const o of wanted) api.put(o);
  const { database } = observation;
  const ref = { kind: 'PostgresDatabase', namespace: database.metadata.namespace, name: database.metadata.name };
  const before = api.get(ref);
  const next = { ...stored(database), status: before?.status } as StoredObject;
  if (before) api.put(next);
  else api.create(next);
}
