/**
 * The one walker over the machine's state tree: a plain, ordered model of every state (with its meta,
 * entry and exit actions, transitions, guards and targets) that the diagrams, `explain`, the GitOps
 * health generator, the docs generator and the state-path codec all read. Nothing outside machines/
 * walks StateNodes (the package lint holds everyone to that).
 *
 * We walk StateNodes rather than using `xstate/graph`'s `toDirectedGraph` because that leaves out
 * eventless (`always`) transitions, which carry the whole Provisioning pipeline here. Document order
 * is kept everywhere so the generated files are byte-stable.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import type { StateMeta } from './meta.ts';
import { isWithin } from './states.ts';

export interface Guard {
  /** Printable form, e.g. `componentReady(secret)` or `and(a, not(b))`. */
  label: string;
  /** Every named guard it is built from (combinators unwrapped), for the guard table. */
  names: string[];
  /** The params of a `{ type, params }` guard; empty otherwise. */
  params: Record<string, unknown>;
}

export interface Transition {
  /** Path of the state node that declares it (a compound state for inherited handlers). */
  source: string;
  /** `always` for eventless transitions, otherwise the event type. */
  event: string;
  guard?: Guard;
  /** Target paths; empty for a targetless transition (the state stays). */
  targets: string[];
  actions: string[];
  reenter: boolean;
}

export interface ChartState {
  /** Dotted path below the root, e.g. `Provisioning.Secret`. */
  path: string;
  key: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  parent?: string;
  children: string[];
  /** Path of the initial child of a compound state. */
  initial?: string;
  meta?: StateMeta;
  entry: string[];
  exit: string[];
  transitions: Transition[];
}

export interface Chart {
  id: string;
  /** Path of the root's initial state. */
  initial: string;
  /** Every state below the root, in document order (parents before their children). */
  states: ChartState[];
}

const pathOf = (node: AnyStateNode) => node.path.join('.');

/** Guards are strings, `{ type, params }` objects, or combinator functions carrying `.guards`. */
function guardOf(raw: unknown): Guard {
  if (typeof raw === 'string') return { label: raw, names: [raw], params: {} };
  if (typeof raw === 'function') {
    const parts = ((raw as { guards?: unknown[] }).guards ?? []).map(guardOf);
    const name = raw.name || 'inline';
    if (parts.length === 0) return { label: name, names: [name], params: {} };
    const label = `${name}(${parts.map((p) => p.label).join(', ')})`;
    return { label, names: parts.flatMap((p) => p.names), params: {} };
  }
  if (typeof raw === 'object' && raw !== null && 'type' in raw && typeof raw.type === 'string') {
    const params = 'params' in raw && typeof raw.params === 'object' && raw.params !== null ? raw.params : {};
    const args = Object.values(params).map(String);
    const label = args.length ? `${raw.type}(${args.join(', ')})` : raw.type;
    return { label, names: [raw.type], params: params as Record<string, unknown> };
  }
  throw new Error(`cannot name guard ${String(raw)}`);
}

/** Action names as written in the machine; parameterised actions print their type only. */
function actionName(raw: unknown): string {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'function') return raw.name || 'inline';
  if (typeof raw === 'object' && raw !== null && 'type' in raw && typeof raw.type === 'string') return raw.type;
  throw new Error(`cannot name action ${String(raw)}`);
}

function transitionOf(source: string, t: AnyTransitionDefinition): Transition {
  const transition: Transition = {
    source,
    event: t.eventType === '' ? 'always' : t.eventType,
    targets: (t.target ?? []).map(pathOf),
    actions: (t.actions ?? []).map(actionName),
    reenter: t.reenter ?? false,
  };
  if (t.guard !== undefined) transition.guard = guardOf(t.guard);
  return transition;
}

function stateOf(node: AnyStateNode): ChartState {
  const path = pathOf(node);
  const children = Object.values(node.states) as AnyStateNode[];
  const state: ChartState = {
    path,
    key: node.key,
    type: node.type,
    children: children.map(pathOf),
    meta: node.meta as StateMeta | undefined,
    entry: node.entry.map(actionName),
    exit: node.exit.map(actionName),
    // Event handlers in declaration order (the order XState tries them), then eventless ones.
    transitions: [...node.transitions.values()]
      .flat()
      .concat(node.always ?? [])
      .map((t) => transitionOf(path, t)),
  };
  if (node.parent?.parent) state.parent = pathOf(node.parent);
  const initial = node.initial?.target[0];
  if (node.type === 'compound' && initial) state.initial = pathOf(initial);
  return state;
}

export function walk(machine: AnyStateMachine): Chart {
  const states: ChartState[] = [];
  const visit = (node: AnyStateNode) => {
    for (const child of Object.values(node.states) as AnyStateNode[]) {
      states.push(stateOf(child));
      visit(child);
    }
  };
  visit(machine.root);
  const initial = machine.root.initial?.target[0];
  if (!initial) throw new Error('the root state has no initial state');
  return { id: machine.root.id, initial: pathOf(initial), states };
}

/** Lookup helpers over a walked chart. */
export function index(chart: Chart) {
  const byPath = new Map(chart.states.map((s) => [s.path, s]));
  const get = (path: string): ChartState => {
    const state = byPath.get(path);
    if (!state) throw new Error(`unknown state ${path}`);
    return state;
  };
  /** The state itself, then its ancestors outward: the order XState looks for a handler. */
  const lineage = (path: string): ChartState[] => {
    const out: ChartState[] = [];
    for (let s: ChartState | undefined = get(path); s; s = s.parent ? get(s.parent) : undefined) out.push(s);
    return out;
  };
  /** Where entering `path` lands: follow initial children down to an atomic or final state. */
  const settle = (path: string): ChartState => {
    let s = get(path);
    while (s.initial) s = get(s.initial);
    return s;
  };
  return { get, lineage, settle, isWithin };
}

/** States that can be current: atomic and final ones (the rows of the state table). */
export const leaves = (chart: Chart) => chart.states.filter((s) => s.children.length === 0);
