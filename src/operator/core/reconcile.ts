/**
 * The reconcile core: one pass for one PostgresCluster.
 *
 * observe through the ports → restore the machine from `status.state` → one tick through the machine →
 * execute its writes in order → project the status → persist it once, only if it changed → emit the
 * events → return the requeue decision. Nothing survives between passes except what is stored, and the
 * announcements of a pass whose status write failed (announcements.ts), held for the next one.
 */
import { isDeepStrictEqual } from 'node:util';
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
import { deadlineAt } from '../../../machines/summary.ts';
import { tickMachine } from '../../../machines/tick.ts';
import type { Condition, PostgresCluster, PostgresClusterStatus } from '../api/schema.ts';
import { assessTick } from '../domain/assessment.ts';
import { type Effect, type KubeEvent, warning } from '../domain/effects.ts';
import type { Settings, TickEvent } from '../domain/observation.ts';
import { remembering } from '../domain/rejections.ts';
import {
  COMPONENTS,
  CONDITION_OF,
  EventReason,
  READY_EVENT_OF,
  Reason,
  WRITE_FAILURE_REASON,
} from '../domain/vocabulary.ts';
import { type Announcements, type Handover, notIn } from './announcements.ts';
import {
  classOf,
  isNamespaceTerminating,
  isNotLeader,
  messageOf,
  refusalTextOf,
  retryAfterOf,
  retryFor,
  worstError,
} from './errors.ts';
import { type Execution, executeEffects, type PendingEvent } from './execute.ts';
import { followedVersions, type ObjectVersion, observedAfter } from './follow.ts';
import { observeCluster } from './observe.ts';
import type { ClusterKey, Ports } from './ports.ts';
import { refusalOf, withAnnouncementsOf } from './refusal.ts';
import { projectStatus, type WriteFailure } from './status.ts';

export type Requeue =
  | { kind: 'none' }
  /** A conflict (409): at once, with a small backoff of its own if it repeats. */
  | { kind: 'immediate' }
  | { kind: 'after'; ms: number }
  /** The request failed on the way (reset, client timeout, 5xx): a short backoff, capped at seconds. */
  | { kind: 'transient'; error: unknown }
  /** The API server refused for load (429): after its `Retry-After` when it sent one, else as transient. */
  | { kind: 'throttled'; retryAfterMs?: number; error: unknown }
  /** Retrying alone will not fix it (forbidden, rejected, unknown): backoff up to minutes. */
  | { kind: 'backoff'; error: unknown };

export interface ReconcileOutcome {
  key: ClusterKey;
  /** False when the PostgresCluster does not exist (any more). */
  found: boolean;
  from?: string;
  to?: string;
  requeue: Requeue;
  /** The error that decided the requeue, if any. */
  error?: unknown;
  statusWritten: boolean;
  /** Writes to the world other than the status. */
  writes: number;
  /** The events sent or, when the pass was given `deliver` (`handedOver`), handed to it to send. */
  events: KubeEvent[];
  /** The events went to `deliver`, which reports what it sent itself. */
  handedOver?: true;
  /** The events the sink could not send even after its own retries; absent when every event was sent. */
  unsent?: UnsentEvent[];
  /**
   * The objects, at the versions its own writes left them, that the pass followed (follow.ts): a later tick
   * of the pass was taken on each, so their watch events tell it nothing new. Absent when there are none.
   */
  followed?: ObjectVersion[];
  /**
   * The version the status write left the cluster at (its answer's resourceVersion), when the pass wrote one:
   * the watch event of that version shows the status this pass decided on, and wakes nothing (driver/echoes.ts).
   */
  statusVersion?: string;
}

export interface UnsentEvent {
  event: KubeEvent;
  /** Why the last attempt failed. */
  error: unknown;
}

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

