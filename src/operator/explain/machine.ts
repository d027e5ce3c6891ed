/**
 * The machine's own logic, replayed on a live observation: XState's pure `transition()` says where a
 * tick right now would leave the resource, and the guards of that state, evaluated in the order XState
 * tries them with the machine's own guard implementations, say what keeps it there. Nothing here is a
 * second opinion on the lifecycle; it is the lifecycle, run without executing anything. Written once over
 * an `ExplainedMachine` (machines.ts): the PostgresCluster's and the PostgresDatabase's are replayed alike.
 */
import { type AnyMachineSnapshot, transition } from 'xstate';
import { encodeState } from '../../../machines/state-codec.ts';
import type { Transition } from '../../../machines/walk.ts';
import type { ExplainedMachine } from './machines.ts';
import type { GuardCheck, StepPosition } from './types.ts';

export interface Checked extends GuardCheck {
  /** The guard's name without its parameters, e.g. `componentReady`. */
  name: string | null;
  params: Record<string, unknown>;
  /** The state re-entered by a `reenter` transition (the level-based pipeline starts over), if any. */
  reenters: string | null;
}

export interface Replay<F> {
  /** The state the explanation starts from (stored, or the machine's initial state). */
  current: AnyMachineSnapshot;
  currentPath: string;
  /** False when `status.state` names a state this version of the machine does not have. */
  restored: boolean;
  next: AnyMachineSnapshot;
  nextPath: string;
  effects: F[];
  /** The tick transition the current state takes. */
  via: Checked | undefined;
  /** The guards at `next`: its eventless transitions, then its tick handlers up to the first that fires. */
  guards: Checked[];
}

/** The guard's name and params; the machine lint forbids inline and combined guards. */
function guardParts(t: Transition): { name: string | null; params: Record<string, unknown> } {
  if (!t.guard) return { name: null, params: {} };
  const [name, ...more] = t.guard.names;
  // Meeting one means this module must learn a new form.
  if (name === undefined || more.length > 0) throw new Error(`cannot explain the guard ${t.guard.label}`);
  return { name, params: t.guard.params };
}

function check<E>(machine: ExplainedMachine<E, unknown>, on: GuardCheck['on'], t: Transition, event: E): Checked {
  const { name, params } = guardParts(t);
  return {
    on,
    name,
    params,
    guard: t.guard?.label ?? null,
    holds: name === null ? true : machine.guardHolds(name, params, event),
    target: t.targets[0] ?? null,
    reenters: t.reenter ? t.source : null,
  };
}

/**
 * Tick handlers in the order XState tries them, checked until the first that fires, or all of them
 * (`untilFired: false`) to see where the state goes once the guard holding it stops holding.
 */
export function tickChecks<E>(machine: ExplainedMachine<E, unknown>, path: string, event: E, untilFired = true) {
  const out: Checked[] = [];
  for (const state of machine.states.lineage(path)) {
    for (const t of state.transitions.filter((x) => x.event === 'tick')) {
      const c = check(machine, 'tick', t, event);
      out.push(c);
      if (c.holds && untilFired) return out;
    }
  }
  return out;
}

export const alwaysChecks = <E>(machine: ExplainedMachine<E, unknown>, path: string, event: E): Checked[] =>
  machine.states
    .lineage(path)
    .flatMap((state) =>
      state.transitions.filter((t) => t.event === 'always').map((t) => check(machine, 'always', t, event)),
    );

export function replay<E, F>(machine: ExplainedMachine<E, F>, stored: string | undefined, event: E): Replay<F> {
  const restoredSnapshot = machine.restoreState(stored);
  const current = restoredSnapshot ?? machine.initialState();
  const currentPath = encodeState(current.value);
  const [next, actions] = transition(machine.logic, current, event as never);
  const nextPath = encodeState(next.value);
  return {
    current,
    currentPath,
    restored: restoredSnapshot !== undefined,
    next,
    nextPath,
    // The machines' one action is `effect`, carrying the effect as its params.
    effects: (actions as ReadonlyArray<{ type: string; params?: unknown }>)
      .filter((a) => a.type === 'effect')
      .map((a) => a.params as F),
    via: tickChecks(machine, currentPath, event).find((c) => c.holds),
    // A final state handles nothing.
    guards:
      next.status === 'done'
        ? []
        : [...alwaysChecks(machine, nextPath, event), ...tickChecks(machine, nextPath, event)],
  };
}

/** Where a state sits in its sequence: `Provisioning.Cluster` is step 2 of 5 of the pipeline. */
export function stepOf(machine: ExplainedMachine<never, unknown>, path: string): StepPosition | null {
  const { states, description } = machine;
  const parent = states.get(path).parent;
  const sequence = parent === undefined ? undefined : description.sequences[parent];
  if (parent === undefined || sequence === undefined) return null;
  // A state working on the same component as the one before it (the Cluster step's update in steps) is
  // part of that step, not a step of its own.
  const stepOfState = (p: string) => states.get(p).meta?.step ?? p;
  const steps = [...new Set(states.get(parent).children.map(stepOfState))];
  return { index: steps.indexOf(stepOfState(path)) + 1, of: steps.length, sequence };
}

/** A transition as a reader sees it: `tick [cnpgBusy] → Degraded`, `stays while [allReady]`. */
export function describeTransition(c: Checked | undefined): string {
  if (!c) return 'no transition';
  const guard = c.guard ? ` [${c.guard}]` : '';
  if (c.target === null) return `stays while${guard}`;
  const again = c.reenters ? `, re-entering ${c.reenters}` : '';
  return `${c.on}${guard} → ${c.target}${again}`;
}
