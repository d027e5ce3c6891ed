/** The CNPG Cluster: built from the merged config, repaired on drift of the fields pgfsm owns. */
import { CNPG_CLUSTER_LABEL } from '../../api/cnpg-rules.ts';
import { type RestoreResolution, recoveryOf, resolveRestore } from '../backup/recovery.ts';
import { pluginsOf } from '../backup/store.ts';
import type { MergedConfig } from '../config.ts';
import { type Effect, type KubeEvent, normal } from '../effects.ts';
import { holds } from '../holds.ts';
import { CNPG_API_VERSION, type CnpgCluster, type CnpgClusterSpec, type ObjectRef } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { ownedFieldsAnnotation, ownedFieldsOf, ownedKeysAnnotation, ownedMapDrifted } from '../owned-keys.ts';
import { heldByOther, type Judgment, judgment, type Verdict, verdict } from '../verdict.ts';
import {
  childLabels,
  childNames,
  EventReason,
  mayAdopt,
  notAdoptableMessage,
  ownerReferenceTo,
  ownershipOf,
  Reason,
  SUPERUSER_NAME,
} from '../vocabulary.ts';

export { OWNED_PARAMETERS_ANNOTATION } from '../owned-keys.ts';

import { sameQuantity } from '../quantity.ts';
import { type Steps, stepsOf } from './cluster-steps.ts';
import { meaningOfPhase } from './cnpg-phases.ts';

export const POSTGRES_IMAGE = 'ghcr.io/cloudnative-pg/postgresql';

/**
 * When pgfsm last changed the CNPG Cluster's spec: the shell stamps it on every write of the cluster component
 * (core/execute.ts), with its own clock, as milliseconds since the epoch.
 *
 * Why: CloudNativePG (1.28 to 1.30.1) says nothing about which generation of a Cluster its status describes —
 * no `status.observedGeneration`, and its `Ready` condition is set without one — so right after a write its
 * status is the old spec's, often "healthy". Believing it gave a Ready 38 ms after an adoption that CNPG then
 * undid with "Applying configuration".
 */
export const SPEC_WRITTEN_AT_ANNOTATION = 'pgfsm.io/spec-written-at';

/**
 * How long after its own write pgfsm does not believe a healthy CNPG status. CNPG's instance manager reports
 * "Applying configuration" within about 2 s of a change it must apply (measured on the real node); a change
 * it takes up without a word (a resource it only records) ends the wait when it runs out.
 */
export const CNPG_TAKE_UP_MS = 5_000;

/** When the wait for CNPG to take up pgfsm's last write ends, if it has not yet; a stamp from the future is ignored. */
export function takeUpEndsAt(cnpg: CnpgCluster, now: number): number | undefined {
  const stamp = Number(cnpg.metadata.annotations?.[SPEC_WRITTEN_AT_ANNOTATION]);
  if (!Number.isFinite(stamp) || stamp > now + CNPG_TAKE_UP_MS) return undefined;
  const ends = stamp + CNPG_TAKE_UP_MS;
  return ends > now ? ends : undefined;
}

export const cnpgRef = (observation: Observation): ObjectRef => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Cluster',
  namespace: observation.cluster.metadata.namespace,
  name: childNames(observation.cluster.metadata.name).cnpgCluster,
});

/**
 * The restore a CNPG Cluster not created yet starts from, judged on the tick's world (its time, the source cluster);
 * undefined when there is none to judge: no restore asked for, or the CNPG Cluster exists already.
 */
export function restoreOf(observation: Observation, config: MergedConfig, now: number): RestoreResolution | undefined {
  if (!config.restore || observation.cnpg) return undefined;
  const done = observation.cluster.status?.restore;
  if (done) {
    // A restore runs once: starting again from the source would drop everything written since.
    const own = observation.cluster.status?.backup?.serverName;
    return {
      ok: false,
      field: 'spec.restore',
      message:
        `spec.restore: this cluster was restored from ${done.serverName} and its CNPG Cluster is gone; pgfsm does not ` +
        'restore it again from the source, which would drop everything written since. Create a new PostgresCluster ' +
        `that restores from ${own ? `this cluster's own archive (restore.source.serverName: ${own})` : 'the archive you need'}`,
      wait: false,
    };
  }
  const world = { cluster: observation.cluster, now };
  const source = observation.restoreSource;
  return resolveRestore(config.restore, source ? { ...world, sourceCluster: source } : world);
}