export const requeueAfterError = (error: unknown, settings: Settings): Requeue => {
  switch (retryFor(classOf(error))) {
    case 'conflict':
      return { kind: 'immediate' };
    case 'transient':
      return { kind: 'transient', error };
    case 'throttled': {
      const retryAfterMs = retryAfterOf(error);
      return { kind: 'throttled', ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), error };
    }
    case 'afterDelay':
      // The state's own requeue, never escalated: nothing will change sooner.
      return { kind: 'after', ms: settings.requeueDelayMs };
    case 'persistent':
      return { kind: 'backoff', error };
  }
};

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

/** One tick of the machine: the state it reaches and the effects its actions ask for (machines/tick.ts). */
const tick = (snapshot: Snapshot, event: TickEvent) => tickMachine(snapshot, event);

/**
 * One Normal event for each component condition that turned True from `previous` to `next` — and, when
 * `next` is not what the pass stores, is True in what it stores (`stored`). A pooler switched off is True
 * too (nothing to wait for), but announcing "PoolerReady" for poolers just deleted would mislead.
 */
function readinessEvents(
  previous: Condition[] | undefined,
  next: Condition[] | undefined,
  stored?: Condition[],
): KubeEvent[] {
  return COMPONENTS.flatMap((c) => {
    const type = CONDITION_OF[c];
    const after = next?.find((x) => x.type === type);
    const before = previous?.find((x) => x.type === type);
    if (after?.status !== 'True' || before?.status === 'True' || after.reason === Reason.PoolerDisabled) return [];
    if (stored && stored.find((x) => x.type === type)?.status !== 'True') return [];
    return [{ type: 'Normal', reason: READY_EVENT_OF[c], action: `Become${type}`, message: after.message }];
  });
}

/** A failed write earns one Warning, not one per retry: only when the stored status did not say so yet. */
function failureEvent(failure: WriteFailure, previous: PostgresClusterStatus | undefined): KubeEvent[] {
  const type = failure.component ? CONDITION_OF[failure.component] : 'Ready';
  const stored = previous?.conditions?.find((c) => c.type === type);
  if (stored?.reason === failure.reason && stored.message === failure.message) return [];
  return [warning(failure.reason, 'Write', failure.message)];
}

/**
 * How many ticks one pass takes at most, following its own writes. The longest chain in the chart has
 * four: a class appearing for a cluster stored as Failed.ClassMissing without its finalizer leaves the
 * failure, adds the finalizer, creates the Secret and applies the CNPG Cluster (test/contract/follow-writes.test.ts).
 * A pass cut short while it could still follow is run again at once: the rest of its chain may write
 * nothing that would wake it.
 */
const MAX_STEPS = 4;

/** One tick of a pass and the writes it made. */
interface Step {
  /** The tick's event, with the observation it was taken on (amended by a refusal it met). */
  event: TickEvent;
  taken: Snapshot;
  execution: Execution;
  /** A write carrying the spec was refused at admission, and the tick taken again knowing it. */
  rejected: boolean;
  /** The state reached, encoded as `status.state` stores it. */
  state: string;
  /** The tick left the state it started from. */
  moved: boolean;
}

/** One tick from `snapshot` and its writes, made on `cluster` (the PostgresCluster as the tick sees it). */
async function step(ports: Ports, snapshot: Snapshot, event: TickEvent, cluster: PostgresCluster): Promise<Step> {
  let { taken, effects } = tick(snapshot, event);
  // Only what the shell itself cannot see: whether the observed spec switches the pooler off.
  const assessment = assessTick(event);
  const world = { poolerSwitchedOff: assessment.merge.ok && !assessment.config?.pooler };
  let execution = await executeEffects(ports, cluster, effects, world);
  const refusal = refusalOf(execution.failure);
  if (refusal) {
    // The API server refused the spec itself, which no retry changes: this tick is taken again knowing
    // it, as every later one will from the status, so the component fails now (one Warning, on entry to
    // its failure state) instead of retrying. The writes it decides again are not made: they were
    // decided on the world before this tick's writes. Only its announcements count.
    event = { ...event, observation: remembering(event.observation, refusal) };
    ({ taken, effects } = tick(snapshot, event));
    execution = withAnnouncementsOf(execution, effects);
  }
  const state = encodeState(taken.value);
  return {
    event,
    taken,
    execution,
    rejected: refusal !== undefined,
    state,
    moved: state !== encodeState(snapshot.value),
  };
}

