/**
 * Sorts transitions into the visual roles the DOT picture draws differently. Derived from the chart
 * (meta.phase, meta.ready, gate guards) rather than listed by hand, so a changed machine restyles itself.
 */
import { isGate } from './guards.ts';
import { type Chart, index, type Transition } from './walk.ts';

export type EdgeKind = 'happy' | 'failure' | 'gate' | 'gate-failure' | 'normal';

/**
 * The happy path: the shortest route from the initial state to the first Ready state, through
 * transitions that are neither gates nor failures. Found by breadth-first search over settled states,
 * with handlers inherited from ancestors (Provisioning's tick lives on the compound state).
 */
function happyPath(chart: Chart): Set<Transition> {
  const { lineage, settle } = index(chart);
  const start = settle(chart.initial);
  const via = new Map<string, { from: string; transition: Transition }>();
  const queue = [start.path];
  const seen = new Set(queue);
  for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
    if (settle(path).meta?.ready) {
      const out = new Set<Transition>();
      for (let step = via.get(path); step; step = via.get(step.from)) out.add(step.transition);
      return out;
    }
    for (const owner of lineage(path)) {
      for (const transition of owner.transitions) {
        if (transition.guard?.names.some(isGate)) continue;
        for (const target of transition.targets) {
          const next = settle(target);
          if (next.meta?.phase === 'Failed' || seen.has(next.path)) continue;
          seen.add(next.path);
          via.set(next.path, { from: path, transition });
          queue.push(next.path);
        }
      }
    }
  }
  return new Set();
}

export function classifier(chart: Chart): (t: Transition, target: string) => EdgeKind {
  const { settle } = index(chart);
  const happy = happyPath(chart);
  return (t, target) => {
    const failing = settle(target).meta?.phase === 'Failed';
    if (t.guard?.names.some(isGate)) return failing ? 'gate-failure' : 'gate';
    if (failing) return 'failure';
    return happy.has(t) ? 'happy' : 'normal';
  };
}