/**
 * `restore`: the judged restore (restoreOf) of a cluster that asks for one. Without a resolved one such a cluster
 * gets no bootstrap at all, never initdb, and judgeCnpgCluster does not create it: an empty database where a
 * restored one was asked for would look like data lost.
 */
export function desiredCnpgCluster(
  observation: Observation,
  config: MergedConfig,
  restore?: RestoreResolution,
): CnpgCluster {
  const { cluster } = observation;
  const names = childNames(cluster.metadata.name);
  const spec: CnpgClusterSpec = {
    instances: config.instances,
    imageName: config.imageName ?? `${POSTGRES_IMAGE}:${config.postgresVersion}`,
    primaryUpdateMethod: config.primaryUpdateMethod,
    postgresql: { parameters: config.postgresqlConfig, pg_hba: config.pgHBA },
    superuserSecret: { name: names.secret },
    enableSuperuserAccess: true,
    storage: { size: config.storage, ...(config.storageClass ? { storageClass: config.storageClass } : {}) },
    resources: config.resources,
  };
  // The day-one fields, only when set: a cluster using none sends what it always sent.
  if (config.walStorage) spec.walStorage = { ...config.walStorage };
  if (config.affinity) spec.affinity = structuredClone(config.affinity);
  if (config.topologySpreadConstraints) {
    // A constraint without a selector counts this cluster's instances, by the label CNPG gives them.
    const own = { matchLabels: { [CNPG_CLUSTER_LABEL]: names.cnpgCluster } };
    spec.topologySpreadConstraints = config.topologySpreadConstraints.map((constraint) => ({
      ...structuredClone(constraint),
      labelSelector: structuredClone(constraint.labelSelector) ?? own,
    }));
  }
  if (config.monitoring) spec.monitoring = { ...config.monitoring };
  if (config.backup) spec.plugins = pluginsOf(cluster, config.backup);
  Object.assign(spec, bootstrapOf(observation, config, restore));
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Cluster',
    metadata: {
      name: names.cnpgCluster,
      namespace: cluster.metadata.namespace,
      labels: childLabels(cluster.metadata.name),
      annotations: { ...ownedKeysAnnotation(config.postgresqlConfig), ...ownedFieldsAnnotation(dayOneFields(spec)) },
      ownerReferences: [ownerReferenceTo(cluster)],
    },
    spec,
  };
}

/**
 * CNPG reads `bootstrap` only to initialise a new cluster. pgfsm sets it on creation and afterwards applies what
 * the cluster already has, so adopting one (whose bootstrap named another Secret, or came from a backup) never asks
 * CNPG to change how a running database was once created. A restored cluster's externalClusters go the same way:
 * CNPG refuses a recovery source that names no external cluster, so the entry stays as long as the bootstrap does.
 */
function bootstrapOf(
  observation: Observation,
  config: MergedConfig,
  restore: RestoreResolution | undefined,
): Pick<CnpgClusterSpec, 'bootstrap' | 'externalClusters'> {
  const created = observation.cnpg?.spec;
  if (observation.cnpg) {
    return {
      ...(created?.bootstrap ? { bootstrap: created.bootstrap } : {}),
      ...(config.restore && created?.externalClusters ? { externalClusters: created.externalClusters } : {}),
    };
  }
  if (config.restore) return restore?.ok ? recoveryOf(observation.cluster, config.restore, restore.source) : {};
  const secret = childNames(observation.cluster.metadata.name).secret;
  return { bootstrap: { initdb: { database: 'postgres', owner: SUPERUSER_NAME, secret: { name: secret } } } };
}

const sameQuantities = (a: Record<string, string> = {}, b: Record<string, string> = {}) =>
  Object.keys({ ...a, ...b }).every((k) => sameQuantity(a[k], b[k]));

