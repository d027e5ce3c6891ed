/**
 * The shape of `pgfsm explain`: one plain document that the text and JSON renderings share. Every key
 * is always present (absent values are `null`), so scripts reading `--output json` see a stable shape
 * whatever state the resource is in. Times are ISO strings; durations are whole seconds.
 *
 * Both resources share every part but two: the key naming the resource (`cluster`, `database`) and what
 * was observed (`observed`), which is each resource's own world.
 */
import type { Phase } from '../api/schema.ts';
import type { RoleAccess } from '../domain/database/roles.ts';
import type { DatabaseComponent } from '../domain/database/vocabulary.ts';
import type { Component } from '../domain/vocabulary.ts';

/** One events.k8s.io Event about the resource explained, as the event reader returns it. */
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

/** `C`: the components of the resource (the cluster's by default). */
export interface Blocker<C extends string = Component> {
  guard: string;
  /** False: progress waits for the guard; true: the state stays while the guard holds. */
  holds: boolean;
  component: C | null;
  condition: string | null;
  reason: string | null;
  /** e.g. `waiting for CNPG: phase 'Setting up primary', readyInstances 1/3`. */
  summary: string;
  /** The blocking component's health message. */
  message: string | null;
  /** Raw facts of the observation behind it. */
  facts: string[];
}

/** Where the resource goes once the blocker clears (not `then`: that would make the document a thenable). */
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

/** The resource explained, as the document's first key names it (`cluster`, `database`). */
export interface ResourceView {
  namespace: string;
  name: string;
  uid: string | null;
  generation: number | null;
  observedGeneration: number | null;
  deleting: boolean;
}

/** Everything after the resource's key, in this order: `O` is what was observed, `C` the components. */
export interface ExplanationBody<O, C extends string = Component> {
  now: string;
  state: StateView;
  tick: TickView;
  blocker: Blocker<C> | null;
  whenClear: WhenClear | null;
  deadline: DeadlineView;
  stalled: StalledView;
  hints: string[];
  observed: O;
  conditions: ConditionView[];
  events: EventView[];
  /** Why the events could not be listed (e.g. forbidden); the rest of the explanation stands. */
  eventsError: string | null;
}

/** A PostgresCluster explained. */
export interface Explanation extends ExplanationBody<ObservedFacts> {
  cluster: ResourceView;
}

// ---- PostgresDatabase ----

export interface DatabaseClusterFact {
  /** `spec.cluster`; null when the spec names none. */
  name: string | null;
  exists: boolean;
  /** The PostgresCluster's `status.phase`. */
  phase: string | null;
  deleting: boolean;
  /** What it published in its endpoints ConfigMap; null hosts while it has published nothing. */
  published: boolean;
  rw: string | null;
  ro: string | null;
  port: string | null;
  /** Connections go through the pooler; null while nothing is published. */
  pooled: boolean | null;
}

export interface ConnectionSecretFact extends ObjectFact {
  role: string;
  /** Carries `pgfsm.io/adopt: "true"`: an orphan handed over, which the next pass takes. */
  handedOver: boolean;
  /** Keys whose value differs from where the cluster now points (`host`, `port`, …); names only. */
  driftedKeys: string[];
  /** The Secret's key names. */
  keys: string[];
}

export interface DatabaseRoleFact {
  name: string;
  access: RoleAccess;
  secret: string;
  /**
   * `claimed`: someone else has the role (`heldBy`), so none of this database's roles is pushed. `notPushed`:
   * not in the CNPG Cluster's list yet. `pending`: pushed, not reconciled by CNPG yet. `absent`: pushed as
   * absent (being dropped). `failed`: CNPG cannot reconcile it (`error`).
   */
  state: 'reconciled' | 'pending' | 'notPushed' | 'absent' | 'failed' | 'claimed';
  /** Who has it, when `claimed`: `PostgresDatabase billing-app`, `PostgresCluster orders's spec.managedRoles`. */
  heldBy: string | null;
  error: string | null;
}

export interface DatabaseObservedFacts {
  cluster: DatabaseClusterFact;
  /** The names it holds on its cluster and namespace (claims.ts), and those it wants that others hold. */
  claims: {
    database: string | null;
    roles: string[];
    secrets: string[];
    refused: { kind: 'database' | 'role' | 'secret'; name: string; heldBy: string }[];
  };
  /** What PostgreSQL itself was found to hold; null when it was not asked (or could not be). */
  inPostgres: { database: boolean; roles: string[]; privilegesMissing: string[] } | null;
  secrets: ConnectionSecretFact[];
  roles: DatabaseRoleFact[];
  cnpgDatabase: ObjectFact & {
    /** CNPG applied this generation; null when it has not said. */
    applied: boolean | null;
    message: string | null;
    /** Spec fields that differ from what pgfsm sends. */
    driftedFields: string[];
  };
  privileges: {
    /** Whether the digest recorded on the CNPG Database is the one of the current users, levels and schemas. */
    granted: boolean;
    /** The digest of what the spec asks for; null when the spec cannot be acted on. */
    digest: string | null;
    /** The digest in the annotation pgfsm.io/privileges; null when none. */
    recorded: string | null;
    /** `reader (readOnly)`, …: the users besides the owner. */
    users: string[];
  };
  deletionPolicy: 'Retain' | 'Delete';
  /** Children that still carry this PostgresDatabase's owner reference, e.g. `Secret orders-app-app`. */
  stillOwned: string[];
}

/** A PostgresDatabase explained. */
export interface DatabaseExplanation extends ExplanationBody<DatabaseObservedFacts, DatabaseComponent> {
  database: ResourceView;
}
