/**
 * The reconcile core: one pass for one PostgresCluster, as a sequence of stages.
 *
 * read (the object, a handed-over status, the observation) → start (the stored state, or the one the
 * world implies) → take the steps (ticks of the machine and their writes, steps.ts) → conclude (what the
 * writes' failures mean) → store the status (projected, written once, only if it changed) → announce
 * (announcements.ts, the one rule book of what a pass says) → deliver the Events (delivery.ts) → requeue
 * (outcome.ts). Nothing survives between passes except what is stored, and what announcements.ts keeps for
 * the next pass of an object whose status write failed or whose Events could not be sent.
 */
import { isDeepStrictEqual } from 'node:util';
import type { StateMeta } from '../../../machines/meta.ts';
import {
  encodeState,
  impliedState,
  initialState,
  metaOf,
  restoreState,
  type Snapshot,
  storedStateMisfit,
} from '../../../machines/state-path.ts';
import { FINALIZER_STEP, isDeletingState } from '../../../machines/states.ts';
import type { PostgresCluster, PostgresClusterStatus } from '../api/schema.ts';
import { assessTick } from '../domain/assessment.ts';
import { type Effect, type KubeEvent, warning } from '../domain/effects.ts';
import type { Observation, Settings, TickEvent } from '../domain/observation.ts';
import { EventReason, WRITE_FAILURE_REASON } from '../domain/vocabulary.ts';
import { type Announcements, announce, type Handover, type StatusOutcome } from './announcements.ts';
import { deliverEvents, deliverLeftovers } from './delivery.ts';
import { classOf, isNamespaceTerminating, isNotLeader, messageOf, worstError } from './errors.ts';
import type { Execution } from './execute.ts';
import { observeCluster } from './observe.ts';
import { type ReconcileOutcome, requeueAfterError, requeueOf } from './outcome.ts';
import type { ClusterKey, Ports } from './ports.ts';
import { projectStatus, type WriteFailure } from './status.ts';
import { mergedExecution, type Steps, takeSteps } from './steps.ts';

export { type ReconcileOutcome, type Requeue, requeueAfterError, type UnsentEvent } from './outcome.ts';

export interface ReconcileOptions {
  ports: Ports;
  settings: Settings;
  /**
   * Where a pass whose status write failed leaves its status and announcements for the next pass of the
   * object (announcements.ts): one per operator process. Without it they are dropped, and announcements
   * are lost whenever the next pass does not take the same transition again.
   */
  announcements?: Announcements;
  /**
   * Takes the pass's Events to send after the pass (driver/event-delivery.ts), in order per object, so that
   * the worker is not held while they are created one by one. What it cannot send it leaves in
   * `announcements` for the object's next pass. Without it the pass sends them itself before it returns.
   */
  deliver?: (regarding: PostgresCluster, events: KubeEvent[]) => void;
  /**
   * Tick again, within the pass, after writes whose answers say what the world now holds (follow.ts): a
   * new cluster then goes from nothing to its CNPG Cluster requested in one pass and one status write,
   * and the ConfigMap's step to Ready in the same pass. Off, a pass ticks once: the machine's one step
   * per pass that the path tests walk.
   */
  followWrites?: boolean;
}

/** A write that failed, as the condition of its component reports it. */
function describeFailure(effect: Effect, error: unknown, deleting: boolean): WriteFailure {
  const target =
    'ref' in effect
      ? ` ${effect.ref.kind} ${effect.ref.name}`
      : 'object' in effect
        ? ` ${effect.object.kind} ${effect.object.metadata.name}`
        : '';
  const message = `${effect.type}${target} failed: ${messageOf(error)}`;
  if (!('component' in effect)) return { reason: WRITE_FAILURE_REASON.finalizer, message };
  const cleanup = deleting && (effect.type === 'delete' || effect.type === 'releaseOwner');
  const reason = cleanup ? WRITE_FAILURE_REASON.cleanup : WRITE_FAILURE_REASON[effect.component];
  return { component: effect.component, reason, message };
}

const outcomeOf = (
  key: ClusterKey,
  o: Partial<ReconcileOutcome> & Pick<ReconcileOutcome, 'requeue'>,
): ReconcileOutcome => ({ key, found: true, statusWritten: false, writes: 0, events: [], ...o });

