/**
 * The assessment of one tick: every component's judgment (its verdict and its plan), computed once per
 * observation. Guards, actions and the status projection all read it, so they can never disagree about the world.
 */

import { type BackupAssessment, judgeBackups } from './backup/judge.ts';
import type { RestoreResolution } from './backup/recovery.ts';
import { desiredCnpgCluster, judgeCnpgCluster, restoreOf, takeUpEndsAt } from './components/cluster.ts';
import { desiredConfigMap, judgeConfigMap } from './components/configmap.ts';
import {
  type DesiredRoles,
  databaseRolesPush,
  desiredRoles,
  judgeManagedRoles,
  rolesStatus,
} from './components/managed-roles.ts';
import { judgePoolers, POOLER_TYPES } from './components/pooler.ts';
import { judgeSecret } from './components/secret.ts';
import { type MergedConfig, type MergeResult, mergeConfig, namedClass } from './config.ts';
import type { Effect } from './effects.ts';
import type { Observation, Settings, TickEvent } from './observation.ts';
import { type RejectedWrite, withoutRefusedWrites } from './rejections.ts';
import { type Judgment, type Verdict, verdict } from './verdict.ts';
import { COMPONENTS, type Component, FINALIZER, Reason } from './vocabulary.ts';

export interface Assessment {
  observation: Observation;
  merge: MergeResult;
  /** Present when the merged config is valid. */
  config?: MergedConfig;
  roles?: DesiredRoles;
  /** The verdict on each component that can be judged; absent when its inputs are invalid. */
  health: Partial<Record<Component, Verdict>>;
  /** The writes each component's judgment asks for, decided with its verdict. */
  plans: Record<Component, Effect[]>;
  poolersServing: boolean;
  /** The stored refusals that still hold: the same object would be sent again (kept in the status). */
  rejections: RejectedWrite[];
  /** The push of PostgresDatabases' roles, when only theirs differ (components/managed-roles.ts). */
  databaseRolesPush: Effect[];
  /** The backup objects' judgment (domain/backup/judge.ts): absent unless the cluster is backed up or restores. */
  backup?: BackupAssessment;
  /** The restore judged on this tick: absent unless one is to run (no CNPG Cluster yet). */
  restore?: RestoreResolution;
  /**
   * When a verdict will change by time alone (the wait for CNPG to take up pgfsm's write), or when a running backup
   * is to be looked at again (its objects are not watched): look again then.
   */
  recheckAt?: number;
}

const cache = new WeakMap<Observation, Map<Settings, { now: number; assessment: Assessment }>>();

/** Memoised per (observation, settings) object pair and tick time: guards call it many times per tick. */
export function assessTick(event: TickEvent): Assessment {
  let bySettings = cache.get(event.observation);
  if (!bySettings) {
    bySettings = new Map();
    cache.set(event.observation, bySettings);
  }
  const known = bySettings.get(event.settings);
  if (known && known.now === event.now) return known.assessment;
  const assessment = assess(event.observation, event.settings, event.now);
  bySettings.set(event.settings, { now: event.now, assessment });
  return assessment;
}

/** `now`: the tick's time, which only the wait for CNPG to take up pgfsm's own write reads. */
export function assess(observation: Observation, settings: Settings, now: number): Assessment {
  const merge = mergeConfig(observation);
  const secret = judgeSecret(observation);
  if (!merge.ok) {
    const classMissing = !observation.clusterClass && namedClass(observation.cluster) !== undefined;
    const reason = classMissing ? Reason.ClusterClassNotFound : Reason.InvalidConfiguration;
    return {
      observation,
      merge,
      health: { secret: secret.verdict, cluster: verdict('Failed', reason, merge.message) },
      plans: { secret: secret.effects, cluster: [], managedRoles: [], pooler: [], configMap: [] },
      poolersServing: false,
      rejections: [],
      databaseRolesPush: [],
    };
  }
  const config = merge.config;
  const roles = desiredRoles(observation, config);
  const restore = restoreOf(observation, config, now);
  const backup = judgeBackups(observation, config, now, restore);
  const judged: Record<Component, Judgment> = {
    secret,
    cluster: notPointingAtAnotherStore(
      judgeCnpgCluster(observation, desiredCnpgCluster(observation, config, restore), now, restore),
      observation,
      backup,
    ),
    managedRoles: judgeManagedRoles(observation, roles),
    pooler: judgePoolers(observation, config),
    configMap: judgeConfigMap(
      observation,
      desiredConfigMap(observation, config, settings),
      config.pooler !== undefined,
    ),
  };
  // A write the API server refused is not sent again while it would be the same object.
  const stored = observation.cluster.status?.rejectedWrites ?? [];
  const rejections: RejectedWrite[] = [];
  const judgments = mapComponents(judged, (j, c) => {
    const { judgment, used } = withoutRefusedWrites(c, j, stored);
    rejections.push(...used);
    return judgment;
  });
  return {
    observation,
    merge,
    config,
    roles,
    ...(backup ? { backup } : {}),
    ...(restore ? { restore } : {}),
    health: mapComponents(judgments, (j) => j.verdict),
    plans: mapComponents(judgments, (j) => j.effects),
    // The pooler's own judgment, before refusals are taken out: what `poolersServing` asks.
    poolersServing: config.pooler !== undefined && judged.pooler.verdict.state === 'Ready',
    rejections,
    databaseRolesPush: judgments.managedRoles.verdict.state === 'Failed' ? [] : databaseRolesPush(observation, roles),
    ...recheck(earliest(observation.cnpg ? takeUpEndsAt(observation.cnpg, now) : undefined, backup?.recheckAt)),
  };
}

