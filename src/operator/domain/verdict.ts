/**
 * The verdict of a pure health check on one component (the reasons it may carry are in vocabulary.ts),
 * and the judgment that pairs it with the writes acting on it.
 *
 * `Pending` means the step cannot act yet (blocked or waiting for its object to appear), `Provisioning`
 * that it is being created or changed, `Configuring` that CNPG is busy with an operation on a running
 * cluster, `Failed` that it needs a human or a change of input. Only `Ready` lets the pipeline move on.
 */
import type { Effect } from './effects.ts';
import type { Reason } from './vocabulary.ts';

export type HealthState = 'Ready' | 'Pending' | 'Provisioning' | 'Configuring' | 'Failed';

export interface Health {
  state: HealthState;
  reason: Reason;
  message: string;
}

export const health = (state: HealthState, reason: Reason, message: string): Health => ({ state, reason, message });

/**
 * A component's judgment of one observation: its health and the writes that act on it. Every component
 * has one `judge*` function of the shape `(observation, desired) -> Judgment` that climbs its ladder
 * (missing, foreign, adoptable, drifted, …) once, each rung deciding both, so a verdict of "adopting" or
 * "updating" always comes with the write that does it, and a write never comes with "Ready".
 */
export interface Judgment {
  health: Health;
  effects: Effect[];
}

export const judgment = (verdict: Health, ...effects: Effect[]): Judgment => ({ health: verdict, effects });
