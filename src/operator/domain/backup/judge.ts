/**
 * The judgment of a cluster's backup objects on one tick (issue 36): which of the ObjectStores, the ScheduledBackup
 * and the on-demand Backup to write, and what keeps backups from working. Pure, over the observation
 * (domain/backup/observation.ts), the merged config and the tick's time; the statechart plans the writes in its
 * Restore step (the source store), its Cluster step (the cluster's own store, ahead of the CNPG Cluster, so the
 * plugin finds it) and in Ready (the ScheduledBackup and the on-demand Backup, once the cluster is healthy).
 *
 * Every object is a child like a Pooler: created when missing, repaired when ours and drifted, adopted only when
 * handed over (`pgfsm.io/adopt`), never touched when someone else's.
 */
import type { MergedConfig } from '../config.ts';
import { type Effect, type KubeEvent, normal } from '../effects.ts';
import { holds } from '../holds.ts';
import { type KubeObject, refOf } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { EventReason, mayAdopt, notAdoptableMessage, ownershipOf, Reason } from '../vocabulary.ts';
import { storeSecretsProblem } from './credentials.ts';
import { type BackupHealth, backupHealth } from './health.ts';
import {
  type BackupProgress,
  type BackupRequest,
  backupProgress,
  backupRequestOf,
  desiredOnDemandBackup,
} from './on-demand.ts';
import type { RestoreResolution } from './recovery.ts';
import { desiredScheduledBackup } from './schedule.ts';
import { archiveOf, desiredObjectStore, desiredSourceStore } from './store.ts';

export interface BackupProblem {
  reason: Reason;
  message: string;
}

export interface BackupAssessment {
  /** Present when the cluster is backed up: its archive's health as CNPG and the plugin report it. */
  health?: BackupHealth;
  request: BackupRequest;
  /** The Backup of the current token, as CNPG reports it. */
  progress: BackupProgress;
  /** The on-demand request whose Backup exists: the status records its token, so it is acted on once. */
  acted?: { token: string; backup: string };
  /** The restore source's store, to write before the CNPG Cluster is created. */
  sourceStore: Effect[];
  /** The cluster's own store, written with (before) the CNPG Cluster. */
  store: Effect[];
  /**
   * The ScheduledBackup and the on-demand Backup, written once the CNPG Cluster is healthy; for a cluster whose
   * backups were switched off, the deletion of its ScheduledBackup and ObjectStore (retiredObjects).
   */
  schedule: Effect[];
  /** The first thing that keeps backups (or the restore) from working, naming the field or the object. */
  problem?: BackupProblem;
  /**
   * A store of pgfsm's name that is not this cluster's (someone else's, or ownerless and not handed over): the CNPG
   * Cluster must not be created pointing at it (its WAL would go where that store says), nor restored through it.
   */
  blocked?: { store?: BackupProblem; sourceStore?: BackupProblem };
  /**
   * While a base backup runs (the on-demand Backup, or CNPG's LastBackupSucceeded says one started): look again
   * then. The Backup and the plugin's ObjectStore are not watched, and CNPG's condition may not change at the
   * end (True before, True after), so without it the new backup and the recoverability window would reach the
   * status only on a later wake.
   */
  recheckAt?: number;
}

/** How often a pass looks at a running backup: short beside a backup, cheap (three reads). */
export const BACKUP_POLL_MS = 5_000;

/**
 * How long an on-demand Backup may stay `pending` (not started by CloudNativePG) before BackupsReady says so: CNPG
 * can leave one pending for good (issue #10778: no healthy primary to take it from, the plugin unreachable), with no
 * sign of its own. Past it, the pass looks at it once a minute rather than every 5 s.
 */
export const BACKUP_PENDING_DEADLINE_MS = 10 * 60_000;
const STUCK_POLL_MS = 60_000;