const recheck = (at: number | undefined) => (at === undefined ? {} : { recheckAt: at });
const earliest = (...times: (number | undefined)[]) => {
  const known = times.filter((t): t is number => t !== undefined);
  return known.length > 0 ? Math.min(...known) : undefined;
};

const mapComponents = <T>(
  judgments: Record<Component, Judgment>,
  pick: (j: Judgment, c: Component) => T,
): Record<Component, T> =>
  Object.fromEntries(COMPONENTS.map((c) => [c, pick(judgments[c], c)])) as Record<Component, T>;

export const isReady = (a: Assessment, c: Component) => a.health[c]?.state === 'Ready';
export const isFailed = (a: Assessment, c: Component) => a.health[c]?.state === 'Failed';
/** CNPG is busy with an operation on the component, which is otherwise as pgfsm wants it. */
export const isBusy = (a: Assessment, c: Component) => a.health[c]?.state === 'Configuring';
/** The CNPG Cluster's update goes in steps CNPG accepts one at a time (components/cluster-steps.ts). */
export const clusterUpdateInSteps = (a: Assessment) => a.health.cluster?.reason === Reason.CNPGClusterUpdatingInSteps;

/**
 * The Poolers' creates, planned ahead of their own step: once the CNPG Cluster exists (and is ours: a foreign
 * one fails the cluster step), PgBouncer starts while PostgreSQL does, as when a user applies a CNPG Cluster and
 * its Poolers together; it waits for its server by itself. Waiting for the cluster first cost an application about
 * 3 s more to its first query through the pooler (npm run bench:node). Only creates of missing Poolers: an
 * update or a removal is the Pooler step's, in its turn, and so is everything once the cluster step is Ready.
 */
export function poolersAhead(a: Assessment): Effect[] {
  // A Ready cluster step passes on to the Pooler step in the same tick, which plans them itself.
  if (!a.observation.cnpg || isReady(a, 'cluster') || isFailed(a, 'cluster') || !a.config?.pooler) return [];
  const present = new Set(POOLER_TYPES.map((type) => a.observation.poolers[type]?.pooler.metadata.name));
  return a.plans.pooler.filter((e) => e.type === 'apply' && !present.has(e.object.metadata.name));
}

export const finalizerPresent = (o: Observation) => (o.cluster.metadata.finalizers ?? []).includes(FINALIZER);
export const deletionRequested = (o: Observation) => Boolean(o.cluster.metadata.deletionTimestamp);
export const suspendRequested = (o: Observation) => o.cluster.spec?.suspend === true;

export { rolesStatus };

/**
 * A restore still to wait for before the CNPG Cluster may be created: its source not resolved yet while the world may
 * still change it (the cluster step's verdict says why), its store not as wanted yet, or a store of its name that is
 * not ours. A restore that needs a person (`wait: false`) is not waited for: the cluster step fails it.
 */
export const restoreWaiting = (a: Assessment): boolean =>
  a.restore !== undefined &&
  ((!a.restore.ok && a.restore.wait) ||
    (a.backup?.sourceStore.length ?? 0) > 0 ||
    a.backup?.blocked?.sourceStore !== undefined);

/**
 * A CNPG Cluster not created yet is not created pointing at a store of pgfsm's name that is not this cluster's: its
 * WAL would go wherever that store says. The cluster step fails instead, naming the store and the hand-over.
 */
function notPointingAtAnotherStore(
  judged: Judgment,
  observation: Observation,
  backup: BackupAssessment | undefined,
): Judgment {
  const store = backup?.blocked?.store;
  if (!store || observation.cnpg) return judged;
  return { verdict: verdict('Failed', store.reason, store.message), effects: [] };
}

/** The backup objects a Ready cluster still has to write (its store drifted, the ScheduledBackup, a request). */
export const backupWrites = (a: Assessment): Effect[] =>
  a.backup && isReady(a, 'cluster') ? [...a.backup.store, ...a.backup.schedule] : [];
