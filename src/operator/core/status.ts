/**
 * The status projection: a pure function of the machine's state (through its `meta`), the tick's
 * assessment and the previous status. Conditions are computed, never remembered, so a status can
 * never be stale, and a fresh operator computes the same status from the stored objects alone.
 */
import type { StateMeta } from '../../../machines/meta.ts';
import { deadlineExceeded, stateMessage, summaryOf } from '../../../machines/summary.ts';
import type { Condition, PostgresClusterStatus } from '../api/schema.ts';
import { type Assessment, rolesStatus } from '../domain/assessment.ts';
import { retiring } from '../domain/backup/judge.ts';
import { RESTORE_SOURCE } from '../domain/backup/names.ts';
import { BACKUPS_READY, backupStatusOf, backupsConditionOf, restoreStatusOf } from '../domain/backup/status.ts';
import { specRoles } from '../domain/components/managed-roles.ts';
import type { OwnerReference } from '../domain/objects.ts';
import type { Settings } from '../domain/observation.ts';
import type { Verdict } from '../domain/verdict.ts';
import {
  COMPONENTS,
  CONDITION_OF,
  type Component,
  deadlineReason,
  ownershipOf,
  PASSWORD_KEY,
  Reason,
  stateReason,
  waitingForReason,
} from '../domain/vocabulary.ts';

/** A write that failed in this pass, reported on the condition of the component it belonged to. */
export interface WriteFailure {
  component?: Component;
  reason: Reason;
  message: string;
}

export interface StatusInput {
  state: string;
  meta: StateMeta;
  assessment: Assessment;
  previous: PostgresClusterStatus | undefined;
  now: number;
  /** When the machine entered `state`. */
  since: number;
  settings: Settings;
  failure?: WriteFailure;
}

/** Kubernetes serialises condition times with second precision; so do we, or every pass would differ. */
export const toSeconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

export type Draft = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

export const draft = (type: string, ok: boolean, reason: string, message: string): Draft => ({
  type,
  status: ok ? 'True' : 'False',
  reason,
  message,
});

const fromHealth = (c: Component, h: Verdict): Draft =>
  draft(CONDITION_OF[c], h.state === 'Ready', h.reason, h.message);

function componentConditions(input: StatusInput): Draft[] {
  const { meta, assessment, failure } = input;
  const stepIndex = meta.step ? COMPONENTS.indexOf(meta.step) : COMPONENTS.length;
  return COMPONENTS.map((c, i) => {
    if (failure?.component === c) return draft(CONDITION_OF[c], false, failure.reason, failure.message);
    const h = assessment.health[c];
    if (!h) {
      return {
        type: CONDITION_OF[c],
        status: 'Unknown',
        reason: Reason.NotAssessed,
        message: `Cannot be judged while the spec is invalid: ${assessment.merge.ok ? '' : assessment.merge.message}`,
      };
    }
    if (meta.conditions === 'observe' || i <= stepIndex || h.state === 'Ready') return fromHealth(c, h);
    // A later step is blocked by the current one: Pending, never Failed.
    const blocker = meta.step ? CONDITION_OF[meta.step] : 'earlier steps';
    return draft(CONDITION_OF[c], false, waitingForReason(blocker), `Blocked until ${blocker} is True: ${h.message}`);
  });
}

function activeDraft(input: StatusInput, components: Draft[]): Draft | undefined {
  if (input.failure?.component) return components[COMPONENTS.indexOf(input.failure.component)];
  return input.meta.step ? components[COMPONENTS.indexOf(input.meta.step)] : undefined;
}

function summaryConditions(input: StatusInput, components: Draft[]): Draft[] {
  const { meta, state } = input;
  const active = activeDraft(input, components);
  const why = active ? active.message : stateMessage(state);
  const stalledByDeadline = deadlineExceeded(input);
  // The rule every state publishes by (machines/summary.ts); a failed write only takes Ready away.
  const summary = summaryOf(meta, stalledByDeadline);
  const failure = input.failure && !input.failure.component ? input.failure : undefined;
  const ready = summary.ready && !input.failure;
  const readyReason = ready ? Reason.AllComponentsReady : (failure?.reason ?? active?.reason ?? meta.phase);
  const readyMessage = ready ? 'Cluster is up and running' : (failure?.message ?? why);
  const { reconciling, stalled } = summary;
  const minutes = Math.round(input.settings.progressDeadlineMs / 60_000);
  return [
    draft('Ready', ready, readyReason, readyMessage),
    draft(
      'Reconciling',
      reconciling,
      reconciling ? stateReason(state) : meta.phase,
      reconciling ? why : stateMessage(state),
    ),
    stalledByDeadline
      ? draft('Stalled', true, deadlineReason(state), `No progress in ${state} for more than ${minutes} min: ${why}`)
      : draft(
          'Stalled',
          stalled,
          stalled ? (active?.reason ?? meta.phase) : meta.phase,
          stalled ? why : stateMessage(state),
        ),
  ];
}

