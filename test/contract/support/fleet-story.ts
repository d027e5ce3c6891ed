/**
 * A fleet's life as users live it, for the exactly-once tests: managed roles, spec edits, the pooler
 * switched off, a class edit, deletion under both policies. The same story at every watch lag and under
 * faults, so that what each cluster announces can be held against a run with watches at once.
 *
 * Its edits include one of PostgreSQL parameters alone, which CNPG's status does not confirm: CNPG publishes
 * no observedGeneration, so a healthy status written before it took up new parameters cannot be told from one
 * after, and the CNPG simulator answers an update at the very instant it lands, which a lagging watch delivers
 * after the update itself. pgfsm waits CNPG_TAKE_UP_MS after its own write before it believes "healthy"
 * (domain/components/cluster.ts); with no wait, this edit repeats announcements at every lag.
 */
import { DATABASE_READY_STATE } from '../../../machines/database-states.ts';
import type { PostgresClusterClass, PostgresDatabase } from '../../../src/operator/api/schema.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import { clusterObject, editSpec, NS, passwordSecret, untilReady } from '../../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../../src/tools/simulation/simulation.ts';

const role = (name: string) => ({ name, passwordSecretRef: { name: `${name}-password` } });

export const STORY_CLUSTERS = ['roles', 'pooled', 'scaled', 'dropped', 'kept', 'apps'];

/**
 * The story's PostgresDatabases, on clusters that stay: `shop` on the pooled cluster (its Secrets follow the
 * pooler switched off), `ledger` and `archive` on `apps` (deleted at the end, under Delete and under Retain).
 * Their names are no cluster's: events are told apart by the name they regard.
 */
export const STORY_DATABASES = ['shop', 'ledger', 'archive'];

/** Everything that announces in the story: its clusters and its databases. */
export const STORY_OBJECTS = [...STORY_CLUSTERS, ...STORY_DATABASES];

const databaseObject = (name: string, spec: Record<string, unknown>): StoredObject =>
  ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresDatabase',
    metadata: { name, namespace: NS },
    spec: { name, owner: `${name}_owner`, ...spec },
  }) as unknown as StoredObject;

/** What the story starts from: its clusters, the roles' password Secrets and (unless told not to) its databases. */
export const storyObjects = ({ databases = true } = {}): StoredObject[] => [
  clusterObject('roles', { managedRoles: [role('app')] }),
  passwordSecret('app-password', 'app'),
  passwordSecret('report-password', 'report'),
  clusterObject('pooled', { connectionPoolerEnabled: true, managedRoles: [role('app')] }),
  clusterObject('scaled'),
  clusterObject('dropped', { clusterDeletionPolicy: 'Delete', connectionPoolerEnabled: true }),
  clusterObject('kept', { clusterDeletionPolicy: 'Retain' }),
  clusterObject('apps'),
  ...(databases
    ? [
        databaseObject('shop', { cluster: 'pooled', users: [{ name: 'shop_reader', access: 'readOnly' }] }),
        databaseObject('ledger', { cluster: 'apps', users: [{ name: 'ledger_app' }], deletionPolicy: 'Delete' }),
        databaseObject('archive', { cluster: 'apps', deletionPolicy: 'Retain' }),
      ]
    : []),
];

const databaseOf = (sim: Simulation, name: string) =>
  sim.api.get<PostgresDatabase>({ kind: 'PostgresDatabase', namespace: NS, name });

/** Waits for a PostgresDatabase to be Ready, as `untilReady` waits for a cluster. */
async function untilDatabaseReady(sim: Simulation, name: string, limitMs: number) {
  const until = sim.clock.now() + limitMs;
  while (databaseOf(sim, name)?.status?.state !== DATABASE_READY_STATE) {
    if (sim.clock.now() >= until)
      throw new Error(`${name} not Ready after ${limitMs} ms: ${databaseOf(sim, name)?.status?.state}`);
    await sim.run(5_000);
  }
}

/** Every cluster and every database that still exists, Ready. */
async function allReady(sim: Simulation) {
  for (const name of STORY_CLUSTERS) await untilReady(sim, name, 30 * 60_000);
  for (const name of STORY_DATABASES) if (databaseOf(sim, name)) await untilDatabaseReady(sim, name, 30 * 60_000);
}

