/**
 * The machines `explain` replays, each bound once to what a replay needs beside its description in
 * `MACHINES` (machines/chart.ts: chart, guard catalogue, sequences, conditions): the XState logic, its
 * stored-state codec, its guards evaluated on a tick, and how its writes read as a line. Everything else in
 * explain/ is written once over an `ExplainedMachine` and serves both resources.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import { MACHINES, type MachineDescription } from '../../../machines/chart.ts';
import { DATABASE_GUARDS } from '../../../machines/database-guards.ts';
import { databaseMetaOf, initialDatabaseState, restoreDatabaseState } from '../../../machines/database-state-path.ts';
import { DATABASE_MACHINE_ID } from '../../../machines/database-states.ts';
import { catalogueOf, clusterGuards } from '../../../machines/guards.ts';
import type { StateMeta } from '../../../machines/meta.ts';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import { postgresDatabaseMachine } from '../../../machines/postgres-database.ts';
import { initialState, metaOf, restoreState } from '../../../machines/state-path.ts';
import { MACHINE_ID } from '../../../machines/states.ts';
import { index } from '../../../machines/walk.ts';
import type { DatabaseEffect } from '../domain/database/effects.ts';
import type { DatabaseTick } from '../domain/database/observation.ts';
import type { Effect } from '../domain/effects.ts';
import type { TickEvent } from '../domain/observation.ts';

/** `E`: the machine's tick; `F`: the effects its actions carry. */
export interface ExplainedMachine<E, F> {
  description: MachineDescription;
  /** Lookups over the description's walked chart. */
  states: ReturnType<typeof index>;
  logic: AnyStateMachine;
  /** The stored state as a snapshot; undefined when it names no state of this version. */
  restoreState: (stored: string | undefined) => AnyMachineSnapshot | undefined;
  initialState: () => AnyMachineSnapshot;
  /** The meta of the snapshot's active atomic state. */
  metaOf: (snapshot: AnyMachineSnapshot) => StateMeta<string>;
  /** A guard of the catalogue, evaluated on a tick as the machine would. */
  guardHolds(name: string, params: unknown, event: E): boolean;
  /** A write as a line: kinds and names only (a Secret's template carries no value, and none is printed). */
  describeEffect(effect: F): string;
}

function describedAs(id: string): MachineDescription {
  const description = MACHINES.find((m) => m.id === id);
  if (!description) throw new Error(`machines/chart.ts describes no machine ${id}`);
  return description;
}

export function describeEffect(effect: Effect): string {
  switch (effect.type) {
    case 'addFinalizer':
    case 'removeFinalizer':
      return effect.type === 'addFinalizer' ? 'add the finalizer' : 'remove the finalizer';
    case 'createSecret':
      return `create Secret ${effect.secret.ref.name}`;
    case 'apply': {
      const part = effect.component === 'managedRoles' ? ' (managed roles)' : '';
      return `apply ${effect.object.kind} ${effect.object.metadata.name}${part}`;
    }
    case 'delete':
      return `delete ${effect.ref.kind} ${effect.ref.name}`;
    case 'setOwner':
      return `adopt ${effect.ref.kind} ${effect.ref.name}`;
    case 'releaseOwner':
      return `release ${effect.ref.kind} ${effect.ref.name}`;
    case 'event':
      return `event ${effect.event.type} ${effect.event.reason}`;
  }
}

export function describeDatabaseEffect(effect: DatabaseEffect): string {
  switch (effect.type) {
    case 'addFinalizer':
    case 'removeFinalizer':
      return effect.type === 'addFinalizer' ? 'add the finalizer' : 'remove the finalizer';
    case 'applySecret':
      return `apply Secret ${effect.secret.ref.name}`;
    case 'applyDatabase':
      return `apply ${effect.object.kind} ${effect.object.metadata.name}`;
    case 'grantPrivileges':
      return `grant privileges in database ${effect.plan.database} over SQL`;
    case 'delete':
      return `delete ${effect.ref.kind} ${effect.ref.name}`;
    case 'releaseOwner':
      return `release ${effect.ref.kind} ${effect.ref.name}`;
    case 'event':
      return `event ${effect.event.type} ${effect.event.reason}`;
  }
}

const clusterDescription = describedAs(MACHINE_ID);
const databaseDescription = describedAs(DATABASE_MACHINE_ID);

export const CLUSTER_MACHINE: ExplainedMachine<TickEvent, Effect> = {
  description: clusterDescription,
  states: index(clusterDescription.chart),
  logic: postgresClusterMachine,
  restoreState,
  initialState,
  metaOf: (snapshot) => metaOf(snapshot as Parameters<typeof metaOf>[0]),
  guardHolds: clusterGuards.guardHolds,
  describeEffect,
};

export const DATABASE_MACHINE: ExplainedMachine<DatabaseTick, DatabaseEffect> = {
  description: databaseDescription,
  states: index(databaseDescription.chart),
  logic: postgresDatabaseMachine,
  restoreState: restoreDatabaseState,
  initialState: initialDatabaseState,
  metaOf: (snapshot) => databaseMetaOf(snapshot as Parameters<typeof databaseMetaOf>[0]),
  guardHolds: catalogueOf(DATABASE_GUARDS, 'machines/database-guards.ts').guardHolds,
  describeEffect: describeDatabaseEffect,
};
