/**
 * The summary-condition rule: what `Ready`, `Reconciling` and `Stalled` a state publishes, from its
 * meta and whether its progress deadline has passed. The status projection (src/operator/core/status.ts)
 * publishes it and the GitOps health generator documents it; both ask here.
 */
import type { Settings } from '../src/operator/domain/observation.ts';
import type { StateMeta } from './meta.ts';

export interface Summary {
  ready: boolean;
  /** Work in progress, unless the progress deadline has passed. */
  reconciling: boolean;
  /** No progress without a change of input, or past the progress deadline. */
  stalled: boolean;
}

export const summaryOf = (meta: StateMeta<string>, pastDeadline: boolean): Summary => ({
  ready: meta.ready,
  reconciling: meta.reconciling && !pastDeadline,
  stalled: meta.stalled || pastDeadline,
});

/** Whether the deadline can have passed in a state: both outcomes for a waiting state, else only "no". */
export const deadlineOutcomes = (meta: StateMeta<string>): boolean[] => (meta.deadline ? [false, true] : [false]);

interface Clock {
  meta: StateMeta<string>;
  now: number;
  /** When the machine entered the state. */
  since: number;
  settings: Pick<Settings, 'progressDeadlineMs'>;
}

/** When a waiting state's progress deadline falls; undefined for a state without one. */
export const deadlineAt = ({ meta, since, settings }: Omit<Clock, 'now'>): number | undefined =>
  meta.deadline ? since + settings.progressDeadlineMs : undefined;

export function deadlineExceeded(clock: Clock): boolean {
  const at = deadlineAt(clock);
  return at !== undefined && clock.now > at;
}

/**
 * The message a summary condition carries when it has nothing more to say than the state: `State Ready`.
 * With the `Reconciling` reason of a waiting state (`stateReason`), it is how every status names the state
 * it was written in, besides `status.state`: what lets a pass tell a stored state from one written by hand.
 */
export const stateMessage = (state: string) => `State ${state}`;

/** The reasons a state publishes, built where every reason is (the vocabulary). */
export { deadlineReason, stateReason } from '../src/operator/domain/vocabulary.ts';
