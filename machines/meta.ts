/**
 * What each state of the lifecycle machine declares about itself. Declared once, in the machine's
 * `meta`; the status projection, the path tests' oracle and the generated diagram table all read it.
 */
import type { Phase } from '../src/operator/api/schema.ts';
import type { Component } from '../src/operator/domain/vocabulary.ts';

/** `S`: the components of the machine's resource (the cluster's by default; the database machine passes its own). */
export interface StateMeta<S extends string = Component> {
  /** One-line human description, shown in the diagram table. */
  description: string;
  /** The informational `status.phase` of this state. */
  phase: Phase;
  /**
   * How component conditions are published.
   * - `pipeline`: components before `step` are True, `step` carries the state's reason, later ones are
   *   True when their own check passes and otherwise False, blocked by `step`.
   * - `observe`: every component's condition comes straight from its own check (nothing is written).
   */
  conditions: 'pipeline' | 'observe';
  /** The component whose condition explains why this state is not Ready. */
  step?: S;
  /** Summary condition `Ready`. */
  ready: boolean;
  /** kstatus `Reconciling`: work is in progress (unless the progress deadline has passed). */
  reconciling: boolean;
  /** kstatus `Stalled`: no progress without a change of input. */
  stalled: boolean;
  /** Waiting states have a progress deadline, past which `Stalled` turns True. */
  deadline: boolean;
  /**
   * When to look again: `none` (watch events only, and the periodic resync), `wait` (after the requeue
   * delay, no error). Errors of a pass decide their own retry, whatever the state.
   */
  requeue: 'none' | 'wait';
}

/**
 * The metas both machines' states are built from: one shape per kind of state, so that a waiting state, a
 * failure and a pipeline step mean the same in both (and the status projections, the same summary rule).
 */
export const meta = <S extends string>(m: StateMeta<S>) => m;

/** A state that waits for the world to move: Reconciling, with a progress deadline, polled after a delay. */
export const waitingMeta = <S extends string>(
  description: string,
  phase: StateMeta<S>['phase'],
  conditions: StateMeta<S>['conditions'],
  step?: S,
): StateMeta<S> => ({
  description,
  phase,
  conditions,
  ...(step ? { step } : {}),
  ready: false,
  reconciling: true,
  stalled: false,
  deadline: true,
  requeue: 'wait',
});

/** A waiting state of the pipeline that works on one component. */
export const stepMeta = <S extends string>(description: string, step: S) =>
  waitingMeta<S>(description, 'Provisioning', 'pipeline', step);

/** A failure: Stalled, left only when an input changes. */
export const failureMeta = <S extends string>(description: string, step: S): StateMeta<S> => ({
  description,
  phase: 'Failed',
  conditions: 'pipeline',
  step,
  ready: false,
  reconciling: false,
  stalled: true,
  deadline: false,
  // Nothing to retry: a failure is left only when an input changes (the spec, the class, a child, CNPG's
  // status), and every input is watched, so that change wakes the key (and the resync is the safety net).
  // Backing off would only read the world again and again, with the same refused write nowhere to go.
  requeue: 'none',
});
