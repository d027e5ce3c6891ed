/**
 * `explain`: why a PostgresCluster is where it is, computed from the same observation, machine and
 * health checks the operator uses. Pure: the caller brings the observation, the events and the time.
 */
import type { StateMeta } from '../../../machines/meta.ts';
import { metaOf } from '../../../machines/state-path.ts';
import { deadlineAt, deadlineExceeded, summaryOf } from '../../../machines/summary.ts';
import type { Condition } from '../api/schema.ts';
import { toSeconds } from '../core/status.ts';
import { assess } from '../domain/assessment.ts';
import type { Effect } from '../domain/effects.ts';
import type { Observation, Settings, TickEvent } from '../domain/observation.ts';
import { blockerOf, findBlocker } from './blocker.ts';
import { observedFacts } from './facts.ts';
import { hintsOf } from './hints.ts';
import { describeTransition, type Replay, replay, stepOf } from './machine.ts';
import { ageSeconds } from './time.ts';
import type { DeadlineView, ExplainEvent, Explanation, StateView, TickView } from './types.ts';

export interface ExplainInput {
  observation: Observation;
  settings: Settings;
  /** Milliseconds since the epoch: the explanation's only clock. */
  now: number;
  /** Newest first, as the event reader lists them. */
  events?: ExplainEvent[];
  /** Why the events could not be read, if they could not. */
  eventsError?: string;
}

function stateView(r: Replay, meta: StateMeta, stored: string | undefined, since: string | undefined, now: number) {
  // A stored state this version does not know restarts the machine: its time no longer applies.
  const sinceIso = r.restored ? (since ?? null) : null;
  const view: StateView = {
    stored: stored ?? null,
    state: r.currentPath,
    path: r.currentPath.split('.'),
    phase: meta.phase,
    description: meta.description,
    step: stepOf(r.currentPath),
    since: sinceIso,
    ageSeconds: ageSeconds(sinceIso, now),
  };
  return view;
}

function deadlineView(meta: StateMeta, since: string | null, settings: Settings, now: number): DeadlineView {
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

/** A write as a line: kinds and names only (a Secret's template carries no value, and none is printed). */
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

const tickView = (r: Replay): TickView => ({
  next: r.nextPath,
  moves: r.nextPath !== r.currentPath,
  via: describeTransition(r.via),
  writes: r.effects.map(describeEffect),
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

export function explain(input: ExplainInput): Explanation {
  const { observation, settings, now } = input;
  const { metadata, status } = observation.cluster;
  const event: TickEvent = { type: 'tick', now, observation, settings };
  const r = replay(status?.state, event);
  const assessment = assess(observation, settings);
  const meta = metaOf(r.current);
  const facts = observedFacts(observation, assessment, settings);
  const state = stateView(r, meta, status?.state, status?.stateSince, now);
  const found = findBlocker(r, metaOf(r.next), event);
  const blocker = found ? blockerOf(found, metaOf(r.next), facts, assessment) : null;
  const deadline = deadlineView(meta, state.since, settings, now);
  const stalled = status?.conditions?.find((c) => c.type === 'Stalled');
  const generation = metadata.generation ?? null;
  const observedGeneration = status?.observedGeneration ?? null;
  return {
    cluster: {
      namespace: metadata.namespace,
      name: metadata.name,
      uid: metadata.uid ?? null,
      generation,
      observedGeneration,
      deleting: Boolean(metadata.deletionTimestamp),
    },
    now: toSeconds(now),
    state,
    tick: tickView(r),
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
      ...hintsOf({
        namespace: metadata.namespace,
        state,
        blocker,
        facts,
        assessment,
        deadline,
        generation,
        observedGeneration,
      }),
    ],
    observed: facts,
    conditions: conditionViews(status?.conditions, now),
    // Spelled out so the JSON keys keep one order whoever built the events.
    events: (input.events ?? []).map((e) => ({
      type: e.type,
      reason: e.reason,
      message: e.message,
      count: e.count,
      lastSeen: e.lastSeen,
      reportingController: e.reportingController,
      ageSeconds: ageSeconds(e.lastSeen, now),
    })),
    eventsError: input.eventsError ?? null,
  };
}
