/**
 * One tick of the lifecycle machine: the state it reaches and the effects its actions ask for — what
 * XState's pure `transition()` returns, at a fraction of its cost.
 *
 * XState decides; a tick replays a decision XState has already made when it can. XState's macrostep
 * spends 5–10 µs per microstep (selecting transitions, exit and entry sets, resolving actions, a new
 * snapshot), several times what the guards and planners it calls cost once the assessment is memoised,
 * and a level-based tick walks up to six microsteps (npm run bench, "engine"). Yet for a given stored
 * state the macrostep's course depends on the event only through the guards it asks, in order: the
 * machine is pure, has no context, no history, no children, no delays, and its actions only enqueue
 * `effect`s. So the first tick down each course runs XState, and records, by running the same chart
 * (`provide`d with guards that report and actions that only name themselves), (1) each guard XState asks,
 * with the answer, and (2) the actions it resolves, by name; later ticks ask the same guards in the same
 * order (a tree per stored state, one branch per answer) and, where a recorded course ends, take
 * XState's snapshot and let the recorded actions' planners (with the arguments XState's `enqueueActions`
 * resolver gives them) plan this tick's effects. Guards and planners still run on every tick (on the
 * tick's own observation); only XState's bookkeeping between them is reused.
 *
 * A course is kept only when its replay on the tick that recorded it gives what XState gave (the same
 * state, the same effects in the same order); anything a replay cannot reproduce (an action that is not
 * the machine's named `effect` planner, a course that contradicts one recorded earlier) sends that
 * course, or that stored state, to XState on every tick; a guard or planner that throws sends the tick to
 * XState, so the error is XState's. test/unit/tick.test.ts compares both ways on every storable state in a
 * spread of worlds.
 *
 * Kept for what it saves the whole operator, not for the retired per-tick target: with XState's own
 * `transition()` on every tick instead, `pgfsm run` spent about 11 % more CPU per cluster against a real API
 * server, and as much with `transition()`'s throwaway actor avoided (`tickThroughXState`); bench/results.md,
 * "The tick replay, measured end to end".
 */
import { type AnyActorScope, type AnyStateMachine, createActor } from 'xstate';
import type { Effect } from '../src/operator/domain/effects.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { GUARDS, type GuardEntry, type GuardName, guardImplementations } from './guards.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
import { encodeState, type Snapshot } from './state-path.ts';

export interface Tick {
  taken: Snapshot;
  effects: Effect[];
}

type ScopeBase = Omit<AnyActorScope, 'actionExecutor'>;
type ExecutedAction = { type: string; params?: unknown };

/**
 * Built as XState's own `transition()` builds its throwaway scope, once per machine. The scope is only
 * where the macrostep reports actions and finds `self` and `system`; the machine is pure (no invoke, no
 * spawn, no delayed events: the package lint holds it to that), so nothing ever registers in that system
 * or is deferred, and one scope serves every tick. Its executor hands each action to `onAction`, which
 * each tick points at its own list (ticks are synchronous and never nest).
 */
function inertScope(machine: AnyStateMachine): AnyActorScope & { onAction: (action: ExecutedAction) => void } {
  const self = createActor(machine);
  const scope: ScopeBase & {
    onAction: (action: ExecutedAction) => void;
    actionExecutor: AnyActorScope['actionExecutor'];
  } = {
    self,
    defer: () => {},
    id: '',
    logger: () => {},
    sessionId: '',
    stopChild: () => {},
    system: self.system,
    emit: () => {},
    onAction: () => {},
    actionExecutor: (action) => scope.onAction(action),
  };
  return scope as AnyActorScope & typeof scope;
}

let scope: ReturnType<typeof inertScope> | undefined;

/** The tick as XState computes it, every time: the definition of the answer, and the bench's floor. */
export function tickThroughXState(snapshot: Snapshot, event: TickEvent): Tick {
  scope ??= inertScope(postgresClusterMachine);
  const effects: Effect[] = [];
  scope.onAction = (action) => {
    if (action.type === 'effect') effects.push(action.params as Effect);
  };
  const taken = postgresClusterMachine.transition(snapshot, event, scope) as Snapshot;
  return { taken, effects };
}

// --- recording ------------------------------------------------------------------------------------------

interface Asked {
  guard: GuardName;
  params: unknown;
  answer: boolean;
}

/** Where the recording machine's guards report while a course is recorded; undefined otherwise. */
let asked: Asked[] | undefined;

/**
 * The same chart with guards that report what they are asked and answer as the real ones, and actions
 * that only report their names (an action resolved by name reaches the executor as `{ type: name }`).
 * Built on first use.
 */
