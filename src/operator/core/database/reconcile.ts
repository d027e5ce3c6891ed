/**
 * The reconcile pass of one PostgresDatabase: observe → restore the machine from `status.state` (trusted only
 * when the world agrees, as for the cluster) → one tick → execute its writes in order → project the status →
 * write it if it changed → emit the events → the requeue decision.
 *
 * Exactly once: the Events of writes are sent once the write succeeded (the next pass finds the write done
 * and does not make it again); the machine's announcements (`Ready`, a failure's Warning) only once the
 * status that records the transition is stored, because a pass whose status write failed is taken again from
 * the old state and announces again.
 */
import { isDeepStrictEqual } from 'node:util';
import { transition } from 'xstate';
import {
  type DatabaseSnapshot,
  databaseMetaOf,
  databaseStateMisfit,
  impliedDatabaseState,
  initialDatabaseState,
  restoreDatabaseState,
} from '../../../../machines/database-state-path.ts';
import { DATABASE_FINALIZER_STEP } from '../../../../machines/database-states.ts';
import { postgresDatabaseMachine } from '../../../../machines/postgres-database.ts';
import { encodeState } from '../../../../machines/state-codec.ts';
import { deadlineAt } from '../../../../machines/summary.ts';
import type { PostgresDatabase } from '../../api/schema.ts';
import { assessDatabase } from '../../domain/database/assessment.ts';
import type { DatabaseEffect, DatabaseWrite } from '../../domain/database/effects.ts';
import { databaseEvent } from '../../domain/database/effects.ts';
import type { DatabaseTick } from '../../domain/database/observation.ts';
import { DatabaseReason } from '../../domain/database/vocabulary.ts';
import type { KubeEvent } from '../../domain/effects.ts';
import type { Settings } from '../../domain/observation.ts';
import { messageOf, worstError } from '../errors.ts';
import type { ClusterKey } from '../ports.ts';
import { type ReconcileOutcome, type Requeue, requeueAfterError } from '../reconcile.ts';
import { executeDatabaseEffects } from './execute.ts';
import { observeDatabase } from './observe.ts';
import type { DatabasePorts } from './ports.ts';
import { type DatabaseWriteFailure, projectDatabaseStatus } from './status.ts';

/** A database pass's outcome: the cluster's, less what only a cluster's pass does (follow-ups, a handover). */
export type DatabaseOutcome = Pick<
  ReconcileOutcome,
  'key' | 'found' | 'from' | 'to' | 'requeue' | 'error' | 'statusWritten' | 'writes' | 'events'
>;

export interface DatabaseReconcileOptions {
  ports: DatabasePorts;
  settings: Settings;
}

type MachineAction = { type: string; params?: unknown };

const effectsOf = (actions: readonly MachineAction[]): DatabaseEffect[] =>
  actions.filter((a) => a.type === 'effect').map((a) => a.params as DatabaseEffect);

function failureOf(write: DatabaseWrite, error: unknown): DatabaseWriteFailure {
  const message = messageOf(error);
  switch (write.type) {
    case 'applySecret':
      return {
        component: 'secrets',
        reason: DatabaseReason.WriteFailed,
        message: `Writing Secret ${write.secret.ref.name}: ${message}`,
      };
    case 'applyDatabase':
      return {
        component: 'database',
        reason: DatabaseReason.WriteFailed,
        message: `Applying CNPG Database: ${message}`,
      };
    case 'grantPrivileges':
      return { component: 'privileges', reason: DatabaseReason.PrivilegesFailed, message };
    case 'delete':
    case 'releaseOwner':
      return {
        reason: DatabaseReason.CleanupFailed,
        message: `Cleaning up ${write.ref.kind} ${write.ref.name}: ${message}`,
      };
    default:
      return { reason: DatabaseReason.WriteFailed, message: `${write.type}: ${message}` };
  }
}

/** Where the pass starts: the stored state when the world agrees with it, else the state the world implies. */
function startingPoint(
  database: PostgresDatabase,
  event: DatabaseTick,
): { snapshot: DatabaseSnapshot; discarded?: KubeEvent } {
  const stored = database.status?.state;
  const misfit = databaseStateMisfit(stored, database);
  if (misfit === undefined) return { snapshot: restoreDatabaseState(stored) ?? initialDatabaseState() };
  const discarded = databaseEvent(
    'StoredStateDiscarded',
    'DiscardStoredState',
    `Stored state ${JSON.stringify(stored ?? null)} discarded: ${misfit}`,
  );
  return { snapshot: impliedDatabaseState(event), discarded };
}