/**
 * Whether the pass may tick again after `last`: all its writes went through, the machine is not done, and
 * it either wrote (their answers may say more) or moved without writing. A tick takes one transition: one
 * that only leaves a state (a failure left for Pending once the class appears) has the state reached still
 * to decide on the same observation, and no write of its own would wake a next pass to do it — it waited
 * for the requeue delay (seen in the sandbox: 15 s in Pending). A step that neither wrote nor moved is settled.
 */
const mayFollow = ({ taken, execution, rejected, moved }: Step) =>
  !rejected &&
  execution.failure === undefined &&
  execution.refused === undefined &&
  (execution.writes > 0 || moved) &&
  taken.status !== 'done';

/** The steps' executions as one: every write and event in order, the failure and version of the last. */
function mergedExecution(steps: readonly Step[]): Execution {
  if (steps.length === 1) return (steps[0] as Step).execution;
  const last = (steps[steps.length - 1] as Step).execution;
  return {
    ...last,
    events: steps.flatMap((s) => s.execution.events),
    answers: steps.flatMap((s) => s.execution.answers),
    writes: steps.reduce((sum, s) => sum + s.execution.writes, 0),
  };
}

/** What one step of a pass says: the events of its writes and transitions, then the readiness it confirms. */
interface Said {
  events: PendingEvent[];
  readiness: KubeEvent[];
}

/**
 * Each step's events and readiness, in order. The last step's readiness is judged on the status the pass
 * stores (`status`, in state `meta`); an earlier step's on the status it would have stored as a pass of
 * its own, projected from its state and observation, kept only where the stored status confirms it.
 */
function saidBySteps(
  steps: readonly Step[],
  final: {
    previous: PostgresClusterStatus | undefined;
    status: PostgresClusterStatus | undefined;
    meta: ReturnType<typeof metaOf>;
    now: number;
    settings: Settings;
  },
): Said[] {
  const { previous, status, now, settings } = final;
  let before = previous;
  return steps.map((s, i) => {
    const last = i === steps.length - 1;
    const meta = last ? final.meta : metaOf(s.taken);
    const after = last
      ? status
      : projectStatus({
          state: s.state,
          meta,
          assessment: assessTick(s.event),
          previous: before,
          now,
          since: now,
          settings,
        });
    const readiness =
      meta.conditions !== 'pipeline'
        ? []
        : last
          ? readinessEvents(before?.conditions, after?.conditions)
          : readinessEvents(before?.conditions, after?.conditions, status?.conditions ?? []);
    before = after;
    return { events: s.execution.events, readiness };
  });
}

/**
 * Sends `events` in order. The sink has retried each already: one it could not send must not fail the
 * pass nor repeat its writes, so it is reported as not sent (the driver logs it), not as an event.
 */
async function send(ports: Ports, regarding: PostgresCluster, events: KubeEvent[], inOrder = false) {
  const sent: KubeEvent[] = [];
  const unsent: UnsentEvent[] = [];
  for (const event of events) {
    // In order: nothing overtakes an Event that failed (it and the rest are tried again together).
    if (inOrder && unsent.length > 0) {
      unsent.push({ event, error: unsent[0]?.error });
      continue;
    }
    try {
      await ports.events.emit(regarding, event);
      sent.push(event);
    } catch (error) {
      unsent.push({ event, error });
    }
  }
  return { sent, unsent };
}

