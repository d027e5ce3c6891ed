/**
 * Explores what a lifecycle produces: from every state its machine can be stored in, one tick of every
 * sample world, through the pure machine (`transition`) and through the real reconcile core on a frozen
 * world (writes accepted, writes accepted long after the progress deadline, writes rejected). The events
 * and conditions found are the reference tables' raw material: nothing is copied from the source text, so a
 * reason added to a planner or a health check shows up here on the next generation.
 *
 * Written once over an `ExploredMachine`; the PostgresCluster's (`CLUSTER_LIFECYCLE`) and the PostgresDatabase's
 * (`DATABASE_LIFECYCLE`) bind it to their machine, their stored-state codec and their reconcile core.
 */
import { type AnyMachineSnapshot, type AnyStateMachine, transition } from 'xstate';
import {
  databaseNamingCondition,
  initialDatabaseState,
  restoreDatabaseState,
  storableDatabaseStates,
} from '../../../machines/database-state-path.ts';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import { postgresDatabaseMachine } from '../../../machines/postgres-database.ts';
import { encodeState } from '../../../machines/state-codec.ts';
import { initialState, namingCondition, restoreState, storableStates } from '../../../machines/state-path.ts';
import type { Condition } from '../../operator/api/schema.ts';
import { reconcileDatabase } from '../../operator/core/database/reconcile.ts';
import { reconcile } from '../../operator/core/reconcile.ts';
import type { DatabaseEffect } from '../../operator/domain/database/effects.ts';
import type { DatabaseTick } from '../../operator/domain/database/observation.ts';
import { type Effect, type Joined, joinsLast, type KubeEvent, type Write } from '../../operator/domain/effects.ts';
import type { Settings, TickEvent } from '../../operator/domain/observation.ts';
import { frozenDatabasePorts, frozenPorts, type Recorder, type WriteMode } from './world.ts';

/** Where an event comes from. */
export type EventSource = 'write' | 'transition' | 'writeFailure';

export interface ObservedEvent {
  event: KubeEvent;
  source: EventSource;
  /** The write it reports (`write`) or that failed (`writeFailure`), e.g. `apply Cluster`. */
  write?: string;
  /** The stored state the pass started from and the state it reached. */
  from: string;
  to: string;
}

export interface ObservedCondition {
  type: string;
  status: string;
  reason: string;
}

export interface Exploration {
  /** Every state the resource can be stored in (atomic, not final), in machine order. */
  states: string[];
  events: ObservedEvent[];
  conditions: ObservedCondition[];
}

/** What a sample world is, for every machine: a tick with its time and settings. */
export interface LifecycleTick {
  type: 'tick';
  now: number;
  settings: Settings;
}

/** The status a pass starts from: the sample's own (what the world remembers), its state and conditions set. */
export interface StoredStatus {
  state?: string;
  stateSince?: string;
  conditions?: Condition[];
}

/** An effect as both machines carry them: a write, with the event it reports once done, or an announcement. */
export type LifecycleEffect = { type: string; event?: KubeEvent; joins?: Joined };

/** `T`: the machine's tick (a sample world); `F`: its effects. */
export interface ExploredMachine<T extends LifecycleTick, F extends LifecycleEffect> {
  logic: AnyStateMachine;
  storableStates: () => readonly string[];
  restoreState: (stored: string | undefined) => AnyMachineSnapshot | undefined;
  initialState: () => AnyMachineSnapshot;
  /** The `Reconciling` condition every stored status names its state in a second time. */
  namingCondition: (state: string, lastTransitionTime: string) => Condition;
  /** `apply Cluster`, `create Secret`, `add finalizer`…: a write as the tables name it. */
  describeWrite: (write: Exclude<F, { type: 'event' }>) => string;
  /** The status the sample's resource carries (what the world remembers, e.g. a refused write). */
  statusOf: (tick: T) => StoredStatus | undefined;
  /** One pass of the real core on the sample's frozen world, from `status` (none: a new resource). */
  pass: (tick: T, status: StoredStatus | undefined, mode: WriteMode) => Promise<Recorder>;
}

const PAST_DEADLINE_MS = 60_000;

/**
 * One tick of each sample from each storable state (and from no stored state at all). The one event the
 * core adds to the machine's is a failed write's Warning, seen when the world rejects the first write.
 */
