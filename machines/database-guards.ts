/**
 * The guard catalogue of the PostgresDatabase machine, as guards.ts is the cluster machine's: every guard once,
 * with its meaning, whether it is a gate, and the domain check it calls. The machine's `setup({ guards })`, the
 * diagram's guard table and `explain` all read it.
 */
import {
  assessDatabase,
  isDatabaseComponentFailed,
  isDatabaseComponentReady,
} from '../src/operator/domain/database/assessment.ts';
import {
  cnpgDatabaseGone,
  databaseDeletionRequested,
  rolesLetGo,
  secretsCleanedUp,
} from '../src/operator/domain/database/deletion.ts';
import type { DatabaseTick } from '../src/operator/domain/database/observation.ts';
import {
  DATABASE_COMPONENTS,
  type DatabaseComponent,
  DatabaseReason,
} from '../src/operator/domain/database/vocabulary.ts';
import { FINALIZER } from '../src/operator/domain/vocabulary.ts';
import { type GuardEntry, gatesOf } from './guards.ts';

type ComponentParams = { component: DatabaseComponent };
type Entry<P = never> = GuardEntry<P, DatabaseTick>;

const a = assessDatabase;
const allReady = (event: DatabaseTick) => DATABASE_COMPONENTS.every((c) => isDatabaseComponentReady(a(event), c));
const earlierReady = (event: DatabaseTick, step: DatabaseComponent) =>
  DATABASE_COMPONENTS.slice(0, DATABASE_COMPONENTS.indexOf(step)).every((c) => isDatabaseComponentReady(a(event), c));

/** Reasons of a component that is only following the cluster or a spec change, not lost. */
const UPDATE_REASONS: ReadonlySet<string> = new Set([
  DatabaseReason.SecretsFollowingCluster,
  DatabaseReason.DatabasePending,
  DatabaseReason.PrivilegesPending,
  DatabaseReason.RolesPending,
]);

export const DATABASE_GUARDS = {
  deletionRequested: {
    meaning: 'The PostgresDatabase has a deletionTimestamp',
    gate: { target: '#postgresDatabase.Deleting' },
    check: 'databaseDeletionRequested',
    holds: (event) => databaseDeletionRequested(event.observation),
  },
  finalizerMissing: {
    meaning: 'Our finalizer is not (or no longer) on the PostgresDatabase, and its spec can be acted on',
    gate: { target: '#postgresDatabase.Pending' },
    check: 'specProblem',
    holds: (event) =>
      !(event.observation.database.metadata.finalizers ?? []).includes(FINALIZER) && !a(event).specProblem,
  },
  specInvalid: {
    meaning: 'The spec cannot be acted on (an object stored past the CRD rules); the condition names the field',
    gate: { target: '#postgresDatabase.Failed.InvalidSpec' },
    check: 'specProblem',
    holds: (event) => a(event).specProblem !== undefined,
  },
  componentReady: {
    meaning: "The component's check says Ready",
    check: 'isDatabaseComponentReady',
    holds: (event, params: ComponentParams) => isDatabaseComponentReady(a(event), params.component),
  },
  componentFailed: {
    meaning: "Every earlier component is Ready and this component's check says Failed",
    check: 'isDatabaseComponentFailed',
    holds: (event, params: ComponentParams) =>
      earlierReady(event, params.component) && isDatabaseComponentFailed(a(event), params.component),
  },
  allReady: {
    meaning: 'Every component is Ready',
    check: 'allReady',
    holds: allReady,
  },
  routineChange: {
    meaning:
      'The spec has a generation the status has not observed, or every component not Ready is only following the ' +
      'cluster or being updated (otherwise leaving Ready warns `NotReady`)',
    check: 'isDatabaseComponentReady',
    holds: (event) => {
      const { metadata, status } = event.observation.database;
      if (status?.observedGeneration !== undefined && metadata.generation !== status.observedGeneration) return true;
      const x = a(event);
      return DATABASE_COMPONENTS.every((c) => isDatabaseComponentReady(x, c) || UPDATE_REASONS.has(x.health[c].reason));
    },
  },
  // Each deletion step leads on to the next cleanup write, so each asks for the deletion timestamp itself: a
  // Deleting state restored from a status written by hand must not destroy a live database.
  cnpgDatabaseGone: {
    meaning: 'Deletion is requested and no CNPG Database of ours is left',
    check: 'cnpgDatabaseGone',
    holds: (event) => databaseDeletionRequested(event.observation) && cnpgDatabaseGone(event.observation),
  },
  rolesLetGo: {
    meaning:
      'Deletion is requested and the PostgresCluster has let the roles go: dropped (Delete) or out of its list (Retain)',
    check: 'rolesLetGo',
    holds: (event) => databaseDeletionRequested(event.observation) && rolesLetGo(event.observation),
  },
  secretsCleanedUp: {
    meaning: 'Deletion is requested and no connection Secret is ours any more (deleted, or released under Retain)',
    check: 'secretsCleanedUp',
    holds: (event) => databaseDeletionRequested(event.observation) && secretsCleanedUp(event.observation),
  },
} satisfies Record<string, Entry<never>>;

type Catalogue = typeof DATABASE_GUARDS;
export type DatabaseGuardName = keyof Catalogue;
type ParamsOf<K extends DatabaseGuardName> = Parameters<Catalogue[K]['holds']>[1];
export type DatabaseGate = {
  [K in DatabaseGuardName]: Catalogue[K] extends { gate: object } ? K : never;
}[DatabaseGuardName];

export const databaseGuardImplementations = Object.fromEntries(
  Object.entries(DATABASE_GUARDS).map(([name, entry]) => [
    name,
    ({ event }: { event: DatabaseTick }, params: unknown) => (entry.holds as Entry<unknown>['holds'])(event, params),
  ]),
) as { [K in DatabaseGuardName]: (args: { event: DatabaseTick }, params: ParamsOf<K>) => boolean };

export const DATABASE_GATES = gatesOf<DatabaseGate>(DATABASE_GUARDS);