/** The on-demand Backup pending past the deadline: the problem to report, or undefined. */
function stuckBackup(
  progress: BackupProgress,
  name: string,
  namespace: string,
  now: number,
): BackupProblem | undefined {
  if (progress.state !== 'running' || progress.phase !== 'pending' || !progress.since) return undefined;
  if (now - Date.parse(progress.since) <= BACKUP_PENDING_DEADLINE_MS) return undefined;
  return {
    reason: Reason.BackupPending,
    message:
      `Backup ${name} pending since ${progress.since}: CloudNativePG has not started it (it needs a healthy ` +
      `primary and the plugin; kubectl describe backup.postgresql.cnpg.io -n ${namespace} ${name} says why). To ` +
      'ask again, delete it and annotate pgfsm.io/backup-now with a new token',
  };
}

/**
 * One object's rung of the ladder: missing or ours and drifted, write it; orphaned and handed over, adopt it;
 * foreign or not handed over, a problem and no write. `update`: whether a drifted object of ours is written again
 * (a Backup is not: it is a one-off request, and CNPG refuses changes to its spec).
 */
function judgeObject(
  observation: Observation,
  desired: KubeObject,
  live: KubeObject | undefined,
  event: KubeEvent,
  update = true,
): { effects: Effect[]; problem?: BackupProblem } {
  const apply: Effect = { type: 'apply', component: 'cluster', object: desired, event };
  if (!live) return { effects: [apply] };
  const kind = desired.kind;
  const what = `${kind} ${desired.metadata.name}`;
  const ownership = ownershipOf(live.metadata.ownerReferences, observation.cluster);
  if (ownership === 'foreign') {
    const owner = (live.metadata.ownerReferences ?? []).find((o) => o.controller);
    return {
      effects: [],
      problem: {
        reason: Reason.BackupObjectNotAdoptable,
        message: `${what} is controlled by ${owner?.kind}/${owner?.name}`,
      },
    };
  }
  if (ownership === 'orphan' && !mayAdopt(live.metadata)) {
    const message = notAdoptableMessage(what, kind, live.metadata, observation.cluster);
    return { effects: [], problem: { reason: Reason.BackupObjectNotAdoptable, message } };
  }
  if (ownership === 'orphan') return { effects: [apply] };
  return { effects: update && !holds(live, desired) ? [apply] : [] };
}

const configured = (what: string): KubeEvent =>
  normal(EventReason.BackupConfigured, 'ConfigureBackup', `${what} applied`);

/**
 * A cluster whose backups were switched off (`backup.enabled: false`, or a class without a policy) deletes the
 * ScheduledBackup it controls, which would otherwise go on asking for a Backup every day that CloudNativePG can
 * only fail, and then its ObjectStore, once the CNPG Cluster no longer names it (the plugin entry goes with the
 * Cluster step, so the sidecar is not left reading a store that is gone). Neither holds backup data: the archive
 * stays in the bucket, restorable by its server name, and the Backup objects stay as the record of what was taken.
 */
function retiredObjects(observation: Observation): Effect[] {
  const { cluster, cnpg } = observation;
  const ours = (object: KubeObject | undefined): object is KubeObject =>
    object !== undefined && ownershipOf(object.metadata.ownerReferences, cluster) === 'ours';
  const retire = (object: KubeObject): Effect => ({
    type: 'delete',
    component: 'cluster',
    ref: refOf(object),
    event: normal(
      EventReason.BackupConfigured,
      'ConfigureBackup',
      `${object.kind} ${object.metadata.name} deleted: backups are switched off (the archive stays in the bucket)`,
    ),
  });
  const { scheduled, store } = observation.backup ?? {};
  const named = (name: string) =>
    (cnpg?.spec?.plugins ?? []).some((plugin) => plugin.parameters?.barmanObjectName === name);
  return [
    ...(ours(scheduled) ? [retire(scheduled)] : []),
    ...(ours(store) && !named(store.metadata.name) ? [retire(store)] : []),
  ];
}

/** The deletions of a switched-off cluster's backup objects still to do: its status keeps its archive till then. */
export const retiring = (judged: BackupAssessment | undefined): boolean =>
  (judged?.schedule ?? []).some((effect) => effect.type === 'delete');

/**
 * `restore`: the restore judged on this tick (components/cluster.ts restoreOf), undefined when none is to run.
 * Undefined when the cluster is neither backed up nor restoring: nothing of it changes then.
 */