export async function reconcile(key: ClusterKey, options: ReconcileOptions): Promise<ReconcileOutcome> {
  const { ports, settings, announcements: memory } = options;
  let reading: Reading | undefined;
  try {
    reading = await read(ports, key, memory);
  } catch (error) {
    return outcomeOf(key, { requeue: requeueAfterError(error, settings), error });
  }
  if (!reading) return gone(ports, memory, key);
  const { stored, cluster } = reading;
  const now = ports.clock.now();
  const previous = cluster.status;
  const from = previous?.state;
  const start = startOf(cluster, { type: 'tick', now, observation: reading.observation, settings });
  const steps = await takeSteps(ports, start.snapshot, start.event, cluster, options.followWrites ?? false);
  const end = conclude(steps);
  // This replica lost the lease mid-pass: whatever it would still write or say is the next leader's to do
  // (it enqueues every cluster when it starts), so the pass ends here, with nothing to retry.
  if (end.lostLease) {
    const { events } = end.execution;
    announce({ stored, previous, status: undefined, events, statusOutcome: { kind: 'lostLease' } }, memory);
    return outcomeOf(key, { ...(from !== undefined ? { from, to: from } : {}), requeue: { kind: 'none' } });
  }
  const projected = project(end, { previous, from, misfit: start.discarded !== undefined, now, settings });
  const written = await storeStatus(ports, stored, end.execution, projected.status);
  const events = announce(
    {
      stored,
      previous,
      status: projected.status,
      ...(reading.handover ? { handover: reading.handover } : {}),
      ...(start.discarded ? { discarded: start.discarded } : {}),
      events: end.execution.events,
      ...(end.failure ? { failure: end.failure } : {}),
      statusOutcome: written.outcome,
    },
    memory,
  );
  const { sent, unsent } = await deliverEvents(ports, memory, options.deliver, stored, cluster, events);
  const errors = [...(end.execution.failure ? [end.execution.failure.error] : []), ...written.errors];
  const error = worstError(errors);
  const requeue = requeueOf({
    error,
    refusedOnly: written.outcome.kind === 'refused' && errors.length === 1,
    ...(unsent.length > 0 && memory ? { waiting: unsent[0] } : {}),
    cutShort: steps.cutShort,
    meta: projected.meta,
    since: projected.since,
    now,
    settings,
    ...recheckOf(end.event),
  });
  return outcomeOf(key, {
    ...(from !== undefined ? { from } : {}),
    to: end.to,
    requeue,
    ...(error !== undefined ? { error } : {}),
    statusWritten: written.written,
    writes: end.execution.writes,
    events: sent,
    ...(options.deliver ? { handedOver: true as const } : {}),
    ...(unsent.length > 0 ? { unsent } : {}),
    ...(steps.followed.length > 0 ? { followed: steps.followed } : {}),
    ...(written.version !== undefined ? { statusVersion: written.version } : {}),
  });
}

/** What a pass reads before it ticks. */
interface Reading {
  /** The object as stored: the status write is decided against it, and a failed one held with it. */
  stored: PostgresCluster;
  /** The object the pass works on: the stored one, with the status handed over if one is. */
  cluster: PostgresCluster;
  handover?: Handover;
  observation: Observation;
}

/** The object and the world it sees; undefined when the object does not exist (any more). */
async function read(ports: Ports, key: ClusterKey, memory: Announcements | undefined): Promise<Reading | undefined> {
  const stored = await ports.clusters.get(key);
  if (!stored) return undefined;
  // The pass before this one computed a status from this same stored status but could not store it:
  // this pass goes on from that status, as it would have had the write succeeded (announcements.ts).
  // One that does not fit the object any more is not taken over; its announcements still are.
  const handover = memory?.pending(stored);
  const status = handover?.status;
  const fits = handover && !storedStateMisfit(status?.state, { ...stored, status });
  const cluster = fits ? { ...stored, status } : stored;
  return { stored, cluster, ...(handover ? { handover } : {}), observation: await observeCluster(ports, cluster) };
}

/** The object is gone: only the Events a deletion could not send are left to try (delivery.ts). */
async function gone(ports: Ports, memory: Announcements | undefined, key: ClusterKey): Promise<ReconcileOutcome> {
  const left = await deliverLeftovers(ports, memory, key);
  if (!left) return outcomeOf(key, { found: false, requeue: { kind: 'none' } });
  const { sent, unsent, again } = left;
  return outcomeOf(key, {
    found: false,
    requeue: again ? { kind: 'transient', error: unsent[0]?.error } : { kind: 'none' },
    events: sent,
    ...(unsent.length > 0 ? { unsent } : {}),
  });
}

/**
 * The state the pass starts from. The world decides, the stored state is only a hint: one that does not fit
 * the world (written by hand, garbage, Deleting without a deletion timestamp) is replaced by the state the
 * world implies, with one Warning naming it, and the pass goes on from there as from a stored state.
 */