/** A user edits a PostgresDatabase's spec. */
function editDatabase(sim: Simulation, name: string, edit: (spec: Record<string, unknown>) => Record<string, unknown>) {
  const live = sim.api.get({ kind: 'PostgresDatabase', namespace: NS, name });
  if (live) sim.api.put({ ...live, spec: edit(structuredClone(live.spec) as Record<string, unknown>) });
}

/**
 * Lives the story on `sim` (made with `storyObjects()`): each chapter is followed by `meanwhile` (trouble
 * of the caller's choosing, e.g. lease losses), then every cluster is waited for until Ready.
 */
export async function liveTheStory(sim: Simulation, meanwhile: () => Promise<void> = async () => {}) {
  await meanwhile();
  await allReady(sim);
  // Users edit their clusters (the pooled one's databases now connect without the pooler) and add users.
  editSpec(sim, 'roles', (spec) => ({ ...spec, managedRoles: [role('app'), role('report')] }));
  editSpec(sim, 'pooled', (spec) => ({ ...spec, connectionPoolerEnabled: false }));
  editSpec(sim, 'scaled', (spec) => ({ ...spec, instances: 2 }));
  // A PostgreSQL parameter alone: CNPG's status says nothing new until it starts applying it (see above).
  editSpec(sim, 'kept', (spec) => ({ ...spec, postgresqlConfig: { ...spec.postgresqlConfig, work_mem: '8MB' } }));
  await meanwhile();
  await sim.run(10_000);
  await allReady(sim);
  // Teams add users to their databases (a chapter of its own: the cluster's own roles changed in the last one).
  editDatabase(sim, 'ledger', (spec) => ({ ...spec, users: [{ name: 'ledger_app' }, { name: 'ledger_audit' }] }));
  editDatabase(sim, 'archive', (spec) => ({ ...spec, users: [{ name: 'archive_reader', access: 'readOnly' }] }));
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
  // Two clusters go, one taking its children along, one leaving them; so do two databases.
  for (const name of ['dropped', 'kept']) sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name });
  for (const name of ['ledger', 'archive'])
    if (databaseOf(sim, name)) sim.api.delete({ kind: 'PostgresDatabase', namespace: NS, name });
  await meanwhile();
  await sim.run(10 * 60_000);
}

/** Each cluster's and each database's events, oldest first, as `type reason: message`. */
export const eventsByCluster = (sim: Simulation) =>
  Object.fromEntries(
    STORY_OBJECTS.map((name) => [
      name,
      sim.events.events.filter((e) => e.regarding.name === name).map((e) => `${e.type} ${e.reason}: ${e.message}`),
    ]),
  );

/** The role list a `ManagedRolesApplied` line pushed (after the message's own words). */
const pushedRoles = (line: string) => line.split(': ').slice(2).join(': ');
const isRolesPush = (line: string) => line.includes(' ManagedRolesApplied: ');

/**
 * How one object's events differ from the same story's with watches at once: empty when they say the same, each
 * once, in the same order. Every event but the pushes of managed roles must match one for one. The pushes may
 * legitimately come in other steps: a database's pass writes its Secrets one after the other, and a cluster
 * woken between two writes pushes the role whose Secret it sees, then the other, where a cluster woken later
 * pushes both at once. So of the pushes it asks that none repeats a role list (a push made twice, issue 37); that
 * none was lost, `finalRoles` tells.
 */
export function storyDifference(atOnce: readonly string[], late: readonly string[]): string[] {
  const others = (lines: readonly string[]) => lines.filter((line) => !isRolesPush(line));
  const pushes = (lines: readonly string[]) => lines.filter(isRolesPush).map(pushedRoles);
  const problems: string[] = [];
  if (JSON.stringify(others(late)) !== JSON.stringify(others(atOnce)))
    problems.push(`events differ:\n  ${others(late).join('\n  ')}`);
  const pushed = pushes(late);
  const repeated = pushed.filter((roles, i) => pushed.indexOf(roles) !== i);
  if (repeated.length > 0) problems.push(`roles pushed again: ${repeated.join(' | ')}`);
  return problems;
}

/** The managed roles each story cluster's CNPG Cluster ends with: the same whichever steps pushed them. */
export const finalRoles = (sim: Simulation) =>
  Object.fromEntries(
    STORY_CLUSTERS.map((name) => {
      const cnpg = sim.api.get<CnpgCluster>({ kind: 'Cluster', namespace: NS, name });
      const roles = [...(cnpg?.spec.managed?.roles ?? [])].sort((a, b) => a.name.localeCompare(b.name));
      return [name, JSON.stringify(roles)];
    }),
  );
