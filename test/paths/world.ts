/**
 * Makes the in-memory API hold exactly the world a sample describes, keeping what the system under test
 * stored itself: the PostgresCluster's status. The real core then observes that world through the
 * memory adapters, so the payload the model traversed and what the core sees are the same facts.
 */

import type { Observation } from '../../src/operator/domain/observation.ts';
import type { MemoryApiServer, StoredObject } from '../../src/tools/memory/api-server.ts';

const WORLD_KINDS = [
  'PostgresClusterClass',
  'Secret',
  'Cluster',
  'Pooler',
  'Deployment',
  'ConfigMap',
  'PostgresDatabase',
  'ObjectStore',
  'ScheduledBackup',
  'Backup',
];

/** The PostgresCluster a restore starts from: the one other PostgresCluster a world may hold. */
const isSourceOf = (observation: Observation, o: StoredObject) =>
  o.metadata.name === observation.restoreSource?.metadata.name;

/** A stand-in password: the tests check it never leaks anywhere. */
export const FIXTURE_PASSWORD = 'fixture-password-must-not-leak';

const secretObject = (view: NonNullable<Observation['secret']>): StoredObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: structuredClone(view.metadata),
  data: Object.fromEntries(
    view.keys.map((k) => [k, Buffer.from(k === 'password' ? FIXTURE_PASSWORD : k).toString('base64')]),
  ),
});

export function desiredWorld(observation: Observation): StoredObject[] {
  const objects: StoredObject[] = [];
  if (observation.clusterClass)
    objects.push({
      ...structuredClone(observation.clusterClass),
      metadata: { ...observation.clusterClass.metadata, namespace: '' },
    } as unknown as StoredObject);
  if (observation.secret) objects.push(secretObject(observation.secret));
  for (const view of Object.values(observation.roleSecrets)) if (view) objects.push(secretObject(view));
  if (observation.cnpg) objects.push(structuredClone(observation.cnpg) as unknown as StoredObject);
  for (const view of Object.values(observation.poolers)) {
    if (!view) continue;
    objects.push(structuredClone(view.pooler) as unknown as StoredObject);
    objects.push({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: view.pooler.metadata.name, namespace: view.pooler.metadata.namespace },
      status: { readyReplicas: view.readyReplicas },
    });
  }
  if (observation.configMap) objects.push(structuredClone(observation.configMap) as unknown as StoredObject);
  for (const database of observation.databases ?? [])
    objects.push(structuredClone(database) as unknown as StoredObject);
  const backup = observation.backup;
  for (const object of [backup?.store, backup?.sourceStore, backup?.scheduled, backup?.onDemand]) {
    if (object) objects.push(structuredClone(object) as unknown as StoredObject);
  }
  for (const view of [backup?.secrets.credentials, backup?.secrets.endpointCA])
    if (view) objects.push(secretObject(view));
  if (observation.restoreSource) objects.push(structuredClone(observation.restoreSource) as unknown as StoredObject);
  return objects;
}

const idOf = (o: StoredObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export function forceWorld(api: MemoryApiServer, observation: Observation): void {
  const wanted = desiredWorld(observation);
  const wantedIds = new Set(wanted.map(idOf));
  // The restore's source, when the world no longer has it (the cluster under test is kept: its status is ours).
  for (const o of api.list('PostgresCluster')) {
    if (o.metadata.name !== observation.cluster.metadata.name && !isSourceOf(observation, o)) {
      api.delete({ kind: 'PostgresCluster', namespace: o.metadata.namespace ?? '', name: o.metadata.name });
    }
  }
  for (const kind of WORLD_KINDS) {
    for (const o of api.list(kind)) {
      if (!wantedIds.has(idOf(o)) && api.get({ kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name })) {
        api.delete({ kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name });
      }
    }
  }
  for (const o of wanted) api.put(o);
  const { cluster } = observation;
  const ref = { kind: 'PostgresCluster', namespace: cluster.metadata.namespace, name: cluster.metadata.name };
  const stored = api.get(ref);
  const next = { ...structuredClone(cluster), status: stored?.status } as unknown as StoredObject;
  if (stored) api.put(next);
  else api.create(next);
}
