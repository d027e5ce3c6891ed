/**
 * The verdict of a pure health check on one component (the reasons it may carry are in vocabulary.ts).
 *
 * Every check has the shape `(observation, desired) -> Health`. `Pending` means the step cannot act yet
 * (blocked or waiting for its object to appear), `Provisioning` that it is being created or changed,
 * `Configuring` that CNPG is busy with an operation on a running cluster, `Failed` that it needs a human
 * or a change of input. Only `Ready` lets the pipeline move on.
 */
export type HealthState = 'Ready' | 'Pending' | 'Provisioning' | 'Configuring' | 'Failed';

export interface Health {
  state: HealthState;
  reason: string;
  message: string;
}

export const health = (state: HealthState, reason: string, message: string): Health => ({ state, reason, message });