/**
 * The optional fields pgfsm owns on the CNPG Cluster once it sends them, by path, in the order drift names them:
 * storage class, WAL volume, the affinity subset, topology spread, monitoring. Every other optional field of the
 * CNPG Cluster (spec.backup, spec.affinity.nodeAffinity, …) is the user's: pgfsm neither sends nor compares it.
 */
const DAY_ONE_FIELDS = [
  'storage.storageClass',
  'walStorage',
  'walStorage.storageClass',
  'affinity.enablePodAntiAffinity',
  'affinity.topologyKey',
  'affinity.podAntiAffinityType',
  'affinity.nodeSelector',
  'affinity.tolerations',
  'topologySpreadConstraints',
  'monitoring.enablePodMonitor',
  // The whole list: CNPG's plugins list is atomic, so server-side apply gives it one owner (domain/backup/store.ts).
  'plugins',
] as const;

const at = (spec: CnpgClusterSpec, path: string): unknown =>
  path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], spec);

/** The day-one fields a CNPG Cluster spec pgfsm built carries. */
const dayOneFields = (spec: CnpgClusterSpec) => DAY_ONE_FIELDS.filter((path) => at(spec, path) !== undefined);

/**
 * The day-one fields that drifted: one pgfsm sends and does not find as sent (others may add to it: CNPG's
 * defaults, such as podAntiAffinityType), or one it sent before (OWNED_FIELDS_ANNOTATION) and no longer sends
 * that is still there. A field set by someone else that pgfsm never sent is theirs, and no drift.
 */
function dayOneDrift(observed: CnpgCluster, o: CnpgClusterSpec, d: CnpgClusterSpec): string[] {
  const sentBefore = ownedFieldsOf(observed.metadata.annotations);
  const sendingNow = new Set(dayOneFields(d));
  const drift = DAY_ONE_FIELDS.filter((path) => {
    const want = at(d, path);
    const have = at(o, path);
    if (want === undefined) return sentBefore.has(path) && have !== undefined;
    if (path === 'walStorage') {
      const wal = want as { size?: string };
      return !sameQuantity((have as { size?: string } | undefined)?.size, wal.size);
    }
    return !holds(have, want);
  });
  // What pgfsm owns changed without a value to repair (a field gone already): the annotation still says so.
  const listed = [...sentBefore].sort().join(',') !== [...sendingNow].sort().join(',');
  return listed && drift.length === 0 ? ['owned fields'] : drift;
}

/**
 * The owned fields whose observed value differs from the desired one. Only fields pgfsm sets are
 * compared, and CNPG's own defaults (extra parameters, managed roles) never count as drift.
 */
export function cnpgDrift(observed: CnpgCluster, desired: CnpgCluster): string[] {
  // Another writer may have left anything here; a missing spec is all drift, never a crash.
  const o: CnpgClusterSpec = observed.spec ?? {};
  const d = desired.spec;
  const drift: string[] = [];
  if (o.instances !== d.instances) drift.push('instances');
  if (o.imageName !== d.imageName) drift.push('imageName');
  if (o.primaryUpdateMethod !== d.primaryUpdateMethod) drift.push('primaryUpdateMethod');
  if (ownedMapDrifted(o.postgresql?.parameters, observed.metadata.annotations, d.postgresql?.parameters ?? {})) {
    drift.push('postgresql.parameters');
  }
  if (JSON.stringify(o.postgresql?.pg_hba ?? []) !== JSON.stringify(d.postgresql?.pg_hba ?? [])) {
    drift.push('postgresql.pg_hba');
  }
  if (o.superuserSecret?.name !== d.superuserSecret?.name || o.enableSuperuserAccess !== d.enableSuperuserAccess) {
    drift.push('superuserSecret');
  }
  if (!sameQuantity(o.storage?.size, d.storage?.size)) drift.push('storage.size');
  drift.push(...dayOneDrift(observed, o, d));
  if (
    !sameQuantities(o.resources?.requests, d.resources?.requests) ||
    !sameQuantities(o.resources?.limits, d.resources?.limits)
  ) {
    drift.push('resources');
  }
  return drift;
}