function requeueOf(error: unknown, snapshot: DatabaseSnapshot, since: number, event: DatabaseTick): Requeue {
  if (error !== undefined) return requeueAfterError(error, event.settings);
  const meta = databaseMetaOf(snapshot);
  if (meta.requeue === 'none') return { kind: 'none' };
  const deadline = deadlineAt({ meta, since, settings: event.settings });
  const wait =
    deadline !== undefined && event.now <= deadline
      ? Math.min(event.settings.requeueDelayMs, Math.max(deadline - event.now + 1000, 1000))
      : event.settings.requeueDelayMs;
  return { kind: 'after', ms: wait };
}

export async function reconcileDatabase(key: ClusterKey, options: DatabaseReconcileOptions): Promise<DatabaseOutcome> {
  const { ports, settings } = options;
  const outcome = (rest: Omit<DatabaseOutcome, 'key' | 'found'>): DatabaseOutcome => ({ key, found: true, ...rest });
  let database: PostgresDatabase | undefined;
  try {
    database = await ports.databases.get(key);
  } catch (error) {
    return outcome({ requeue: requeueAfterError(error, settings), error, statusWritten: false, writes: 0, events: [] });
  }
  if (!database) return { key, found: false, requeue: { kind: 'none' }, statusWritten: false, writes: 0, events: [] };
  const now = ports.clock.now();
  let event: DatabaseTick;
  try {
    event = { type: 'tick', now, observation: await observeDatabase(ports, database), settings };
  } catch (error) {
    return outcome({ requeue: requeueAfterError(error, settings), error, statusWritten: false, writes: 0, events: [] });
  }
  const from = database.status?.state;
  const { snapshot: start, discarded } = startingPoint(database, event);
  const [next, actions] = transition(postgresDatabaseMachine, start, event);
  const execution = await executeDatabaseEffects(ports, database, effectsOf(actions as MachineAction[]));
  const announcements = effectsOf(actions as MachineAction[]).flatMap((e) => (e.type === 'event' ? [e.event] : []));
  const writeEvents = execution.events.filter((e) => !announcements.includes(e));
  const errors: unknown[] = execution.failed ? [execution.failed.error] : [];

  // The final state: the finalizer is gone and the object with it; nothing to store.
  if (next.status === 'done') {
    const sent = await emitAll(ports, database, [...writeEvents, ...announcements], errors);
    return outcome({
      from,
      to: DATABASE_FINALIZER_STEP,
      requeue: requeueOf(worstError(errors), start, now, event),
      ...(errors.length ? { error: worstError(errors) } : {}),
      statusWritten: false,
      writes: execution.writes,
      events: sent,
    });
  }

  const to = encodeState(next.value);
  const since = to === from && database.status?.stateSince ? Date.parse(database.status.stateSince) : now;
  const failure = execution.failed ? failureOf(execution.failed.write, execution.failed.error) : undefined;
  const status = projectDatabaseStatus({
    state: to,
    meta: databaseMetaOf(next),
    assessment: assessDatabase(event),
    generation: database.metadata.generation ?? 0,
    previous: database.status,
    now,
    since,
    settings,
    ...(failure ? { failure } : {}),
  });
  let statusWritten = false;
  let stored = true;
  if (!isDeepStrictEqual(status, database.status)) {
    const current = execution.resourceVersion
      ? { ...database, metadata: { ...database.metadata, resourceVersion: execution.resourceVersion } }
      : database;
    try {
      await ports.databases.writeStatus(current, status);
      statusWritten = true;
    } catch (error) {
      errors.push(error);
      stored = false;
    }
  }
  const due = [...(discarded && stored ? [discarded] : []), ...writeEvents, ...(stored ? announcements : [])];
  const sent = await emitAll(ports, database, due, errors);
  const error = worstError(errors);
  return outcome({
    ...(from !== undefined ? { from } : {}),
    to,
    requeue: requeueOf(error, next, since, event),
    ...(error !== undefined ? { error } : {}),
    statusWritten,
    writes: execution.writes,
    events: sent,
  });
}

/** Sends the events in order; one the sink refuses is dropped and logged by the caller's outcome, not retried. */
async function emitAll(ports: DatabasePorts, database: PostgresDatabase, events: KubeEvent[], errors: unknown[]) {
  const sent: KubeEvent[] = [];
  for (const e of events) {
    try {
      await ports.events.emit(database, e);
      sent.push(e);
    } catch (error) {
      errors.push(error);
    }
  }
  return sent;
}