function startOf(cluster: PostgresCluster, event: TickEvent) {
  const from = cluster.status?.state;
  const misfit = storedStateMisfit(from, cluster);
  if (!misfit) return { event, snapshot: restoreState(from) ?? initialState() };
  const discarded = warning(
    EventReason.StoredStateDiscarded,
    'Discard',
    `status.state ${JSON.stringify(from ?? null)} discarded: ${misfit}; the state is recomputed from the world`,
  );
  return { event, snapshot: impliedState(event), discarded };
}

/** When the last tick's verdicts change by time alone, for the requeue. */
const recheckOf = (event: TickEvent): { recheckAt?: number } => {
  const at = assessTick(event).recheckAt;
  return at === undefined ? {} : { recheckAt: at };
};

/** Where the pass ended, and what its writes' failure means. */
interface Conclusion {
  /** The last tick's event: the status is projected from its observation. */
  event: TickEvent;
  execution: Execution;
  next: Snapshot;
  to: string;
  failure?: WriteFailure;
  lostLease: boolean;
}

function conclude({ steps, last }: Steps): Conclusion {
  let execution = mergedExecution(steps);
  // A namespace being deleted refuses new objects, and its deletion takes this PostgresCluster too: no
  // failure to report (no Warning, no failure condition) nor to retry sooner than the state's own requeue.
  if (isNamespaceTerminating(execution.failure?.error)) execution = { ...execution, failure: undefined };
  // The final state is reached by removing the finalizer. If that failed, the object is still there and
  // the pass ends in the step that failed, whose status records the failure (and so warns only once).
  const unfinished = execution.failure !== undefined || execution.refused !== undefined;
  const next = last.taken.status === 'done' && unfinished ? (restoreState(FINALIZER_STEP) ?? last.taken) : last.taken;
  const to = encodeState(next.value);
  // A conflict says only that the pass decided on a view the world has moved past (a write conditional on a
  // version that changed, a child created since the cache saw it absent): nothing a person must hear of, no
  // failure to record; the pass runs again at once (its own backoff) on the newer view.
  const { failure: failed } = execution;
  const failure =
    failed && classOf(failed.error) !== 'conflict'
      ? describeFailure(failed.effect, failed.error, isDeletingState(to))
      : undefined;
  return {
    event: last.event,
    execution,
    next,
    to,
    ...(failure ? { failure } : {}),
    lostLease: isNotLeader(execution.failure?.error),
  };
}

/** The status the pass stores; none once the final state is reached: the object is on its way out. */
function project(
  end: Conclusion,
  pass: {
    previous: PostgresClusterStatus | undefined;
    from?: string;
    misfit: boolean;
    now: number;
    settings: Settings;
  },
): { status: PostgresClusterStatus | undefined; meta: StateMeta; since: number } {
  const { previous, now, settings } = pass;
  const meta = metaOf(end.next);
  const stayed = !pass.misfit && end.to === pass.from && previous?.stateSince;
  const since = stayed ? Date.parse(stayed) : now;
  if (end.next.status === 'done') return { status: undefined, meta, since };
  const status = projectStatus({
    state: end.to,
    meta,
    // The assessment the machine's guards already made of this tick's observation (memoised).
    assessment: assessTick(end.event),
    previous,
    now,
    since,
    settings,
    ...(end.failure ? { failure: end.failure } : {}),
  });
  return { status, meta, since };
}

/** The status write, made only when the status changed; what became of it, for the announcements. */
async function storeStatus(
  ports: Ports,
  stored: PostgresCluster,
  execution: Execution,
  status: PostgresClusterStatus | undefined,
): Promise<{ outcome: StatusOutcome; written: boolean; version?: string; errors: unknown[] }> {
  if (status === undefined || isDeepStrictEqual(status, stored.status))
    return { outcome: { kind: 'stored' }, written: false, errors: [] };
  try {
    // Conditional on the version the pass read, moved on only by its own finalizer writes, so a pass
    // decided on an old view conflicts. The patch is computed against the status as stored (not a
    // handed-over one), which that condition guarantees is the one it applies to.
    const answer = await ports.clusters.writeStatus({ ...execution.cluster, status: stored.status }, status);
    const version = answer?.metadata.resourceVersion;
    return { outcome: { kind: 'stored' }, written: true, ...(version !== undefined ? { version } : {}), errors: [] };
  } catch (error) {
    // Refused at admission: the same object will be refused again (announcements.ts says it in Events).
    const outcome: StatusOutcome = classOf(error) === 'rejected' ? { kind: 'refused', error } : { kind: 'failed' };
    return { outcome, written: false, errors: [error] };
  }
}
