/**
 * The ticks of one pass: one tick of the machine and its writes, then — when the pass follows its own
 * writes — another tick on what their answers say the world now holds, as the next pass would take it,
 * without that pass's reads, status write and wait in the queue (follow.ts).
 */
import { encodeState, restoreState, type Snapshot } from '../../../machines/state-path.ts';
import { tickMachine } from '../../../machines/tick.ts';
import type { PostgresCluster } from '../api/schema.ts';
import { assessTick } from '../domain/assessment.ts';
import type { TickEvent } from '../domain/observation.ts';
import { remembering } from '../domain/rejections.ts';
import { type Execution, executeEffects } from './execute.ts';
import { followedVersions, type ObjectVersion, observedAfter } from './follow.ts';
import type { Ports } from './ports.ts';
import { refusalOf, withAnnouncementsOf } from './refusal.ts';

/**
 * How many ticks one pass takes at most, following its own writes. The longest chain in the chart has
 * four: a class appearing for a cluster stored as Failed.ClassMissing without its finalizer leaves the
 * failure, adds the finalizer, creates the Secret and applies the CNPG Cluster (test/contract/follow-writes.test.ts).
 * A pass cut short while it could still follow is run again at once: the rest of its chain may write
 * nothing that would wake it.
 */
export const MAX_STEPS = 4;

/** One tick of a pass and the writes it made. */
export interface Step {
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

/** The ticks a pass took, and what following its writes left behind. */
export interface Steps {
  steps: Step[];
  last: Step;
  /** The objects, at the versions its own writes left them, that a later tick was taken on. */
  followed: ObjectVersion[];
  /** The pass stopped at MAX_STEPS while it could still have followed. */
  cutShort: boolean;
}

/** One tick from `snapshot` and its writes, made on `cluster` (the PostgresCluster as the tick sees it). */
async function step(ports: Ports, snapshot: Snapshot, event: TickEvent, cluster: PostgresCluster): Promise<Step> {
  let { taken, effects } = tickMachine(snapshot, event);
  // Only what the shell itself cannot see: whether the observed spec switches the pooler or the backups off.
  const assessment = assessTick(event);
  const world = {
    poolerSwitchedOff: assessment.merge.ok && !assessment.config?.pooler,
    backupsSwitchedOff: assessment.merge.ok && !assessment.config?.backup,
  };
  let execution = await executeEffects(ports, cluster, effects, world);
  const refusal = refusalOf(execution.failure);
  if (refusal) {
    // The API server refused the spec itself, which no retry changes: this tick is taken again knowing
    // it, as every later one will from the status, so the component fails now (one Warning, on entry to
    // its failure state) instead of retrying. The writes it decides again are not made: they were
    // decided on the world before this tick's writes. Only its announcements count.
    event = { ...event, observation: remembering(event.observation, refusal) };
    ({ taken, effects } = tickMachine(snapshot, event));
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

/**
 * The pass's ticks from `snapshot`: one, or — `followWrites` — as many as its writes' answers let it take,
 * each from the state the one before reached, restored as the next pass would restore it from the status.
 */
export async function takeSteps(
  ports: Ports,
  snapshot: Snapshot,
  event: TickEvent,
  cluster: PostgresCluster,
  followWrites: boolean,
): Promise<Steps> {
  let last = await step(ports, snapshot, event, cluster);
  const steps = [last];
  const followed: ObjectVersion[] = [];
  while (followWrites && mayFollow(last)) {
    // Nothing written, nothing changed: the observation the step was taken on still stands.
    const observed =
      last.execution.writes === 0
        ? last.event.observation
        : observedAfter(last.event.observation, last.execution.cluster, last.execution.answers);
    const reached = observed && restoreState(last.state);
    if (!observed || !reached) break;
    if (steps.length === MAX_STEPS) return { steps, last, followed, cutShort: true };
    // The answers the next tick goes on from (none after a step that wrote nothing).
    followed.push(...followedVersions(last.execution.cluster, last.execution.answers));
    last = await step(ports, reached, { ...last.event, observation: observed }, observed.cluster);
    steps.push(last);
  }
  return { steps, last, followed, cutShort: false };
}

/** The steps' executions as one: every write and event in order, the failure and version of the last. */
export function mergedExecution(steps: readonly Step[]): Execution {
  if (steps.length === 1) return (steps[0] as Step).execution;
  const last = (steps[steps.length - 1] as Step).execution;
  return {
    ...last,
    events: steps.flatMap((s) => s.execution.events),
    answers: steps.flatMap((s) => s.execution.answers),
    writes: steps.reduce((sum, s) => sum + s.execution.writes, 0),
  };
}