export async function explore<T extends LifecycleTick, F extends LifecycleEffect>(
  machine: ExploredMachine<T, F>,
  ticks: readonly T[],
): Promise<Exploration> {
  const states = [...machine.storableStates()];
  const events: ObservedEvent[] = [];
  const conditions: ObservedCondition[] = [];
  type W = Exclude<F, { type: 'event' }>;
  const isWrite = (e: F): e is W => e.type !== 'event';
  for (const from of [undefined, ...states]) {
    const snapshot = machine.restoreState(from) ?? machine.initialState();
    for (const tick of ticks) {
      const [next, actions] = transition(machine.logic, snapshot, tick as never);
      const to = encodeState(next.value);
      const effects = (actions as ReadonlyArray<{ type: string; params?: unknown }>)
        .filter((a) => a.type === 'effect')
        .map((a) => a.params as F);
      const start = from ?? '(none)';
      for (const effect of effects) {
        if (!isWrite(effect)) {
          if (effect.event) events.push({ event: effect.event, source: 'transition', from: start, to });
        } else if (effect.event) {
          // Writes planned together are one report once each is made, as the shell sends it (joinReports).
          const last = events.at(-1);
          const event = effect.joins && joinsLast(effect, last?.event) ? effect.joins.event : effect.event;
          if (event !== effect.event) events.pop();
          events.push({ event, source: 'write', write: machine.describeWrite(effect), from: start, to });
        }
      }
      const firstWrite = effects.find(isWrite);
      const announced = new Set(effects.flatMap((e) => (!isWrite(e) && e.event ? [e.event.reason] : [])));

      const runs: Array<[WriteMode, number]> = [
        ['accept', tick.now],
        ['accept', tick.now - tick.settings.progressDeadlineMs - PAST_DEADLINE_MS],
        ['reject', tick.now],
      ];
      for (const [mode, since] of runs) {
        // The sample's own status carries what the world remembers (a refused write), the rest is the run's.
        const remembered = machine.statusOf(tick);
        // The seeded status names its state in its conditions too, as every status pgfsm writes does;
        // a `status.state` alone would be discarded as written by hand (StoredStateDiscarded).
        const at = new Date(since).toISOString();
        const others = (remembered?.conditions ?? []).filter((c) => c.type !== 'Reconciling');
        const stored = from
          ? {
              ...remembered,
              state: from,
              stateSince: at,
              conditions: [...others, machine.namingCondition(from, at)],
            }
          : undefined;
        const recorder = await machine.pass(tick, stored, mode);
        for (const status of recorder.statuses) {
          for (const c of status.conditions ?? [])
            conditions.push({ type: c.type, status: c.status, reason: c.reason });
        }
        for (const event of recorder.events) {
          if (announced.has(event.reason)) continue;
          if (mode === 'reject' && firstWrite) {
            events.push({ event, source: 'writeFailure', write: machine.describeWrite(firstWrite), from: start, to });
          }
        }
      }
    }
  }
  return { states, events, conditions };
}

/** A cluster's write as the tables name it. */
export function describeWrite(write: Write): string {
  switch (write.type) {
    case 'addFinalizer':
      return 'add finalizer';
    case 'removeFinalizer':
      return 'remove finalizer';
    case 'createSecret':
      return 'create Secret';
    case 'apply':
      return write.component === 'managedRoles'
        ? `apply ${write.object.kind} (managed roles)`
        : `apply ${write.object.kind}`;
    case 'delete':
      return `delete ${write.ref.kind}`;
    case 'setOwner':
      return `set owner of ${write.ref.kind}`;
    case 'releaseOwner':
      return `release ${write.ref.kind}`;
  }
}

/** A database's write as the tables name it. */
export function describeDatabaseWrite(write: Exclude<DatabaseEffect, { type: 'event' }>): string {
  switch (write.type) {
    case 'addFinalizer':
      return 'add finalizer';
    case 'removeFinalizer':
      return 'remove finalizer';
    case 'applySecret':
      return 'apply Secret';
    case 'applyDatabase':
      return `apply ${write.object.kind}`;
    case 'grantPrivileges':
      return 'grant privileges';
    case 'delete':
      return `delete ${write.ref.kind}`;
    case 'releaseOwner':
      return `release ${write.ref.kind}`;
  }
}

export const CLUSTER_LIFECYCLE: ExploredMachine<TickEvent, Effect> = {
  logic: postgresClusterMachine,
  storableStates,
  restoreState,
  initialState,
  namingCondition,
  describeWrite,
  statusOf: (tick) => tick.observation.cluster.status,
  pass: async (tick, status, mode) => {
    const { status: _ignored, ...bare } = tick.observation.cluster;
    // The seeded status is one an earlier pass wrote for the spec before the sample's: a stored Suspended
    // whose generation is the spec's own while that spec does not suspend was never written by a pass, and
    // is discarded (machines/state-path.ts); one from the spec before is a cluster being resumed.
    const written = { ...status, observedGeneration: (bare.metadata.generation ?? 1) - 1 };
    const cluster = status ? { ...bare, status: written } : bare;
    const { ports, recorder } = frozenPorts(tick.observation, cluster, mode, tick.now);
    const key = { namespace: cluster.metadata.namespace, name: cluster.metadata.name };
    await reconcile(key, { ports, settings: tick.settings });
    return recorder;
  },
};

export const DATABASE_LIFECYCLE: ExploredMachine<DatabaseTick, DatabaseEffect> = {
  logic: postgresDatabaseMachine,
  storableStates: storableDatabaseStates,
  restoreState: restoreDatabaseState,
  initialState: initialDatabaseState,
  namingCondition: databaseNamingCondition,
  describeWrite: describeDatabaseWrite,
  statusOf: (tick) => tick.observation.database.status,
  pass: async (tick, status, mode) => {
    const { status: _ignored, ...bare } = tick.observation.database;
    const database = status ? { ...bare, status } : bare;
    const { ports, recorder } = frozenDatabasePorts(tick.observation, database, mode, tick.now);
    const key = { namespace: database.metadata.namespace, name: database.metadata.name };
    await reconcileDatabase(key, { ports, settings: tick.settings });
    return recorder;
  },
};
