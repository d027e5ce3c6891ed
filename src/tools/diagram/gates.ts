/**
 * Folds the gate transitions into one "from any live state" stub per gate for the picture.
 *
 * Every live state checks the same gates first (five in the cluster's machine) on every tick, which as plain edges is ~40 arrows
 * that drown the lifecycle. A gate is folded only when the fold is exact: every live state has it, all
 * of them go to the same target with the same label, and the only exceptions are states inside that
 * target, which stay (e.g. Suspended on suspendRequested). Anything else stays drawn as plain edges.
 */
import type { GuardReader } from '../../../machines/guards.ts';
import { type Chart, index, leaves, type Transition } from '../../../machines/walk.ts';
import { transitionLabel } from './label.ts';

export interface GateStub {
  label: string;
  target: string;
}

export interface GateSummary {
  stubs: GateStub[];
  /** Transitions the stubs stand for; the picture does not draw them one by one. */
  covered: Set<Transition>;
  /** Top-level states with no live state inside: the ones the stubs do not speak for. */
  exempt: string[];
}

export function summariseGates(chart: Chart, guards: GuardReader): GateSummary {
  const { lineage, isWithin } = index(chart);
  const gates = guards.usedGuards(chart).filter(guards.isGate);
  // Own handlers first, then inherited ones: the order XState tries them.
  const handlers = new Map(leaves(chart).map((s) => [s.path, lineage(s.path).flatMap((o) => o.transitions)]));
  const onGate = (ts: Transition[], gate: string) => ts.filter((t) => t.guard?.label === gate);
  // Live: the state's first event handlers are exactly the gates, in order, so the notes can say
  // "checked first, in the order numbered".
  const gatesFirst = (ts: Transition[]) => {
    const head = ts.filter((t) => t.event !== 'always').slice(0, gates.length);
    return (
      head.length === gates.length && head.every((t, i) => t.guard?.label === gates[i] && t.event === head[0]?.event)
    );
  };
  const live = [...handlers].filter(([, ts]) => gatesFirst(ts)).map(([p]) => p);
  const isLive = (path: string) => live.includes(path);
  const allLive = (path: string) => leaves(chart).every((s) => !isWithin(s.path, path) || isLive(s.path));

  const stubs: GateStub[] = [];
  const covered = new Set<Transition>();
  for (const gate of gates) {
    const ts = live.flatMap((p) => onGate(handlers.get(p) ?? [], gate).map((t) => ({ from: p, t })));
    const targeted = ts.filter(({ t }) => t.targets.length > 0);
    const first = targeted[0]?.t;
    const target = first?.targets[0];
    if (!first || !target) continue;
    const exact = ts.every(({ from, t }) =>
      t.targets.length === 0
        ? isWithin(from, target)
        : t.targets.length === 1 && t.targets[0] === target && transitionLabel(t) === transitionLabel(first),
    );
    if (!exact || !ts.every(({ t }) => allLive(t.source))) continue;
    stubs.push({ label: transitionLabel(first), target });
    for (const { t } of targeted) covered.add(t);
  }
  const exempt = chart.states.filter((s) => !s.parent && !live.some((p) => isWithin(p, s.path))).map((s) => s.path);
  return { stubs, covered, exempt };
}
