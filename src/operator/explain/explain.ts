/**
 * `explain`: why a PostgresCluster or a PostgresDatabase is where it is, computed from the same
 * observation, machine and checks the operator uses. Pure: the caller brings the observation, the events
 * and the time. `explainResource` is written once over the machine (machines.ts); each resource brings only
 * its own world: its observed facts, what its guards mean in words, and its hints.
 */
import type { StateMeta } from '../../../machines/meta.ts';
import { deadlineAt, deadlineExceeded, summaryOf } from '../../../machines/summary.ts';
import type { Condition } from '../api/schema.ts';
import { toSeconds } from '../core/status.ts';
import { assess } from '../domain/assessment.ts';
import { assessDatabase } from '../domain/database/assessment.ts';
import type { DatabaseObservation, DatabaseTick } from '../domain/database/observation.ts';
import type { Observation, Settings, TickEvent } from '../domain/observation.ts';
import type { Verdict } from '../domain/verdict.ts';
import { type BlockerWords, blockerOf, clusterWords, findBlocker } from './blocker.ts';
import { databaseFacts } from './database-facts.ts';
import { databaseHints, databaseWords } from './database-hints.ts';
import { observedFacts } from './facts.ts';
import { hintsOf } from './hints.ts';
import { describeTransition, type Replay, replay, stepOf } from './machine.ts';
import { CLUSTER_MACHINE, DATABASE_MACHINE, type ExplainedMachine } from './machines.ts';
import { ageSeconds } from './time.ts';
import type {
  Blocker,
  DatabaseExplanation,
  DeadlineView,
  ExplainEvent,
  Explanation,
  ExplanationBody,
  ResourceView,
  StateView,
  TickView,
} from './types.ts';

/** What both explanations are given besides the observation. */
interface Given {
  settings: Settings;
  /** Milliseconds since the epoch: the explanation's only clock. */
  now: number;
  /** Newest first, as the event reader lists them. */
  events?: ExplainEvent[];
  /** Why the events could not be read, if they could not. */
  eventsError?: string;
}

export interface ExplainInput extends Given {
  observation: Observation;
}

export interface DatabaseExplainInput extends Given {
  observation: DatabaseObservation;
}

function stateView(
  machine: ExplainedMachine<never, unknown>,
  r: Replay<unknown>,
  meta: StateMeta<string>,
  stored: string | undefined,
  since: string | undefined,
  now: number,
) {
  // A stored state this version does not know restarts the machine: its time no longer applies.
  const sinceIso = r.restored ? (since ?? null) : null;
  const view: StateView = {
    stored: stored ?? null,
    state: r.currentPath,
    path: r.currentPath.split('.'),
    phase: meta.phase,
    description: meta.description,
    step: stepOf(machine, r.currentPath),
    since: sinceIso,
    ageSeconds: ageSeconds(sinceIso, now),
  };
  return view;
}

function deadlineView(meta: StateMeta<string>, since: string | null, settings: Settings, now: number): DeadlineView {
  const start = since ? Date.parse(since) : Number.NaN;
  const at = Number.isNaN(start) ? undefined : deadlineAt({ meta, since: start, settings });
  return {
    applies: meta.deadline,
    progressDeadlineSeconds: Math.round(settings.progressDeadlineMs / 1000),
    at: at !== undefined ? toSeconds(at) : null,
    leftSeconds: at !== undefined ? Math.floor((at - now) / 1000) : null,
    // The same rule the status projection applies, so explain and Stalled never disagree.
    exceeded: at !== undefined && deadlineExceeded({ meta, now, since: start, settings }),
  };
}

const tickView = <F>(machine: ExplainedMachine<never, F>, r: Replay<F>): TickView => ({
  next: r.nextPath,
  moves: r.nextPath !== r.currentPath,
  via: describeTransition(r.via),
  writes: r.effects.map((e) => machine.describeEffect(e)),
  guards: r.guards.map(({ on, guard, holds, target }) => ({ on, guard, holds, target })),
});

const conditionViews = (conditions: Condition[] | undefined, now: number) =>
  (conditions ?? []).map((c) => ({
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastTransitionTime: c.lastTransitionTime,
    ageSeconds: ageSeconds(c.lastTransitionTime, now),
  }));

/** The resource as both machines' resources carry it. */
interface Stored {
  metadata: { namespace: string; name: string; uid?: string; generation?: number; deletionTimestamp?: string };
  status?: { state?: string; stateSince?: string; observedGeneration?: number; conditions?: Condition[] };
}