export async function reconcile(
  key: ClusterKey,
  { ports, settings, announcements, deliver, followWrites = false }: ReconcileOptions,
): Promise<ReconcileOutcome> {
  const outcome = (o: Partial<ReconcileOutcome> & Pick<ReconcileOutcome, 'requeue'>): ReconcileOutcome => ({
    key,
    found: true,
    statusWritten: false,
    writes: 0,
    events: [],
    ...o,
  });
  let cluster: PostgresCluster | undefined;
  let observation: Awaited<ReturnType<typeof observeCluster>>;
  /** The object as stored: the status write is decided against it, and a failed one held with it. */
  let stored: PostgresCluster;
  let handover: Handover | undefined;
  try {
    cluster = await ports.clusters.get(key);
    if (!cluster) {
      const leftover = announcements?.gone(key);
      // An Event may outlive what it is about, and the last pass of a deletion (the finalizer removed) has
      // no next pass of the object to leave unsent ones to: they are tried again, by passes of its key after
      // the queue's backoff, a few times (announcements.ts, GONE_EVENT_TRIES), then dropped (logged as not
      // sent by the pass that failed them first). One refusal must not lose a deletion's CleanupComplete.
      if (!leftover) return outcome({ found: false, requeue: { kind: 'none' } });
      const { sent, unsent } = await send(ports, leftover.regarding, leftover.events, true);
      const failed = unsent.map((u) => u.event);
      // Refused as not leading: no try is spent, and this replica's next term enqueues the key (driver/operator.ts).
      // Nor is one that sent some of them: only passes that made no progress count towards the limit.
      const notLeading = unsent.some((u) => isNotLeader(u.error));
      const counted = !notLeading && sent.length === 0;
      const again = announcements?.keepUnsentOfGone(leftover, failed, counted) ?? false;
      return outcome({
        found: false,
        requeue: again && !notLeading ? { kind: 'transient', error: unsent[0]?.error } : { kind: 'none' },
        events: sent,
        ...(unsent.length > 0 ? { unsent } : {}),
      });
    }
    stored = cluster;
    // The pass before this one computed a status from this same stored status but could not store it:
    // this pass goes on from that status, as it would have had the write succeeded (announcements.ts).
    // One that does not fit the object any more is not taken over; its announcements still are.
    handover = announcements?.pending(cluster);
    const status = handover?.status;
    if (handover && !storedStateMisfit(status?.state, { ...cluster, status })) cluster = { ...cluster, status };
    observation = await observeCluster(ports, cluster);
  } catch (error) {
    return outcome({ requeue: requeueAfterError(error, settings), error });
  }

  const now = ports.clock.now();
  const previous = cluster.status;
  const from = previous?.state;
  let event: TickEvent = { type: 'tick', now, observation, settings };
  // The world decides, the stored state is only a hint: one that does not fit the world (written by
  // hand, garbage, Deleting without a deletion timestamp) is replaced by the state the world implies,
  // with one Warning naming it, and the pass goes on from there as from a stored state.
  const misfit = storedStateMisfit(from, cluster);
  const discarded = misfit
    ? warning(
        EventReason.StoredStateDiscarded,
        'Discard',
        `status.state ${JSON.stringify(from ?? null)} discarded: ${misfit}; the state is recomputed from the world`,
      )
    : undefined;
  const snapshot = misfit ? impliedState(event) : (restoreState(from) ?? initialState());
  let last = await step(ports, snapshot, event, cluster);
  const steps = [last];
  // A pass follows its own writes where their answers say what the world now holds (follow.ts): the
  // tick is taken again from the state reached, on the observation those answers amend, as the next
  // pass would take it — without that pass's reads, status write and wait in the queue.
  let cutShort = false;
  const followed: ObjectVersion[] = [];
  while (followWrites && mayFollow(last)) {
    // Nothing written, nothing changed: the observation the step was taken on still stands.
    const observed =
      last.execution.writes === 0
        ? last.event.observation
        : observedAfter(last.event.observation, last.execution.cluster, last.execution.answers);
    // The state reached, restored as the next pass restores it from the status: the same tick.
    const reached = observed && restoreState(last.state);
    if (!observed || !reached) break;
    if (steps.length === MAX_STEPS) {
      cutShort = true;
      break;
    }
    // The answers the next tick goes on from (none after a step that wrote nothing).
    followed.push(...followedVersions(last.execution.cluster, last.execution.answers));
    last = await step(ports, reached, { ...last.event, observation: observed }, observed.cluster);
    steps.push(last);
  }
  ({ event } = last);
  const { taken } = last;
  let execution = mergedExecution(steps);
  // A namespace being deleted refuses new objects, and its deletion takes this PostgresCluster too: no
  // failure to report (no Warning, no failure condition) nor to retry sooner than the state's own requeue.
  if (isNamespaceTerminating(execution.failure?.error)) execution = { ...execution, failure: undefined };
  // This replica lost the lease mid-pass: whatever it would still write or say is the next leader's to do
  // (it enqueues every cluster when it starts), so the pass ends here, with nothing to retry. Only the
  // reports of the writes it made before stand, and no other replica can know them: they wait in the
  // outbox for this replica's next term, should nobody else lead in between (driver/operator.ts).
  if (isNotLeader(execution.failure?.error)) {
    const made = execution.events.filter((e) => !e.announcement).map((e) => e.event);
    if (made.length > 0) announcements?.keepUnsent(stored, made);
    return outcome({ ...(from !== undefined ? { from, to: from } : {}), requeue: { kind: 'none' } });
  }
  // The final state is reached by removing the finalizer. If that failed, the object is still there and
  // the pass ends in the step that failed, whose status records the failure (and so warns only once).
  const unfinished = execution.failure !== undefined || execution.refused !== undefined;
  const next = taken.status === 'done' && unfinished ? (restoreState(FINALIZER_STEP) ?? taken) : taken;
  const to = encodeState(next.value);
  const errors: unknown[] = execution.failure ? [execution.failure.error] : [];
  // The machine's Deleting states are where cleanup happens (they are entered on the deletion timestamp).
  const deleting = isDeletingState(to);
  // A conflict says only that the pass decided on a view the world has moved past (a write conditional on a
  // version that changed, a child created since the cache saw it absent): nothing a person must hear of, no
  // failure to record; the pass runs again at once (its own backoff) on the newer view.
  const stale = classOf(execution.failure?.error) === 'conflict';
  const failure =
    execution.failure && !stale
      ? describeFailure(execution.failure.effect, execution.failure.error, deleting)
      : undefined;

  let statusWritten = false;
  let statusVersion: string | undefined;
  let statusFailed = false;
  /** The API server's refusal of the status at admission: the same object will be refused again. */
  let statusRefusal: unknown;
  let status = previous;
  const meta = metaOf(next);
  const since = !misfit && to === from && previous?.stateSince ? Date.parse(previous.stateSince) : now;
  // The final state is reached by removing the finalizer: the object is on its way out, no status.
  if (next.status !== 'done') {
    status = projectStatus({
      state: to,
      meta,
      // The assessment the machine's guards already made of this tick's observation (memoised).
      assessment: assessTick(event),
      previous,
      now,
      since,
      settings,
      ...(failure ? { failure } : {}),
    });
    if (!isDeepStrictEqual(status, stored.status)) {
      try {
        // Conditional on the version the pass read, moved on only by its own finalizer writes, so a pass
        // decided on an old view conflicts. The patch is computed against the status as stored (not a
        // handed-over one), which that condition guarantees is the one it applies to.
        const written = await ports.clusters.writeStatus({ ...execution.cluster, status: stored.status }, status);
        statusWritten = true;
        statusVersion = written?.metadata.resourceVersion;
      } catch (error) {
        errors.push(error);
        statusFailed = true;
        if (classOf(error) === 'rejected') statusRefusal = error;
      }
    }
  }

  // The pass's one-time announcements: what the status it stores keeps the next pass from saying again.
  // Readiness is announced as the pipeline confirms it, not while only observing (Pending, Suspended,
  // Deleting); a pass that followed its writes says it step by step, as the passes it stands for would.
  const said = saidBySteps(steps, { previous, status, meta, now, settings });
  const failed = failure ? failureEvent(failure, previous) : [];
  const announced = [
    ...(discarded ? [discarded] : []),
    ...said.flatMap(({ events, readiness }) => [
      ...events.filter((e) => e.announcement).map((e) => e.event),
      ...readiness,
    ]),
    ...failed,
  ];
  // What the pass before could not announce, as far as this pass does not say it itself.
  const earlier = notIn(handover?.events ?? [], announced);
  /** Everything the pass has to say once its status is stored (or can never be). */
  const told = () => [
    ...earlier,
    ...(discarded ? [discarded] : []),
    ...said.flatMap(({ events, readiness }) => [...events.map((e) => e.event), ...readiness]),
    ...failed,
  ];
  /** The reports of the writes made: they stand whatever becomes of the status (those writes are not made again). */
  const reports = execution.events.filter((e) => !e.announcement).map((e) => e.event);
  let events: KubeEvent[];
  if (statusRefusal !== undefined) {
    // An object stored before a rule of its CRD (or with validation off) can be refused every write, its
    // status included: no later pass will store what this one says, so holding it would lose it. What the
    // status cannot say is said in Events instead, with the API server's words, once per version of the
    // object (the process remembers; a change of the object is a new version, judged again).
    const saidBefore = announcements?.alreadyRefused(stored) ?? false;
    announcements?.statusRefused(stored);
    const refused = warning(
      EventReason.StatusRejected,
      'WriteStatus',
      'The API server refuses every write to this PostgresCluster, its status included, so the status cannot ' +
        `report what is wrong; fix or re-create the object: ${refusalTextOf(statusRefusal)}`,
    );
    events = saidBefore ? reports : [...told(), refused];
  } else if (statusFailed) {
    // Not stored, so not to be announced yet: held, with the status, for the next pass, which starts from
    // the same stored status but may not take this transition again (this pass may have changed the
    // world). The reports of the writes made stand: those writes are not made again.
    announcements?.hold(stored, status, [...earlier, ...announced]);
    events = reports;
  } else {
    announcements?.forget(key);
    events = told();
  }
  // Events an earlier pass decided and stored, but the sink could not send even after its retries: they
  // are sent first, in order, unless this pass says the same itself. Whatever cannot be sent now waits
  // for the next pass (in this process's memory), whether or not this pass stores its status.
  const outbox = announcements?.takeUnsent(stored) ?? [];
  const toSend = [...notIn(outbox, events), ...events];
  let sent = toSend;
  let unsent: UnsentEvent[] = [];
  if (deliver) deliver(cluster, toSend);
  else ({ sent, unsent } = await send(ports, cluster, toSend));

  if (unsent.length > 0)
    announcements?.keepUnsent(
      stored,
      unsent.map((u) => u.event),
    );

  const error = worstError(errors);
  let requeue: Requeue;
  // A refused status is refused again until the object changes, and its watch reports any change.
  if (statusRefusal !== undefined && errors.length === 1) requeue = { kind: 'none' };
  else if (error !== undefined) requeue = requeueAfterError(error, settings);
  // Events the sink could not send wait for the next pass: soon, as after a transient failure.
  else if (unsent.length > 0 && announcements) requeue = { kind: 'transient', error: unsent[0]?.error };
  else if (cutShort) requeue = { kind: 'after', ms: 0 };
  else if (meta.requeue === 'none') requeue = { kind: 'none' };
  else {
    // Look again after the delay, or when the progress deadline passes if that comes first.
    const deadline = deadlineAt({ meta, since, settings });
    const wait =
      deadline !== undefined && now <= deadline
        ? Math.min(settings.requeueDelayMs, Math.max(deadline - now + 1000, 1000))
        : settings.requeueDelayMs;
    requeue = { kind: 'after', ms: wait };
  }
  return outcome({
    ...(from !== undefined ? { from } : {}),
    to,
    requeue,
    ...(error !== undefined ? { error } : {}),
    statusWritten,
    writes: execution.writes,
    events: sent,
    ...(deliver ? { handedOver: true as const } : {}),
    ...(unsent.length > 0 ? { unsent } : {}),
    ...(followed.length > 0 ? { followed } : {}),
    ...(statusVersion !== undefined ? { statusVersion } : {}),
  });
}