/**
 * Why an orphaned CNPG Cluster (no controller: left by a Retain deletion, or made by someone else) must
 * not be adopted, if it must not. Adopting one that authenticates its superuser with another Secret would
 * point it at ours and so change the password of a running database under its clients: a person decides.
 */
function adoptionBlocker(cnpg: CnpgCluster, desired: CnpgCluster): string | undefined {
  const theirs = cnpg.spec?.superuserSecret?.name;
  const ours = desired.spec.superuserSecret?.name;
  if (theirs === undefined || theirs === ours) return undefined;
  return (
    `CNPG cluster ${desired.metadata.name} uses superuser secret ${theirs}, not ${ours}: pgfsm does not adopt it, ` +
    `as that would change the superuser password. Copy the password of ${theirs} into ${ours} and set the ` +
    `CNPG cluster's spec.superuserSecret.name to ${ours}, or delete the CNPG cluster`
  );
}

/**
 * Missing: create it. Foreign, orphaned and not handed over (`mayAdopt`: a CNPG Cluster nobody owns is a
 * database someone runs; taking it over silently would rewrite its spec and, under the Delete policy,
 * delete it), or orphaned with another superuser Secret: a person's. Orphaned and handed over (by a person,
 * or by the Retain deletion that released it): adopt it. Drifted: repair it. Otherwise CNPG's phase and
 * ready instances tell how it is.
 */
export function judgeCnpgCluster(
  observation: Observation,
  desired: CnpgCluster,
  now: number,
  restore?: RestoreResolution,
): Judgment {
  const { cnpg, cluster } = observation;
  const name = desired.metadata.name;
  const apply = (event: KubeEvent): Effect => ({ type: 'apply', component: 'cluster', object: desired, event });
  if (!cnpg && restore && !restore.ok) {
    // Created only from the archive it asks for (desiredCnpgCluster): a person fixes the spec, or the world moves.
    return judgment(
      restore.wait
        ? verdict(
            'Pending',
            Reason.CNPGClusterPending,
            `CNPG cluster ${name} waits for its restore: ${restore.message}`,
          )
        : verdict('Failed', Reason.InvalidConfiguration, restore.message),
    );
  }
  if (!cnpg) {
    return judgment(
      verdict('Pending', Reason.CNPGClusterPending, `CNPG cluster ${name} does not exist yet`),
      apply(
        normal(EventReason.CNPGClusterCreated, 'CreateCNPGCluster', `CNPG cluster ${name} created, waiting for it`),
      ),
    );
  }
  const ownership = ownershipOf(cnpg.metadata.ownerReferences, cluster);
  if (ownership === 'foreign') {
    return judgment(heldByOther(Reason.ClusterOwnedByOther, `CNPG cluster ${name}`, cnpg.metadata.ownerReferences));
  }
  if (ownership === 'orphan') {
    if (!mayAdopt(cnpg.metadata)) {
      return judgment(
        verdict(
          'Failed',
          Reason.ClusterNotAdoptable,
          notAdoptableMessage(`CNPG cluster ${name}`, 'Cluster', cnpg.metadata, cluster),
        ),
      );
    }
    const blocker = adoptionBlocker(cnpg, desired);
    if (blocker) return judgment(verdict('Failed', Reason.ClusterSuperuserSecretMismatch, blocker));
    return judgment(
      verdict('Provisioning', Reason.CNPGClusterUpdating, `Adopting the existing CNPG cluster ${name}`),
      apply(normal(EventReason.CNPGClusterAdopted, 'AdoptCNPGCluster', `Adopted the existing CNPG cluster ${name}`)),
    );
  }
  // Our own pending change comes first: it may be the user's fix for a failure CNPG still reports.
  const drift = cnpgDrift(cnpg, desired);
  const steps = drift.length > 0 ? stepsOf(cnpg, desired, drift) : undefined;
  if (steps) return judgeSteps(cnpg, desired, steps, now);
  if (drift.length > 0) {
    return judgment(
      verdict('Provisioning', Reason.CNPGClusterUpdating, `Updating CNPG cluster ${name}: ${drift.join(', ')}`),
      apply(
        normal(
          EventReason.CNPGClusterUpdated,
          'UpdateCNPGCluster',
          `CNPG cluster ${name} updated: ${drift.join(', ')}`,
        ),
      ),
    );
  }
  return judgment(runningHealth(cnpg, desired, now));
}

