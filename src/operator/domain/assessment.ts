/**
 * The assessment of one tick: every component's health check and plan, computed once per observation.
 * Guards, actions and the status projection all read it, so they can never disagree about the world.
 */

import { checkCnpgCluster, desiredCnpgCluster, isCnpgOperational, planCnpgCluster } from './components/cluster.ts';
import { checkConfigMap, desiredConfigMap, planConfigMap } from './components/configmap.ts';
import {
  checkManagedRoles,
  type DesiredRoles,
  desiredRoles,
  planManagedRoles,
  rolesStatus,
} from './components/managed-roles.ts';
import { checkPoolers, planPoolers, poolersServing } from './components/pooler.ts';
import { checkSecret, planSecret } from './components/secret.ts';
import { type MergedConfig, type MergeResult, mergeConfig } from './config.ts';
import type { Effect } from './effects.ts';
import type { Observation, Settings, TickEvent } from './observation.ts';
import { type Health, health } from './verdict.ts';
import { type Component, FINALIZER, Reason } from './vocabulary.ts';

export interface Assessment {
  observation: Observation;
  merge: MergeResult;
  /** Present when the merged config is valid. */
  config?: MergedConfig;
  roles?: DesiredRoles;
  /** Health of each component that can be judged; a component is absent when its inputs are invalid. */
  health: Partial<Record<Component, Health>>;
  plans: Record<Component, Effect[]>;
  cnpgOperational: boolean;
  poolersServing: boolean;
}

const cache = new WeakMap<Observation, Map<Settings, Assessment>>();

/** Memoised per (observation, settings) object pair: guards call it many times per tick. */
export function assessTick(event: TickEvent): Assessment {
  let bySettings = cache.get(event.observation);
  if (!bySettings) {
    bySettings = new Map();
    cache.set(event.observation, bySettings);
  }
  let result = bySettings.get(event.settings);
  if (!result) {
    result = assess(event.observation, event.settings);
    bySettings.set(event.settings, result);
  }
  return result;
}

export function assess(observation: Observation, settings: Settings): Assessment {
  const merge = mergeConfig(observation);
  const secretHealth = checkSecret(observation);
  const secretPlan = planSecret(observation);
  if (!merge.ok) {
    const reason = observation.clusterClass ? Reason.InvalidConfiguration : Reason.ClusterClassNotFound;
    return {
      observation,
      merge,
      health: { secret: secretHealth, cluster: health('Failed', reason, merge.message) },
      plans: { secret: secretPlan, cluster: [], managedRoles: [], pooler: [], configMap: [] },
      cnpgOperational: false,
      poolersServing: false,
    };
  }
  const config = merge.config;
  const cnpg = desiredCnpgCluster(observation, config);
  const roles = desiredRoles(observation, config);
  const configMap = desiredConfigMap(observation, config, settings);
  return {
    observation,
    merge,
    config,
    roles,
    health: {
      secret: secretHealth,
      cluster: checkCnpgCluster(observation, cnpg),
      managedRoles: checkManagedRoles(observation, roles),
      pooler: checkPoolers(observation, config),
      configMap: checkConfigMap(observation, configMap),
    },
    plans: {
      secret: secretPlan,
      cluster: planCnpgCluster(observation, cnpg),
      managedRoles: planManagedRoles(observation, roles),
      pooler: planPoolers(observation, config),
      configMap: planConfigMap(observation, configMap),
    },
    cnpgOperational: isCnpgOperational(observation),
    poolersServing: poolersServing(observation, config),
  };
}

export const isReady = (a: Assessment, c: Component) => a.health[c]?.state === 'Ready';
export const isFailed = (a: Assessment, c: Component) => a.health[c]?.state === 'Failed';

export const finalizerPresent = (o: Observation) => (o.cluster.metadata.finalizers ?? []).includes(FINALIZER);
export const deletionRequested = (o: Observation) => Boolean(o.cluster.metadata.deletionTimestamp);
export const suspendRequested = (o: Observation) => o.cluster.spec?.suspend === true;

export { rolesStatus };