/** Keeps `lastTransitionTime` unless the status flipped; stamps the generation on every condition. */
export function finish(
  drafts: Draft[],
  previous: Condition[] | undefined,
  generation: number,
  now: number,
): Condition[] {
  return drafts.map((d) => {
    const before = previous?.find((p) => p.type === d.type);
    const lastTransitionTime = before && before.status === d.status ? before.lastTransitionTime : toSeconds(now);
    return { ...d, observedGeneration: generation, lastTransitionTime };
  });
}

export function projectStatus(input: StatusInput): PostgresClusterStatus {
  const { assessment, previous, meta } = input;
  const { observation, config } = assessment;
  const generation = observation.cluster.metadata.generation ?? 0;
  const components = componentConditions(input);
  const conditions = finish(
    [...summaryConditions(input, components), ...components, ...backupConditions(assessment)],
    previous?.conditions,
    generation,
    input.now,
  );
  const { cnpg, secret, configMap } = observation;
  const status: PostgresClusterStatus = {
    observedGeneration: generation,
    phase: meta.phase,
    state: input.state,
    stateSince: toSeconds(input.since),
    conditions,
  };
  // Refs point consumers at objects to use: only ours (never a foreign or not-yet-adopted one), and the
  // Secret only once it holds the key the ref names.
  const ours = (object: { metadata: { ownerReferences?: OwnerReference[] } }) =>
    ownershipOf(object.metadata.ownerReferences, observation.cluster) === 'ours';
  if (cnpg && ours(cnpg)) {
    status.provisionerRef = {
      apiVersion: cnpg.apiVersion,
      kind: cnpg.kind,
      namespace: cnpg.metadata.namespace ?? observation.cluster.metadata.namespace,
      name: cnpg.metadata.name,
      ...(cnpg.metadata.uid ? { uid: cnpg.metadata.uid } : {}),
    };
    if (cnpg.status?.instances !== undefined) status.instances = cnpg.status.instances;
    if (cnpg.status?.readyInstances !== undefined) status.readyInstances = cnpg.status.readyInstances;
    if (cnpg.status?.currentPrimary) status.currentPrimary = cnpg.status.currentPrimary;
  }
  // Consumers switch to the poolers on `enabled: true`; it is absent whenever the pooler is disabled.
  if (config?.pooler) status.connectionPoolerStatus = { enabled: assessment.poolersServing };
  else if (!config && previous?.connectionPoolerStatus) status.connectionPoolerStatus = previous.connectionPoolerStatus;
  // The spec's roles: each PostgresDatabase reports on its own.
  const roles = assessment.roles && specRoles(assessment.roles);
  if (roles && (roles.roles.length > 0 || Object.keys(roles.waitingForSecret).length)) {
    status.managedRolesStatus = rolesStatus(observation, roles);
  }
  const resources: NonNullable<PostgresClusterStatus['resources']> = {};
  if (secret && ours(secret) && secret.keys.includes(PASSWORD_KEY)) {
    resources.secretRef = { name: secret.metadata.name, key: PASSWORD_KEY };
  }
  if (configMap && ours(configMap)) resources.configMapRef = { name: configMap.metadata.name };
  if (resources.secretRef || resources.configMapRef) status.resources = resources;
  Object.assign(status, backupStatuses(assessment));
  // Only the refusals that still hold: one whose object is no longer what pgfsm would send is forgotten.
  if (assessment.rejections.length > 0) status.rejectedWrites = assessment.rejections;
  return status;
}

/** `BackupsReady`, only for a backed-up cluster (or one whose restore's store is wrong): issue 36. */
function backupConditions({ backup, config }: Assessment): Draft[] {
  const condition = backup && backupsConditionOf(backup, config?.backup !== undefined);
  return condition ? [{ type: BACKUPS_READY, ...condition }] : [];
}

/**
 * `status.backup` and `status.restore`. The restore is recorded once the CNPG Cluster exists, from the source its
 * spec names (what it was created from), and kept: a restore runs once (components/cluster.ts restoreOf).
 */
function backupStatuses({ observation, config, backup }: Assessment): Partial<PostgresClusterStatus> {
  const { backup: kept, restore: restored } = observation.cluster.status ?? {};
  if (!config) return { ...(kept ? { backup: kept } : {}), ...(restored ? { restore: restored } : {}) };
  const out: Partial<PostgresClusterStatus> = {};
  const backupStatus = backupStatusOf(observation.cluster, config, backup?.health, backup?.acted);
  if (backupStatus) out.backup = backupStatus;
  // Switched off with its ScheduledBackup or store still to delete: the record stays, so the next pass reads them.
  else if (kept && retiring(backup)) out.backup = kept;
  const source = observation.cnpg?.spec?.externalClusters?.find((c) => c.name === RESTORE_SOURCE);
  const serverName = source?.plugin?.parameters?.serverName;
  const restoreStatus = restoreStatusOf(
    observation.cluster,
    config,
    serverName ? { serverName, destinationPath: '' } : undefined,
  );
  if (restoreStatus) out.restore = restoreStatus;
  return out;
}
