/** Helpers shared by the component tests: a fixture observation, its merged config and desired objects. */
import { expect } from 'vitest';
import type { PostgresClusterClass } from '../../../src/operator/api/schema.ts';
import { type MergedConfig, type MergeResult, mergeConfig } from '../../../src/operator/domain/config.ts';
import type { Effect, KubeEvent } from '../../../src/operator/domain/effects.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { type Facts, healthyFacts, makeClass, observe } from '../../../src/tools/fixtures/observations.ts';

/** An observation of the world `facts` describe (healthy unless overridden). */
export const world = (facts: Partial<Facts> = {}): Observation => observe({ ...healthyFacts, ...facts });

/** The merged config of an observation; fails the test when the fixture's config is invalid. */
export function configOf(observation: Observation): MergedConfig {
  const merged = mergeConfig(observation);
  if (!merged.ok) throw new Error(`fixture config invalid: ${merged.message}`);
  return merged.config;
}

/** The observation with its class replaced. */
export const withClass = (observation: Observation, clusterClass: PostgresClusterClass): Observation => ({
  ...observation,
  clusterClass,
});

export { makeClass };

/** The event an effect reports; fails when there is none. */
export function eventOf(effect: Effect | undefined): KubeEvent {
  expect(effect).toBeDefined();
  const event = effect?.event;
  if (!event) throw new Error(`effect ${JSON.stringify(effect)} carries no event`);
  return event;
}

/** The effect of the given type; narrows the union for assertions. */
export function effectOfType<T extends Effect['type']>(effects: Effect[], type: T): Extract<Effect, { type: T }>[] {
  return effects.filter((e): e is Extract<Effect, { type: T }> => e.type === type);
}

/** The merged config of a merge that must succeed. */
export function config(result: MergeResult) {
  if (!result.ok) throw new Error(`expected a valid config, got: ${result.message}`);
  return result.config;
}

/** The refusal of a merge that must fail; its message always names the field. */
export function invalid(result: MergeResult) {
  if (result.ok) throw new Error(`expected an invalid config, got ${JSON.stringify(result.config)}`);
  expect(result.message.startsWith(`${result.field}: `)).toBe(true);
  return result;
}