export function judgeBackups(
  observation: Observation,
  config: MergedConfig,
  now: number,
  restore?: RestoreResolution,
): BackupAssessment | undefined {
  const { cluster } = observation;
  const seen = observation.backup;
  const request = backupRequestOf(cluster, config);
  const retired = config.backup ? [] : retiredObjects(observation);
  if (!config.backup && !config.restore) {
    // Not backed up: nothing to judge but what is left of the backups it had, and a token asking for a backup
    // anyway, which is refused and said so.
    if (request.kind !== 'refused' && retired.length === 0) return undefined;
    const problem =
      request.kind === 'refused' ? { problem: { reason: Reason.BackupRequestRefused, message: request.message } } : {};
    return { request, progress: { state: 'absent' }, sourceStore: [], store: [], schedule: retired, ...problem };
  }
  const progress = backupProgress(seen?.onDemand);
  const result: BackupAssessment = { request, progress, sourceStore: [], store: [], schedule: [...retired] };
  const problems: BackupProblem[] = [];
  const blocked: NonNullable<BackupAssessment['blocked']> = {};
  const take = (
    into: Effect[],
    judged: { effects: Effect[]; problem?: BackupProblem },
    which?: 'store' | 'sourceStore',
  ) => {
    into.push(...judged.effects);
    if (judged.problem) problems.push(judged.problem);
    if (judged.problem && which) blocked[which] = judged.problem;
  };
  const store = config.backup?.store ?? config.restore?.store;
  const clusterClass = observation.clusterClass;
  const secrets =
    store && clusterClass
      ? storeSecretsProblem(clusterClass, cluster.metadata.namespace, store, seen?.secrets ?? {})
      : undefined;
  if (secrets) problems.push({ reason: Reason.BackupStoreMisconfigured, message: secrets.message });
  if (restore?.ok && config.restore) {
    const desired = desiredSourceStore(cluster, config.restore.store, restore.source.destinationPath);
    take(
      result.sourceStore,
      judgeObject(
        observation,
        desired,
        seen?.sourceStore,
        configured(`ObjectStore ${desired.metadata.name} (the restore source's archive, read only)`),
      ),
      'sourceStore',
    );
  }
  if (config.backup) {
    const desired = desiredObjectStore(cluster, config.backup);
    take(
      result.store,
      judgeObject(observation, desired, seen?.store, configured(`ObjectStore ${desired.metadata.name}`)),
      'store',
    );
    const scheduled = desiredScheduledBackup(cluster, config.backup);
    take(
      result.schedule,
      judgeObject(
        observation,
        scheduled,
        seen?.scheduled,
        configured(`ScheduledBackup ${scheduled.metadata.name} (${config.backup.schedule} UTC)`),
      ),
    );
    if (request.kind === 'new') {
      const backup = desiredOnDemandBackup(cluster, request.backup);
      const asked = normal(
        EventReason.BackupRequested,
        'RequestBackup',
        `Backup ${request.backup} requested (pgfsm.io/backup-now ${request.token})`,
      );
      take(result.schedule, judgeObject(observation, backup, seen?.onDemand, asked, false));
      if (seen?.onDemand && ownershipOf(seen.onDemand.metadata.ownerReferences, cluster) === 'ours') {
        result.acted = { token: request.token, backup: request.backup };
      }
    }
    result.health = backupHealth({
      serverName: archiveOf(cluster, config.backup.store).serverName,
      ...(seen?.store ? { store: seen.store } : {}),
      ...(observation.cnpg ? { cnpg: observation.cnpg } : {}),
      now,
    });
  }
  if (request.kind === 'refused') problems.push({ reason: Reason.BackupRequestRefused, message: request.message });
  const stuck = seen?.onDemand
    ? stuckBackup(progress, seen.onDemand.metadata.name, cluster.metadata.namespace, now)
    : undefined;
  if (stuck) problems.push(stuck);
  if (progress.state === 'running' || result.health?.lastBackup.outcome === 'running') {
    result.recheckAt = now + (stuck ? STUCK_POLL_MS : BACKUP_POLL_MS);
  }
  const [problem] = problems;
  if (blocked.store || blocked.sourceStore) result.blocked = blocked;
  return problem ? { ...result, problem } : result;
}