/** An update CNPG accepts only in parts (cluster-steps.ts): the step that is due, and its write. */
function judgeSteps(cnpg: CnpgCluster, desired: CnpgCluster, steps: Steps, now: number): Judgment {
  const name = desired.metadata.name;
  const why =
    'CNPG refuses a new image and new PostgreSQL parameters in one update under primaryUpdateMethod switchover';
  const image = desired.spec.imageName;
  if (steps.step === 1) {
    const fields = steps.fields.join(', ');
    return judgment(
      verdict(
        'Provisioning',
        Reason.CNPGClusterUpdatingInSteps,
        `Updating CNPG cluster ${name} in two steps (${why}): step 1 of 2, ${fields}; then the image ${image}`,
      ),
      {
        type: 'apply',
        component: 'cluster',
        object: steps.object,
        event: normal(
          EventReason.CNPGClusterUpdateStaged,
          'UpdateCNPGClusterInSteps',
          `CNPG cluster ${name} updated, step 1 of 2: ${fields}; the image ${image} follows once CNPG is healthy ` +
            'with every instance ready',
        ),
      },
    );
  }
  const current = runningHealth(cnpg, { ...cnpg, spec: { ...cnpg.spec, instances: cnpg.spec?.instances ?? 1 } }, now);
  return judgment(
    verdict(
      'Provisioning',
      Reason.CNPGClusterUpdatingInSteps,
      `Updating CNPG cluster ${name} in two steps (${why}): step 2 of 2, the image ${image} waits until CNPG is ` +
        `healthy with every instance ready (${current.message})`,
    ),
  );
}

/** How a CNPG cluster that is ours and as we want it is doing: what CNPG reports, nothing to write. */
function runningHealth(cnpg: CnpgCluster, desired: CnpgCluster, now: number): Verdict {
  const name = desired.metadata.name;
  const phase = cnpg.status?.phase;
  const meaning = meaningOfPhase(phase);
  const phaseText = phase ? ` (phase "${phase}"${cnpg.status?.phaseReason ? `: ${cnpg.status.phaseReason}` : ''})` : '';
  if (meaning.state !== 'Ready') return verdict(meaning.state, meaning.reason, `${meaning.message}${phaseText}`);
  // Right after pgfsm applies a new image, CNPG's status still describes the old one, healthy: Ready now
  // would be the reference's premature Ready (a `kubectl wait` would return before the rollout started).
  // CNPG names the image it has taken up; a status without one (an older CNPG) cannot tell, and is believed.
  const taken = cnpg.status?.image;
  const image = desired.spec.imageName;
  if (taken !== undefined && image !== undefined && taken !== image) {
    return verdict(
      'Provisioning',
      Reason.CNPGClusterUpdating,
      `CNPG cluster ${name} has not taken up the image ${image} yet: its status still names ${taken}${phaseText}`,
    );
  }
  // CNPG's phase alone is not enough: it stays "healthy" while it scales out.
  const ready = cnpg.status?.readyInstances ?? 0;
  const wanted = desired.spec.instances ?? 1;
  if (ready !== wanted) {
    return verdict(
      'Provisioning',
      Reason.CNPGClusterScaling,
      `CNPG cluster ${name} has ${ready}/${wanted} ready instances${phaseText}`,
    );
  }
  const waitEnds = takeUpEndsAt(cnpg, now);
  if (waitEnds !== undefined) {
    return verdict(
      'Provisioning',
      Reason.CNPGClusterUpdating,
      `CNPG cluster ${name} reports healthy, but pgfsm changed it less than ${CNPG_TAKE_UP_MS / 1000}s ago and ` +
        `CloudNativePG does not say which generation its status describes: Ready waits until ` +
        `${new Date(waitEnds).toISOString()} for CNPG to take the change up`,
    );
  }
  return verdict('Ready', Reason.CNPGClusterHealthy, `CNPG cluster is healthy with ${ready}/${wanted} ready instances`);
}
