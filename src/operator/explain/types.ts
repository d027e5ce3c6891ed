/**
 * The shape of `pgfsm explain`: one plain document that the text and JSON renderings share. Every key
 * is always present (absent values are `null`), so scripts reading `--output json` see a stable shape
 * whatever state the cluster is in. Times are ISO strings; durations are whole seconds.
 */
import type { Phase } from '../api/schema.ts';
import type { Component } from '../domain/vocabulary.ts';

/** One events.k8s.io Event about the PostgresCluster, as the event reader returns it. */
export interface ExplainEvent {
  type: string;
  reason: string;
  /** The Event's `note`. */
  message: string;
  /** `series.count`, 1 for a single occurrence. */
  count: number;
  /** ISO time of the last occurrence (`series.lastObservedTime`, else `eventTime`). */
  lastSeen: string | null;
  reportingController: string | null;
}

export interface StepPosition {
  /** 1-based position among the children of `sequence`. */
  index: number;
  of: number;
  /** The compound state whose children run in order, e.g. `Provisioning`. */
  sequence: string;
}

export interface StateView {
  /** `status.state` as stored; null before the operator wrote a status. */
  stored: string | null;
  /** The state the explanation starts from: the stored one, or the machine's initial state. */
  state: string;
  path: string[];
  phase: Phase;
  description: string;
  step: StepPosition | null;
  since: string | null;
  ageSeconds: number | null;
}

export interface GuardCheck {
  on: 'tick' | 'always';
  /** Printable guard, e.g. `componentReady(cluster)`; null for an unguarded transition. */
  guard: string | null;
  holds: boolean;
  /** Target state path; null for a targetless transition (the state stays). */
  target: string | null;
}

export interface TickView {
  /** Where one tick on the live observation leaves the machine. */
  next: string;
  moves: boolean;
  /** The tick transition taken from the current state, e.g. `stays while [cnpgBusy]`. */
  via: string;
  /** The writes that tick would make, e.g. `apply Pooler team-a/orders-pooler-rw` (names only). */
  writes: string[];
  /** Every guard checked at `next`, in the order XState tries them, up to the first that fires. */
  guards: GuardCheck[];
}

export interface Blocker {
  guard: string;
  /** False: progress waits for the guard; true: the state stays while the guard holds. */
  holds: boolean;
  component: Component | null;
  condition: string | null;
  reason: string | null;
  /** e.g. `waiting for CNPG: phase 'Setting up primary', readyInstances 1/3`. */
  summary: string;
  /** The blocking component's health message. */
  message: string | null;
  /** Raw facts of the observation behind it. */
  facts: string[];
}

/** Where the cluster goes once the blocker clears (not `then`: that would make the document a thenable). */
export interface WhenClear {
  state: string;
  /** The guard that must hold; null when the state is left as soon as the blocker stops holding. */
  when: string | null;
}

export interface DeadlineView {
  /** Whether the current state has a progress deadline at all. */
  applies: boolean;
  progressDeadlineSeconds: number;
  at: string | null;
  leftSeconds: number | null;
  exceeded: boolean;
}

export interface StalledView {
  /** What the status projection would publish now: a failure state, or past the deadline. */
  computed: boolean;
  /** The stored `Stalled` condition's status and reason. */
  condition: string | null;
  reason: string | null;
}

export interface OwnerFact {
  /** `ours`, `orphan` or `foreign`. */
  ownership: string;
  /** The controller, e.g. `Deployment/someone-else`; null when nobody controls it. */
  controller: string | null;
}

export interface ObjectFact extends OwnerFact {
  name: string;
  exists: boolean;
}

export interface PoolerFact extends ObjectFact {
  type: 'rw' | 'ro';
  readyReplicas: number | null;
  instances: number | null;
}

export interface RoleFact {
  name: string;
  secret: string | null;
  secretExists: boolean | null;
  state: 'reconciled' | 'pending' | 'failed' | 'waitingForSecret' | 'absent';
  error: string | null;
}

export interface ObservedFacts {
  class: { name: string | null; found: boolean };
  secret: ObjectFact & { keys: string[] };
  cnpg: ObjectFact & {
    phase: string | null;
    phaseReason: string | null;
    instances: number | null;
    readyInstances: number | null;
    currentPrimary: string | null;
  };
  roles: RoleFact[];
  poolers: { enabled: boolean | null; rw: PoolerFact; ro: PoolerFact };
  configMap: ObjectFact & { driftedKeys: string[] };
  /** Children that still carry this PostgresCluster's owner reference, e.g. `Cluster orders`. */
  stillOwned: string[];
}

export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
  ageSeconds: number | null;
}

export interface EventView extends ExplainEvent {
  ageSeconds: number | null;
}

export interface Explanation {
  cluster: {
    namespace: string;
    name: string;
    uid: string | null;
    generation: number | null;
    observedGeneration: number | null;
    deleting: boolean;
  };
  now: string;
  state: StateView;
  tick: TickView;
  blocker: Blocker | null;
  whenClear: WhenClear | null;
  deadline: DeadlineView;
  stalled: StalledView;
  hints: string[];
  observed: ObservedFacts;
  conditions: ConditionView[];
  events: EventView[];
  /** Why the events could not be listed (e.g. forbidden); the rest of the explanation stands. */
  eventsError: string | null;
}
