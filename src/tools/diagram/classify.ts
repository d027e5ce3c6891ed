/**
 * Sorts transitions into the visual roles the DOT picture draws differently, and answers the one
 * reachability question its layout needs. Derived from the chart (meta.phase, meta.ready) and its
 * guard catalogue (the gates) rather than listed by hand, so a changed machine restyles itself.
 */
import type { GuardReader } from '../../../machines/guards.ts';
import { type Chart, index, leaves, type Transition } from '../../../machines/walk.ts';

export type EdgeKind = 'happy' | 'failure' | 'gate' | 'gate-failure' | 'normal';

interface Step {
  to: string;
  transition: Transition;
}

/**
 * Where a current state can go without a gate: its own and inherited handlers (Provisioning's tick
 * lives on the compound state), each target settled into the leaf that entering it lands on.
 */
function stepper(chart: Chart, guards: GuardReader): (path: string) => Step[] {
  const { lineage, settle } = index(chart);
  return (path) =>
    lineage(path).flatMap((owner) =>
      owner.transitions
        .filter((t) => !t.guard?.names.some(guards.isGate))
        .flatMap((transition) => transition.targets.map((target) => ({ to: settle(target).path, transition }))),
    );
}

/**
 * The happy path: the shortest route from the initial state to the first Ready state, through
 * transitions that are neither gates nor failures (breadth-first).
 */
function happyPath(chart: Chart, guards: GuardReader): Set<Transition> {
  const { get, settle } = index(chart);
  const steps = stepper(chart, guards);
  const via = new Map<string, { from: string; transition: Transition }>();
  const queue = [settle(chart.initial).path];
  const seen = new Set(queue);
  for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
    if (get(path).meta?.ready) {
      const out = new Set<Transition>();
      for (let step = via.get(path); step; step = via.get(step.from)) out.add(step.transition);
      return out;
    }
    for (const { to, transition } of steps(path)) {
      if (get(to).meta?.phase === 'Failed' || seen.has(to)) continue;
      seen.add(to);
      via.set(to, { from: path, transition });
      queue.push(to);
    }
  }
  return new Set();
}

/**
 * Leaves outside `compound` that its own leaves lead to without a gate (the states "after" it), each
 * mapped to the leaf inside `compound` it is first reached from.
 */
export function downstreamOf(chart: Chart, guards: GuardReader, compound: string): Map<string, string> {
  const { isWithin } = index(chart);
  const steps = stepper(chart, guards);
  const origin = new Map(
    leaves(chart)
      .filter((s) => isWithin(s.path, compound))
      .map((s) => [s.path, s.path]),
  );
  const queue = [...origin.keys()];
  for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
    for (const { to } of steps(path)) {
      if (origin.has(to) || isWithin(to, compound)) continue;
      origin.set(to, origin.get(path) ?? path);
      queue.push(to);
    }
  }
  return new Map([...origin].filter(([path]) => !isWithin(path, compound)));
}

export function classifier(chart: Chart, guards: GuardReader): (t: Transition, target: string) => EdgeKind {
  const { settle } = index(chart);
  const happy = happyPath(chart, guards);
  return (t, target) => {
    const failing = settle(target).meta?.phase === 'Failed';
    if (t.guard?.names.some(guards.isGate)) return failing ? 'gate-failure' : 'gate';
    if (failing) return 'failure';
    return happy.has(t) ? 'happy' : 'normal';
  };
}
