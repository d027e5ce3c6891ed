/**
 * The state -> expected status summary table, and what each consumer (Argo CD, Flux, kstatus) should
 * conclude from it. Derived from `meta` alone, mirroring the summary rules of src/core/status.ts:
 * the generators document it and the tests hold the artefacts to it.
 */
import type { AnyStateMachine } from 'xstate';
import type { StateMeta } from '../../../machines/meta.ts';
import type { Phase } from '../../operator/api/schema.ts';
import { stateReason } from '../../operator/core/status.ts';
import { machineStates } from './states.ts';

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

/** What the three summary conditions say, as src/core/status.ts computes them (no write failure). */
function summary(meta: StateMeta, pastDeadline: boolean) {
  return { ready: meta.ready, reconciling: meta.reconciling && !pastDeadline, stalled: meta.stalled || pastDeadline };
}

type Summary = ReturnType<typeof summary> & { suspended: boolean; deleting: boolean };

/** Argo CD: deletion first, then the pause, then failure before readiness; waiting is Progressing. */
function argoHealthOf(s: Summary): ArgoHealth {
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
function kstatusOf(s: Summary): KstatusResult {
  if (s.deleting) return 'Terminating';
  if (s.reconciling) return 'InProgress';
  if (s.stalled) return 'Failed';
  return s.ready ? 'Current' : 'InProgress';
}

/** Flux healthCheckExprs: the same verdicts as kstatus, with deletion reported as InProgress. */
function fluxOf(s: Summary): FluxResult {
  const k = kstatusOf(s);
  return k === 'Terminating' ? 'InProgress' : k;
}

function row(state: string, meta: StateMeta, variant: Variant): ExpectedStatus {
  const s: Summary = {
    ...summary(meta, variant === 'deadlineExceeded'),
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
    ...(variant === 'deadlineExceeded' ? { stalledReason: `${stateReason(state)}DeadlineExceeded` } : {}),
    suspended: s.suspended,
    deleting: s.deleting,
    argo: argoHealthOf(s),
    flux: fluxOf(s),
    kstatus: kstatusOf(s),
  };
}

/** One row per state, plus a deadline-exceeded row right after each state that has a deadline. */
export function expectedStatuses(machine: AnyStateMachine): ExpectedStatus[] {
  return machineStates(machine).flatMap(({ state, meta }) =>
    meta.deadline ? [row(state, meta, 'normal'), row(state, meta, 'deadlineExceeded')] : [row(state, meta, 'normal')],
  );
}