let recorder: { machine: AnyStateMachine; scope: ReturnType<typeof inertScope> } | undefined;
function recordingMachine() {
  if (recorder) return recorder;
  const guards = Object.fromEntries(
    Object.entries(guardImplementations).map(([name, holds]) => [
      name,
      (args: { event: TickEvent }, params: unknown) => {
        const answer = (holds as (args: { event: TickEvent }, params: unknown) => boolean)(args, params);
        asked?.push({ guard: name as GuardName, params, answer });
        return answer;
      },
    ]),
  );
  const actions = Object.fromEntries(
    Object.keys(postgresClusterMachine.implementations.actions).map((n) => [n, () => {}]),
  );
  const machine = (postgresClusterMachine as AnyStateMachine).provide({ guards, actions });
  recorder = { machine, scope: inertScope(machine) };
  return recorder;
}

/** A course XState took: what a replay needs. */
interface Course {
  taken: Snapshot;
  /** The actions XState resolved on it, looked up once (see `compile`). */
  steps: readonly Step[];
}

/**
 * A question on the way: the guard XState asks next, and where each answer leads (unknown until taken). A
 * class, so that walking the tree meets one shape of object.
 */
class Question {
  yes: Node | undefined = undefined;
  no: Node | undefined = undefined;
  constructor(
    readonly guard: GuardName,
    readonly params: unknown,
    readonly holds: (event: TickEvent, params: unknown) => boolean,
  ) {}
}

/** A course that is always left to XState. */
const XSTATE = Symbol('xstate');
type Node = Question | Course | typeof XSTATE;

const isQuestion = (node: Node): node is Question => node instanceof Question;

/** Recorded courses, by stored state. */
const courses = new Map<string, Node>();

/** Raised when a recorded action cannot be replayed outside XState. */
class Unreplayable extends Error {}

const actionImplementations = postgresClusterMachine.implementations.actions as Record<string, unknown>;

/** The `effect` action is a plain function: XState hands it to the executor with its params, nothing more. */
const plainEffect =
  typeof actionImplementations.effect === 'function' && !('resolve' in (actionImplementations.effect as object));

/** What `enqueueActions(collect)` keeps of its planner: XState's resolver calls `collect` with the tick's args. */
type EnqueueActions = {
  type: 'xstate.enqueueActions';
  collect: (args: CollectArgs, params: unknown) => void;
};
/** A recorded action, resolved: an `enqueueActions` planner with its params, or an `effect` with its own. */
type Step = { planner: EnqueueActions; params: unknown } | { planner: undefined; params: Effect };

/**
 * What an action resolves to, as XState would execute it: a named `enqueueActions` action is kept with its
 * planner (it runs on each tick's event), an `effect` is kept as it is, and an action the tick's executor
 * ignores (a plain function other than `effect`) adds nothing. Anything else is Unreplayable.
 */
function compile(action: unknown, out: Step[]): void {
  if (typeof action === 'function') throw new Unreplayable('inline action');
  const { type, params } =
    typeof action === 'string' ? { type: action, params: undefined } : (action as ExecutedAction);
  if (typeof params === 'function') throw new Unreplayable(`dynamic params of ${type}`);
  const impl = actionImplementations[type] as { type?: string; resolve?: unknown; collect?: unknown } | undefined;
  if (impl === undefined) throw new Unreplayable(`unknown action ${type}`);
  if (typeof impl.resolve !== 'function') {
    if (type === 'effect') out.push({ planner: undefined, params: params as Effect });
    return;
  }
  if (impl.type !== 'xstate.enqueueActions' || typeof impl.collect !== 'function') {
    throw new Unreplayable(`built-in action ${impl.type}`);
  }
  out.push({ planner: impl as EnqueueActions, params });
}

/**
 * The arguments a planner gets, as XState's enqueueActions resolver gives them, built once and refilled per
 * call: `enqueue` hands each `effect` straight to the tick's list, and anything else (an `assign`, a `raise`,
 * a guard `check`…) is Unreplayable, so that tick goes to XState. Built once rather than per call as XState's
 * resolver does: its per-call closures and arrays, allocated next to the long-lived memoised assessments of a
 * busy process, got V8 to pretenure them, and each tick's garbage then survived scavenges until a full GC (a
 * deletion tick, 2 µs, took 5–9 µs after a spread of other ticks; none with --no-allocation-site-pretenuring).
 */
let sink: Effect[] | undefined;
const unreplayable = (what: string) => () => {
  throw new Unreplayable(what);
};
const enqueue = Object.assign(
  (action: unknown) => {
    // What the machine's planners enqueue: an `effect` with its params, which the executor takes as is.
    const { type, params } = action as ExecutedAction;
    if (type !== 'effect' || !plainEffect || typeof params === 'function' || !sink) throw new Unreplayable(`${type}`);
    sink.push(params as Effect);
  },
  {
    assign: unreplayable('enqueue.assign'),
    cancel: unreplayable('enqueue.cancel'),
    raise: unreplayable('enqueue.raise'),
    sendTo: unreplayable('enqueue.sendTo'),
    sendParent: unreplayable('enqueue.sendParent'),
    spawnChild: unreplayable('enqueue.spawnChild'),
    stopChild: unreplayable('enqueue.stopChild'),
    emit: unreplayable('enqueue.emit'),
  },
);
interface CollectArgs {
  context: unknown;
  event: TickEvent | undefined;
  enqueue: typeof enqueue;
  check: () => never;
  self: unknown;
  system: unknown;
}
const collectArgs: CollectArgs = {
  context: undefined,
  event: undefined,
  enqueue,
  check: unreplayable('check'),
  self: undefined,
  system: undefined,
};

