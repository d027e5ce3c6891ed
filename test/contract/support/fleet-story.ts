/**
 * A fleet's life as users live it, for the exactly-once tests: managed roles, spec edits, the pooler
 * switched off, a class edit, deletion under both policies. The same story at every watch lag and under
 * faults, so that what each cluster announces can be held against a run with watches at once.
 *
 * Its edits are ones CNPG's status confirms (instances, roles, poolers), not an edit of PostgreSQL
 * parameters alone: CNPG publishes no observedGeneration, so a status written before it took up new
 * parameters cannot be told from one after (healthy either way), and the CNPG simulator answers an update
 * at the very instant it lands, which a lagging watch delivers after the update itself.
 */
import type { PostgresClusterClass } from '../../../src/operator/api/schema.ts';
import { clusterObject, editSpec, NS, passwordSecret, untilReady } from '../../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../../src/tools/simulation/simulation.ts';

const role = (name: string) => ({ name, passwordSecretRef: { name: `${name}-password` } });

export const STORY_CLUSTERS = ['roles', 'pooled', 'scaled', 'dropped', 'kept'];

/** What the story starts from: its clusters and the roles' password Secrets. */
export const storyObjects = (): StoredObject[] => [
  clusterObject('roles', { managedRoles: [role('app')] }),
  passwordSecret('app-password', 'app'),
  passwordSecret('report-password', 'report'),
  clusterObject('pooled', { connectionPoolerEnabled: true, managedRoles: [role('app')] }),
  clusterObject('scaled'),
  clusterObject('dropped', { clusterDeletionPolicy: 'Delete', connectionPoolerEnabled: true }),
  clusterObject('kept', { clusterDeletionPolicy: 'Retain' }),
];

async function allReady(sim: Simulation) {
  for (const name of STORY_CLUSTERS) await untilReady(sim, name, 30 * 60_000);
}

/**
 * Lives the story on `sim` (made with `storyObjects()`): each chapter is followed by `meanwhile` (trouble
 * of the caller's choosing, e.g. lease losses), then every cluster is waited for until Ready.
 */
export async function liveTheStory(sim: Simulation, meanwhile: () => Promise<void> = async () => {}) {
  await meanwhile();
  await allReady(sim);
  // Users edit their clusters.
  editSpec(sim, 'roles', (spec) => ({ ...spec, managedRoles: [role('app'), role('report')] }));
  editSpec(sim, 'pooled', (spec) => ({ ...spec, connectionPoolerEnabled: false }));
  editSpec(sim, 'scaled', (spec) => ({ ...spec, instances: 2 }));
  await meanwhile();
  await sim.run(10_000);
  await allReady(sim);
  // The platform team scales the class: every cluster that does not set its own instances follows.
  const live = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
  const spec = structuredClone(live.spec) as PostgresClusterClass['spec'];
  spec.config = { ...spec.config, instances: 2 };
  sim.api.put({ ...live, spec });
  await meanwhile();
  await sim.run(10_000);
  await allReady(sim);
  // Two clusters go, one taking its children along, one leaving them.
  for (const name of ['dropped', 'kept']) sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name });
  await meanwhile();
  await sim.run(10 * 60_000);
}

/** Each cluster's events, oldest first, as `type reason: message`. */
export const eventsByCluster = (sim: Simulation) =>
  Object.fromEntries(
    STORY_CLUSTERS.map((name) => [
      name,
      sim.events.events.filter((e) => e.regarding.name === name).map((e) => `${e.type} ${e.reason}: ${e.message}`),
    ]),
  );
