/**
 * The reconcile pass of one PostgresDatabase: observe → restore the machine from `status.state` (trusted only
 * when the world agrees, as for the cluster) → one tick → execute its writes in order → project the status →
 * write it if it changed → emit the events → the requeue decision.
 *
 * Exactly once, by the cluster's rules: the Events of writes are sent once the write succeeded, or once a read
 * shows that a write whose answer was lost landed (execute.ts; the next pass finds the write done and does not
 * make it again); the machine's announcements (`Ready`, a failure's Warning) only once the status that records
 * the transition is stored. A pass whose status write failed holds its status and announcements for the next
 * pass (core/announcements.ts), which goes on from that status and makes them once its own is stored: that pass
 * may not take the transition again (this one may have changed the world), and a write that landed late
 * leaves it nothing to announce.
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
import type { PostgresDatabase, PostgresDatabaseStatus } from '../../api/schema.ts';
import { assessDatabase } from '../../domain/database/assessment.ts';
import type { DatabaseEffect, DatabaseWrite } from '../../domain/database/effects.ts';
import { databaseEvent } from '../../domain/database/effects.ts';
import type { DatabaseTick } from '../../domain/database/observation.ts';
import { DatabaseReason } from '../../domain/database/vocabulary.ts';
import type { KubeEvent } from '../../domain/effects.ts';
import type { Settings } from '../../domain/observation.ts';
import { type Announcements, notIn } from '../announcements.ts';
import { classOf, messageOf, worstError } from '../errors.ts';
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
  /**
   * Where a pass whose status write failed leaves its status and announcements for the database's next pass:
   * one per process, apart from the clusters' (a database may have its cluster's name). Without it they are lost
   * whenever the next pass does not take the same transition again.
   */
  announcements?: Announcements<PostgresDatabase>;
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

/**
 * The database as stored, and the one the pass works on: with the status a pass before it computed from this same
 * stored status but could not store, when one is held and fits (core/announcements.ts, as core/reconcile.ts reads).
 */
function withHandover(stored: PostgresDatabase, memory: Announcements<PostgresDatabase> | undefined) {
  const handover = memory?.pending(stored);
  const status = handover?.status;
  const fits =
    handover && databaseStateMisfit(status?.state, { ...stored, ...(status ? { status } : {}) }) === undefined;
  const database: PostgresDatabase = fits ? { ...stored, ...(status ? { status } : {}) } : stored;
  return { database, ...(handover ? { handover } : {}) };
}

export async function reconcileDatabase(key: ClusterKey, options: DatabaseReconcileOptions): Promise<DatabaseOutcome> {
  const { ports, settings, announcements: memory } = options;
  const outcome = (rest: Omit<DatabaseOutcome, 'key' | 'found'>): DatabaseOutcome => ({ key, found: true, ...rest });
  let stored: PostgresDatabase | undefined;
  try {
    stored = await ports.databases.get(key);
  } catch (error) {
    return outcome({ requeue: requeueAfterError(error, settings), error, statusWritten: false, writes: 0, events: [] });
  }
  if (!stored) {
    memory?.forget(key);
    return { key, found: false, requeue: { kind: 'none' }, statusWritten: false, writes: 0, events: [] };
  }
  const { database, handover } = withHandover(stored, memory);
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
  // What the pass before could not announce, as far as this pass does not say it itself.
  const earlier = notIn(handover?.events ?? [], [...(discarded ? [discarded] : []), ...announcements]);

  // The final state: the finalizer is gone and the object with it; nothing to store.
  if (next.status === 'done') {
    memory?.forget(key);
    const sent = await emitAll(ports, database, [...earlier, ...writeEvents, ...announcements], errors);
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
  const written = await storeStatus(ports, stored, execution.resourceVersion, status);
  if (written.error !== undefined) errors.push(written.error);
  const due = wordsOf(written, memory, { stored, status }, { earlier, discarded, writeEvents, announcements });
  const sent = await emitAll(ports, database, due, errors);
  const error = worstError(errors);
  return outcome({
    ...(from !== undefined ? { from } : {}),
    to,
    requeue: requeueOf(error, next, since, event),
    ...(error !== undefined ? { error } : {}),
    statusWritten: written.written,
    writes: execution.writes,
    events: sent,
  });
}

/**
 * What the pass says now: its writes' Events, and once its status is stored (or needed no write) the announcements,
 * its own and those of the pass before. Not stored, they are held with the status for the next pass
 * (core/announcements.ts) — unless the API server refused the status at admission (it refuses it again, and they
 * are dropped) or this replica lost the lease: the next leader decides again, so this pass holds nothing (held
 * words of a status another replica stores too would be said twice), and what earlier passes hold stays.
 */
function wordsOf(
  written: { stored: boolean; failed?: 'hold' | 'drop' | 'lostLease' },
  memory: Announcements<PostgresDatabase> | undefined,
  pass: { stored: PostgresDatabase; status: PostgresDatabaseStatus },
  words: {
    earlier: KubeEvent[];
    discarded: KubeEvent | undefined;
    writeEvents: KubeEvent[];
    announcements: KubeEvent[];
  },
): KubeEvent[] {
  const { earlier, discarded, writeEvents, announcements } = words;
  const announced = [...(discarded ? [discarded] : []), ...announcements];
  if (written.failed === 'hold') memory?.hold(pass.stored, pass.status, [...earlier, ...announced]);
  // Without the lease, what earlier passes hold stays, as the cluster's does: one of their writes may land yet.
  else if (written.failed !== 'lostLease') memory?.forget(pass.stored.metadata);
  if (!written.stored) return writeEvents;
  return [...earlier, ...(discarded ? [discarded] : []), ...writeEvents, ...announcements];
}

/**
 * The status write, made only when the status differs from the stored one: conditional on the version the pass
 * read (moved on only by its own finalizer writes), the patch computed against the status as stored, not a
 * handed-over one. `failed`: what a failure leaves of the pass's words (`wordsOf`).
 */
async function storeStatus(
  ports: DatabasePorts,
  stored: PostgresDatabase,
  resourceVersion: string | undefined,
  status: PostgresDatabaseStatus,
): Promise<{ stored: boolean; written: boolean; failed?: 'hold' | 'drop' | 'lostLease'; error?: unknown }> {
  if (isDeepStrictEqual(status, stored.status)) return { stored: true, written: false };
  const current = resourceVersion ? { ...stored, metadata: { ...stored.metadata, resourceVersion } } : stored;
  try {
    await ports.databases.writeStatus(current, status);
    return { stored: true, written: true };
  } catch (error) {
    const failed = classOf(error) === 'rejected' ? 'drop' : classOf(error) === 'notLeader' ? 'lostLease' : 'hold';
    return { stored: false, written: false, failed, error };
  }
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
