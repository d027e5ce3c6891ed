/**
 * The verdict a component's judgment passes on it (the reasons it may carry are in vocabulary.ts), and the
 * judgment that pairs it with the writes acting on it. A verdict is about one component of one cluster;
 * the GitOps health artefacts (src/tools/gitops) are about the whole PostgresCluster and are another thing.
 *
 * `Pending` means the step cannot act yet (blocked or waiting for its object to appear), `Provisioning`
 * that it is being created or changed, `Configuring` that CNPG is busy with an operation on a running
 * cluster, `Failed` that it needs a human or a change of input. Only `Ready` lets the pipeline move on.
 */
import type { OwnerReference } from '../api/schema.ts';
import type { Effect } from './effects.ts';
import { describeOwner, type Reason } from './vocabulary.ts';

export type VerdictState = 'Ready' | 'Pending' | 'Provisioning' | 'Configuring' | 'Failed';

/** `R`: the reasons of the resource judged (a PostgresCluster's by default, a PostgresDatabase's in domain/database). */
export interface Verdict<R extends string = Reason> {
  state: VerdictState;
  reason: R;
  message: string;
}

export const verdict = <R extends string = Reason>(state: VerdictState, reason: R, message: string): Verdict<R> => ({
  state,
  reason,
  message,
});

/** A child another controller holds: pgfsm never takes it over silently, so a person decides. */
export const heldByOther = (reason: Reason, what: string, owners: OwnerReference[] | undefined): Verdict =>
  verdict('Failed', reason, `${what} is controlled by ${describeOwner(owners)}`);

/**
 * A component's judgment of one observation: its verdict and the writes that act on it. Every component
 * has one `judge*` function of the shape `(observation, desired) -> Judgment` that climbs its ladder
 * (missing, foreign, adoptable, drifted, …) once, each rung deciding both, so a verdict of "adopting" or
 * "updating" always comes with the write that does it, and a write never comes with "Ready".
 */
export interface Judgment<R extends string = Reason, E = Effect> {
  verdict: Verdict<R>;
  effects: E[];
}

export const judgment = <R extends string = Reason, E = Effect>(
  passed: Verdict<R>,
  ...effects: E[]
): Judgment<R, E> => ({
  verdict: passed,
  effects,
});
