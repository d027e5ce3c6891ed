/**
 * The state -> expected status summary table, and what each consumer (Argo CD, Flux, kstatus) should
 * conclude from it. Derived from `meta` through the machine's summary rule (machines/summary.ts), the
 * one the status projection publishes by: the generators document it and the tests hold the artefacts
 * to it.
 */
import type { AnyStateMachine } from 'xstate';
import type { StateMeta } from '../../../machines/meta.ts';
import { deadlineOutcomes, deadlineReason, type Summary, summaryOf } from '../../../machines/summary.ts';
import { type Chart, leaves, walk } from '../../../machines/walk.ts';
import type { Phase } from '../../operator/api/schema.ts';

export type ConditionStatus = 'True' | 'False';
export type ArgoHealth = 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended' | 'Missing' | 'Unknown';
/** kstatus results; Flux's healthCheckExprs can only yield the first three. */
export type KstatusResult = 'InProgress' | 'Failed' | 'Current' | 'Terminating';
export type FluxResult = Exclude<KstatusResult, 'Terminating'>;

/** `deadlineExceeded`: a waiting state past its progress deadline (Reconciling False, Stalled True). */
export type Variant = 'normal' | 'deadlineExceeded';

export interface ExpectedStatus {
  state: string;
  variant: Variant;
  meta: StateMeta;
  phase: Phase;
  ready: ConditionStatus;
  reconciling: ConditionStatus;
  stalled: ConditionStatus;
  /** Set only for the deadline variant: the `Stalled` reason the projection must publish. */
  stalledReason?: string;
  /** Suspension is declared by the phase; no other meta field says "the user paused me". */
  suspended: boolean;
  /**
   * The Deleting phase is only entered through the `deletionRequested` gate, so an object in it always
   * carries a deletionTimestamp; consumers see that before any condition.
   */
  deleting: boolean;
  argo: ArgoHealth;
  flux: FluxResult;
  kstatus: KstatusResult;
}

const cs = (b: boolean): ConditionStatus => (b ? 'True' : 'False');

/** The three summary conditions (no write failure), with what consumers read before them. */
type Seen = Summary & { suspended: boolean; deleting: boolean };

/** Argo CD: deletion first, then the pause, then failure before readiness; waiting is Progressing. */
function argoHealthOf(s: Seen): ArgoHealth {
  if (s.deleting) return 'Progressing';
  if (s.suspended) return 'Suspended';
  if (s.stalled) return 'Degraded';
  return s.ready ? 'Healthy' : 'Progressing';
}

/**
 * kstatus' generic rules (Reconciling before Stalled, then Ready). A suspended cluster is InProgress:
 * kstatus has no "paused" result, Current would let dependants start on a cluster nobody reconciles,
 * and Failed would page someone for a deliberate, reversible choice.
 */
function kstatusOf(s: Seen): KstatusResult {
  if (s.deleting) return 'Terminating';
  if (s.reconciling) return 'InProgress';
  if (s.stalled) return 'Failed';
  return s.ready ? 'Current' : 'InProgress';
}

/** Flux healthCheckExprs: the same verdicts as kstatus, with deletion reported as InProgress. */
function fluxOf(s: Seen): FluxResult {
  const k = kstatusOf(s);
  return k === 'Terminating' ? 'InProgress' : k;
}

function row(state: string, meta: StateMeta, pastDeadline: boolean): ExpectedStatus {
  const variant: Variant = pastDeadline ? 'deadlineExceeded' : 'normal';
  const s: Seen = {
    ...summaryOf(meta, pastDeadline),
    suspended: meta.phase === 'Suspended',
    deleting: meta.phase === 'Deleting',
  };
  return {
    state,
    variant,
    meta,
    phase: meta.phase,
    ready: cs(s.ready),
    reconciling: cs(s.reconciling),
    stalled: cs(s.stalled),
    ...(pastDeadline ? { stalledReason: deadlineReason(state) } : {}),
    suspended: s.suspended,
    deleting: s.deleting,
    argo: argoHealthOf(s),
    flux: fluxOf(s),
    kstatus: kstatusOf(s),
  };
}

/** A walked chart (machines/chart.ts `MACHINES`) rather than the machine itself: its states are a list. */
const isChart = (m: AnyStateMachine | Chart): m is Chart => Array.isArray(m.states);

/**
 * One row per state the machine can be in (atomic and final, in document order, so tables line up with
 * the diagrams), plus a deadline-exceeded row right after each state that has a deadline. Read from
 * the machine, so a state added tomorrow shows up here without anyone remembering to add it.
 */
export function expectedStatuses(machine: AnyStateMachine | Chart): ExpectedStatus[] {
  const chart = isChart(machine) ? machine : walk(machine);
  return leaves(chart).flatMap(({ path, type, meta }) => {
    // A parallel region would publish a composite state value; the projection does not handle one.
    if (type === 'parallel' || type === 'history') throw new Error(`${path}: ${type} states are not supported`);
    // Every publishable state must declare its meta: the projection cannot compute a status without it.
    if (!meta) throw new Error(`${path} declares no meta`);
    return deadlineOutcomes(meta).map((pastDeadline) => row(path, meta, pastDeadline));
  });
}