/** This tick's effects from a course's steps, in order: each planner run on this tick's event. */
function play(steps: readonly Step[], snapshot: Snapshot, event: TickEvent, out: Effect[]): void {
  scope ??= inertScope(postgresClusterMachine);
  collectArgs.self = scope.self;
  collectArgs.system = scope.system;
  collectArgs.context = snapshot.context;
  collectArgs.event = event;
  sink = out;
  try {
    for (const step of steps) {
      if (step.planner === undefined) out.push(step.params);
      else step.planner.collect(collectArgs, step.params);
    }
  } finally {
    // Nothing of this tick stays reachable from the shared arguments.
    sink = undefined;
    collectArgs.event = undefined;
    collectArgs.context = undefined;
  }
}

const sameParams = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/** Adds a recorded course to the tree of `key`; false when it contradicts what is recorded there. */
function insert(key: string, path: readonly Asked[], leaf: Course | typeof XSTATE): boolean {
  let node = courses.get(key);
  let attach = (next: Node) => {
    courses.set(key, next);
  };
  for (const step of path) {
    if (node === undefined) {
      node = new Question(step.guard, step.params, (GUARDS[step.guard] as GuardEntry<unknown>).holds);
      attach(node);
    } else if (!isQuestion(node) || node.guard !== step.guard || !sameParams(node.params, step.params)) {
      return false;
    }
    const question: Question = node;
    node = step.answer ? question.yes : question.no;
    attach = step.answer
      ? (next) => {
          question.yes = next;
        }
      : (next) => {
          question.no = next;
        };
  }
  if (node !== undefined) return false;
  attach(leaf);
  return true;
}

/** Runs XState on the tick, records its course from `key` when the replay reproduces it, returns XState's answer. */
function record(key: string, snapshot: Snapshot, event: TickEvent): Tick {
  const answer = tickThroughXState(snapshot, event);
  const { machine, scope: recordingScope } = recordingMachine();
  const path: Asked[] = [];
  const actions: ExecutedAction[] = [];
  asked = path;
  recordingScope.onAction = (action) => actions.push({ type: action.type, params: action.params });
  let leaf: Course | typeof XSTATE = XSTATE;
  try {
    const start = machine.resolveState({ value: snapshot.value, context: {} });
    const recorded = machine.transition(start, event, recordingScope) as Snapshot;
    const steps: Step[] = [];
    for (const action of actions) compile(action, steps);
    const replayed: Effect[] = [];
    play(steps, snapshot, event, replayed);
    const same =
      encodeState(recorded.value) === encodeState(answer.taken.value) &&
      recorded.status === answer.taken.status &&
      JSON.stringify(replayed) === JSON.stringify(answer.effects);
    if (same) leaf = { taken: answer.taken, steps };
  } catch {
    // XState answered this tick; a course its replay cannot reproduce (whatever the reason) is left to XState.
  } finally {
    asked = undefined;
  }
  if (!insert(key, path, leaf)) courses.set(key, XSTATE);
  return answer;
}

/**
 * The key of a stored state whose ticks can be replayed, or undefined: an active snapshot of this machine
 * with nothing beside its state value (no context, history or children, as this machine never has).
 */
const keys = new WeakMap<Snapshot, string | null>();
function keyOf(snapshot: Snapshot): string | undefined {
  let key = keys.get(snapshot);
  if (key === undefined) {
    const plain =
      snapshot.machine === postgresClusterMachine &&
      snapshot.status === 'active' &&
      Object.keys(snapshot.context ?? {}).length === 0 &&
      Object.keys(snapshot.children ?? {}).length === 0 &&
      Object.keys(snapshot.historyValue ?? {}).length === 0;
    key = plain ? encodeState(snapshot.value) : null;
    keys.set(snapshot, key);
  }
  return key ?? undefined;
}

export function tickMachine(snapshot: Snapshot, event: TickEvent): Tick {
  const key = keyOf(snapshot);
  if (key === undefined) return tickThroughXState(snapshot, event);
  let node = courses.get(key);
  const effects: Effect[] = [];
  try {
    while (node instanceof Question) node = node.holds(event, node.params) ? node.yes : node.no;
    if (node === undefined) return record(key, snapshot, event);
    if (node === XSTATE) return tickThroughXState(snapshot, event);
    play(node.steps, snapshot, event, effects);
  } catch (error) {
    // Whatever a replay cannot do, or a guard or planner throws, XState answers: its result, or its error.
    if (error instanceof Unreplayable || node !== undefined) return tickThroughXState(snapshot, event);
    throw error;
  }
  return { taken: node.taken, effects };
}