/** What the hints of a resource are computed from, besides its own world. */
export interface HintContext<C extends string> {
  namespace: string;
  state: StateView;
  blocker: Blocker<C> | null;
  deadline: DeadlineView;
  generation: number | null;
  observedGeneration: number | null;
}

/** A resource's own part: its facts, the words for its guards, its hints. */
interface Subject<E, F, O, C extends string> extends Given {
  machine: ExplainedMachine<E, F>;
  resource: Stored;
  event: E;
  observed: O;
  health: Readonly<Partial<Record<C, Verdict<string>>>>;
  words: BlockerWords<C>;
  hints: (context: HintContext<C>) => string[];
}

/** The explanation of any resource whose lifecycle a machine runs: the resource's view, then the body. */
function explainResource<E, F, O, C extends string>(
  subject: Subject<E, F, O, C>,
): { resource: ResourceView; body: ExplanationBody<O, C> } {
  const { machine, resource, event, settings, now } = subject;
  const { metadata, status } = resource;
  const r = replay(machine, status?.state, event);
  const meta = machine.metaOf(r.current);
  const nextMeta = machine.metaOf(r.next);
  const state = stateView(machine, r, meta, status?.state, status?.stateSince, now);
  const found = findBlocker(machine, r, nextMeta, event);
  const blocker = found ? blockerOf<C>(machine, found, nextMeta, subject.health, subject.words) : null;
  const deadline = deadlineView(meta, state.since, settings, now);
  const stalled = status?.conditions?.find((c) => c.type === 'Stalled');
  const generation = metadata.generation ?? null;
  const observedGeneration = status?.observedGeneration ?? null;
  const namespace = metadata.namespace;
  return {
    resource: {
      namespace,
      name: metadata.name,
      uid: metadata.uid ?? null,
      generation,
      observedGeneration,
      deleting: Boolean(metadata.deletionTimestamp),
    },
    body: {
      now: toSeconds(now),
      state,
      tick: tickView(machine, r),
      blocker,
      whenClear: found?.whenClear ?? null,
      deadline,
      stalled: {
        computed: summaryOf(meta, deadline.exceeded).stalled,
        condition: stalled?.status ?? null,
        reason: stalled?.reason ?? null,
      },
      hints: [
        ...(status?.state && !r.restored
          ? [`status.state ${status.state} is not a state of this pgfsm: the operator starts the machine afresh`]
          : []),
        ...subject.hints({ namespace, state, blocker, deadline, generation, observedGeneration }),
      ],
      observed: subject.observed,
      conditions: conditionViews(status?.conditions, now),
      // Spelled out so the JSON keys keep one order whoever built the events.
      events: (subject.events ?? []).map((e) => ({
        type: e.type,
        reason: e.reason,
        message: e.message,
        count: e.count,
        lastSeen: e.lastSeen,
        reportingController: e.reportingController,
        ageSeconds: ageSeconds(e.lastSeen, now),
      })),
      eventsError: subject.eventsError ?? null,
    },
  };
}

/** A PostgresCluster explained. */
export function explain(input: ExplainInput): Explanation {
  const { observation, settings } = input;
  const event: TickEvent = { type: 'tick', now: input.now, observation, settings };
  const assessment = assess(observation, settings, input.now);
  const facts = observedFacts(observation, assessment, settings);
  const { resource, body } = explainResource({
    ...input,
    machine: CLUSTER_MACHINE,
    resource: observation.cluster,
    event,
    observed: facts,
    health: assessment.health,
    words: clusterWords(facts, assessment),
    hints: (context) => hintsOf({ ...context, facts, assessment }),
  });
  return { cluster: resource, ...body };
}

/** A PostgresDatabase explained. */
export function explainDatabase(input: DatabaseExplainInput): DatabaseExplanation {
  const { observation, settings } = input;
  const event: DatabaseTick = { type: 'tick', now: input.now, observation, settings };
  const assessment = assessDatabase(event);
  const facts = databaseFacts(observation, assessment);
  const { resource, body } = explainResource({
    ...input,
    machine: DATABASE_MACHINE,
    resource: observation.database,
    event,
    observed: facts,
    health: assessment.health,
    words: databaseWords(facts, assessment),
    hints: (context) => databaseHints({ ...context, observation, facts, assessment }),
  });
  return { database: resource, ...body };
}
