/**
 * The machine's own logic, replayed on a live observation: XState's pure `transition()` says where a
 * tick right now would leave the cluster, and the guards of that state, evaluated in the order XState
 * tries them with the machine's own guard implementations, say what keeps it there. Nothing here is a
 * second opinion on the lifecycle; it is the lifecycle, run without executing anything.
 */
import { type AnyStateNode, initialTransition, transition } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import { encodeState, restoreState, type Snapshot } from '../core/machine-state.ts';
import { metaOf } from '../core/reconcile.ts';
import type { Effect } from '../domain/effects.ts';
import type { TickEvent } from '../domain/observation.ts';
import type { GuardCheck, StepPosition } from './types.ts';

type GuardImpl = (args: { context: unknown; event: TickEvent }, params: unknown) => boolean;
type AnyTransition = NonNullable<AnyStateNode['always']>[number];

/** Compound states whose children run one after the other, with how the explanation names them. */
const SEQUENCES: Record<string, string> = { Provisioning: 'the pipeline', Deleting: 'deletion' };

export interface Checked extends GuardCheck {
  /** The guard's name without its parameters, e.g. `componentReady`. */
  name: string | null;
  params: Record<string, unknown>;
  /** The state re-entered by a `reenter` transition (the level-based pipeline starts over), if any. */
  reenters: string | null;
}

export interface Replay {
  /** The state the explanation starts from (stored, or the machine's initial state). */
  current: Snapshot;
  currentPath: string;
  /** False when `status.state` names a state this version of the machine does not have. */
  restored: boolean;
  next: Snapshot;
  nextPath: string;
  effects: Effect[];
  /** The tick transition the current state takes. */
  via: Checked | undefined;
  /** The guards at `next`: its eventless transitions, then its tick handlers up to the first that fires. */
  guards: Checked[];
}

const pathOf = (node: AnyStateNode) => node.path.join('.');

/** The atomic state node of a dotted path. */
export function nodeAt(path: string): AnyStateNode {
  let node: AnyStateNode = postgresClusterMachine.root;
  for (const key of path.split('.')) {
    const child = node.states[key];
    if (!child) throw new Error(`the machine has no state ${path}`);
    node = child;
  }
  return node;
}

/** The meta of a snapshot's atomic state: what the status projection reads too. */
export { metaOf };

function guardParts(raw: unknown): { name: string | null; params: Record<string, unknown> } {
  if (raw === undefined) return { name: null, params: {} };
  if (typeof raw === 'string') return { name: raw, params: {} };
  if (typeof raw === 'object' && raw !== null && 'type' in raw && typeof raw.type === 'string') {
    const params = 'params' in raw && typeof raw.params === 'object' && raw.params !== null ? raw.params : {};
    return { name: raw.type, params: params as Record<string, unknown> };
  }
  // The machine lint forbids inline guards; meeting one means this module must learn a new form.
  throw new Error('cannot explain an inline guard');
}

const guardLabel = (name: string | null, params: Record<string, unknown>) => {
  if (name === null) return null;
  const args = Object.values(params).map(String);
  return args.length ? `${name}(${args.join(', ')})` : name;
};

function check(on: GuardCheck['on'], t: AnyTransition, event: TickEvent): Checked {
  const { name, params } = guardParts(t.guard);
  const guards = postgresClusterMachine.implementations.guards as Record<string, GuardImpl>;
  const impl = name === null ? undefined : guards[name];
  if (name !== null && !impl) throw new Error(`guard ${name} is not implemented`);
  return {
    on,
    name,
    params,
    guard: guardLabel(name, params),
    holds: impl ? impl({ context: {}, event }, params) : true,
    target: t.target?.[0] ? pathOf(t.target[0]) : null,
    reenters: t.reenter ? pathOf(t.source) : null,
  };
}

/** The node, then its ancestors: the order XState looks for a handler of an event. */
function lineage(node: AnyStateNode): AnyStateNode[] {
  const out: AnyStateNode[] = [];
  for (let n: AnyStateNode | undefined = node; n && n !== postgresClusterMachine.root; n = n.parent) out.push(n);
  return out;
}

/**
 * Tick handlers in the order XState tries them, checked until the first that fires, or all of them
 * (`untilFired: false`) to see where the state goes once the guard holding it stops holding.
 */
export function tickChecks(path: string, event: TickEvent, untilFired = true): Checked[] {
  const out: Checked[] = [];
  for (const node of lineage(nodeAt(path))) {
    for (const t of node.transitions.get('tick') ?? []) {
      const c = check('tick', t, event);
      out.push(c);
      if (c.holds && untilFired) return out;
    }
  }
  return out;
}

export const alwaysChecks = (path: string, event: TickEvent): Checked[] =>
  lineage(nodeAt(path)).flatMap((node) => (node.always ?? []).map((t) => check('always', t, event)));

export function replay(stored: string | undefined, event: TickEvent): Replay {
  const restoredSnapshot = restoreState(stored);
  const current = restoredSnapshot ?? initialTransition(postgresClusterMachine)[0];
  const currentPath = encodeState(current.value);
  const [next, actions] = transition(postgresClusterMachine, current, event);
  const nextPath = encodeState(next.value);
  return {
    current,
    currentPath,
    restored: restoredSnapshot !== undefined,
    next,
    nextPath,
    effects: actions.filter((a) => a.type === 'effect').map((a) => a.params as Effect),
    via: tickChecks(currentPath, event).find((c) => c.holds),
    // A final state handles nothing.
    guards: next.status === 'done' ? [] : [...alwaysChecks(nextPath, event), ...tickChecks(nextPath, event)],
  };
}

/** Where a state sits in its sequence: `Provisioning.Cluster` is step 2 of 5 of the pipeline. */
export function stepOf(path: string): StepPosition | null {
  const node = nodeAt(path);
  const parent = node.parent;
  if (!parent || !Object.hasOwn(SEQUENCES, parent.key)) return null;
  const keys = Object.keys(parent.states);
  return { index: keys.indexOf(node.key) + 1, of: keys.length, sequence: SEQUENCES[parent.key] ?? parent.key };
}

/** A transition as a reader sees it: `tick [cnpgBusy] → Degraded`, `stays while [allReady]`. */
export function describeTransition(c: Checked | undefined): string {
  if (!c) return 'no transition';
  const guard = c.guard ? ` [${c.guard}]` : '';
  if (c.target === null) return `stays while${guard}`;
  const again = c.reenters ? `, re-entering ${c.reenters}` : '';
  return `${c.on}${guard} → ${c.target}${again}`;
}
