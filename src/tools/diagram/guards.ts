/**
 * One-line meanings of the machine's guards, for the guard table. Generation fails on a guard missing
 * here, or on an entry the machine no longer uses, so the table cannot drift from the machine.
 *
 * `gate` marks the guards every live state checks first on each tick (deletion, finalizer, suspend,
 * class, spec). The diagrams draw their edges in a quiet style: they are many and uniform.
 */
import type { Chart } from './walk.ts';

export interface GuardInfo {
  meaning: string;
  gate?: true;
}

export const GUARDS: Record<string, GuardInfo> = {
  deletionRequested: { gate: true, meaning: 'The PostgresCluster has a deletionTimestamp' },
  finalizerMissing: { gate: true, meaning: 'Our finalizer is not (or no longer) on the PostgresCluster' },
  suspendRequested: { gate: true, meaning: '`spec.suspend` is true' },
  classMissing: { gate: true, meaning: 'The PostgresClusterClass named by `spec.class` was not observed' },
  specInvalid: { gate: true, meaning: 'Merging the class defaults with the spec failed validation' },
  componentReady: { meaning: "The component's health check says Ready" },
  componentFailed: {
    meaning: "Every earlier component is Ready and this component's check says Failed (a failure, not a block)",
  },
  allReady: { meaning: 'Every component is Ready' },
  cnpgBusy: {
    meaning: 'CNPG is operational but busy (switchover, failover, restart, upgrade, …) while the rest is Ready',
  },
  routineChange: {
    meaning:
      'The spec has a generation the status has not observed, or every component not Ready is only being updated ' +
      '(otherwise leaving Ready warns `ClusterNotReady`)',
  },
  poolersGone: { meaning: 'Neither the rw nor the ro Pooler exists any more' },
  policyApplied: { meaning: 'No Cluster, Secret or ConfigMap still names this PostgresCluster as its owner' },
};

/** Guard names in first-use order; throws when the table above and the machine disagree. */
export function usedGuards(chart: Chart): string[] {
  const used = [...new Set(chart.states.flatMap((s) => s.transitions.flatMap((t) => t.guard?.names ?? [])))];
  const undescribed = used.filter((name) => !Object.hasOwn(GUARDS, name));
  const unused = Object.keys(GUARDS).filter((name) => !used.includes(name));
  if (undescribed.length || unused.length) {
    throw new Error(
      `src/diagram/guards.ts is out of date: describe [${undescribed.join(', ')}], remove [${unused.join(', ')}]`,
    );
  }
  return used;
}

export const isGate = (name: string) => GUARDS[name]?.gate === true;
