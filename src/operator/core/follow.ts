/**
 * What a pass knows of the world after its own writes, from the API server's answers to them — so that
 * the pass can tick again on it instead of ending and waiting for the next pass to read the same thing.
 *
 * Only the answers that say exactly what the world now holds are folded in: a finalizer added (the answer
 * is the object's new version), the superuser Secret created (the answer is the Secret as created, key
 * names only), the ConfigMap and a backup object applied (the answer is the object as stored), and the
 * ScheduledBackup or ObjectStore of a cluster whose backups were switched off deleted (no finalizer holds them, and
 * they are not watched: without it the status would keep their record until a resync). Any other write — an
 * apply CNPG's operator answers later through the object's status, another delete, an owner patch, a write
 * whose answer was lost and a read showed had landed — leaves the pass to end there and the next pass to
 * observe the world afresh. Pure: the answers arrive as data.
 *
 * The versions so followed are the pass's to report (`followedVersions`): the watch event each write
 * raises shows the pass what it already decided on, and the driver lets it wake nothing (driver/echoes.ts).
 */
import type { PostgresCluster } from '../api/schema.ts';
import { objectStoreName, sourceStoreName } from '../domain/backup/names.ts';
import type { ConfigMap, SecretView } from '../domain/objects.ts';
import type { Observation } from '../domain/observation.ts';
import { FINALIZER } from '../domain/vocabulary.ts';
import type { WriteAnswer } from './execute.ts';

const sameObject = (a: { metadata: { name: string; namespace?: string } }, b: typeof a) =>
  a.metadata.name === b.metadata.name && a.metadata.namespace === b.metadata.namespace;

const isObjectAnswer = (answer: unknown): answer is { metadata: { name: string; namespace?: string } } =>
  typeof answer === 'object' &&
  answer !== null &&
  typeof (answer as { metadata?: { name?: unknown } }).metadata?.name === 'string';

/**
 * The observation as the world stands after `answers`, or undefined when one of them does not say it.
 * `cluster` is the PostgresCluster at the version the writes left it (Execution.cluster).
 */
export function observedAfter(
  observation: Observation,
  cluster: PostgresCluster,
  answers: readonly WriteAnswer[],
): Observation | undefined {
  if (answers.length === 0) return undefined;
  let next: Observation = { ...observation, cluster };
  for (const { effect, answer } of answers) {
    switch (effect.type) {
      case 'addFinalizer': {
        // An undefined answer means nothing was written (or the object is gone): not a fact to go on.
        if (typeof answer !== 'string') return undefined;
        const finalizers = next.cluster.metadata.finalizers ?? [];
        if (!finalizers.includes(FINALIZER)) {
          next = {
            ...next,
            cluster: {
              ...next.cluster,
              metadata: { ...next.cluster.metadata, finalizers: [...finalizers, FINALIZER] },
            },
          };
        }
        break;
      }
      case 'createSecret': {
        if (!isObjectAnswer(answer) || next.secret !== undefined) return undefined;
        const secret = answer as SecretView;
        // The one Secret a pass creates is the superuser's; another would not be its observation.secret.
        if (secret.kind !== 'Secret' || !sameObject(secret, { metadata: effect.secret.ref })) return undefined;
        next = { ...next, secret };
        break;
      }
      case 'apply': {
        if (!isObjectAnswer(answer) || !sameObject(answer, effect.object)) return undefined;
        if (effect.component === 'configMap') {
          const configMap = answer as ConfigMap;
          if (configMap.kind !== 'ConfigMap') return undefined;
          next = { ...next, configMap };
          break;
        }
        const backup = backupFolded(next, effect.object.kind, answer);
        if (!backup) return undefined;
        next = backup;
        break;
      }
      case 'delete': {
        const retired = backupRetired(next, effect.ref.kind, effect.ref.name);
        if (!retired) return undefined;
        next = retired;
        break;
      }
      default:
        return undefined;
    }
  }
  return next;
}

/**
 * A switched-off cluster's ScheduledBackup or own ObjectStore deleted (judge.ts retiredObjects): gone from the
 * observation. Not during the cluster's deletion, which waits for what it deletes to be gone as a read shows it.
 */
function backupRetired(observation: Observation, kind: string, name: string): Observation | undefined {
  const seen = observation.backup;
  const cluster = observation.cluster.metadata;
  if (!seen || cluster.deletionTimestamp) return undefined;
  const field =
    kind === 'ScheduledBackup' && seen.scheduled?.metadata.name === name
      ? 'scheduled'
      : kind === 'ObjectStore' && name === objectStoreName(cluster.name)
        ? 'store'
        : undefined;
  if (!field) return undefined;
  const { [field]: _gone, ...rest } = seen;
  return { ...observation, backup: rest };
}

/**
 * A backup object as applied (issue 36): these kinds are not watched, so without following the answer the pass
 * would wait for a resync to see what it wrote (its BackupsReady saying "writing" and the on-demand token not
 * recorded). Their answer is the object as stored; what CNPG and the plugin make of it arrives in their status
 * later, through the CNPG Cluster's watched status.
 */
function backupFolded(observation: Observation, kind: string, answer: unknown): Observation | undefined {
  const seen = observation.backup;
  if (!seen) return undefined;
  const name = (answer as { metadata: { name: string } }).metadata.name;
  const cluster = observation.cluster.metadata.name;
  const field =
    kind === 'ScheduledBackup'
      ? 'scheduled'
      : kind === 'Backup'
        ? 'onDemand'
        : kind === 'ObjectStore' && name === objectStoreName(cluster)
          ? 'store'
          : kind === 'ObjectStore' && name === sourceStoreName(cluster)
            ? 'sourceStore'
            : undefined;
  if (!field) return undefined;
  return { ...observation, backup: { ...seen, [field]: answer } };
}

/** One version of one object: what a watch event shows, and what a followed answer said. */
export interface ObjectVersion {
  kind: string;
  namespace: string;
  name: string;
  resourceVersion: string;
}

/**
 * The versions `answers` put into the observation `observedAfter` made of them: the objects as the
 * writes left them, each of which the next tick of the pass was taken on. `cluster` as for `observedAfter`.
 */
export function followedVersions(cluster: PostgresCluster, answers: readonly WriteAnswer[]): ObjectVersion[] {
  return answers.flatMap(({ effect, answer }): ObjectVersion[] => {
    if (effect.type === 'addFinalizer') {
      const { namespace = '', name } = cluster.metadata;
      return typeof answer === 'string' ? [{ kind: 'PostgresCluster', namespace, name, resourceVersion: answer }] : [];
    }
    if (!isObjectAnswer(answer)) return [];
    const { kind, metadata } = answer as {
      kind?: unknown;
      metadata: { namespace?: string; resourceVersion?: unknown };
    };
    if (typeof kind !== 'string' || typeof metadata.resourceVersion !== 'string') return [];
    return [
      {
        kind,
        namespace: metadata.namespace ?? '',
        name: answer.metadata.name,
        resourceVersion: metadata.resourceVersion,
      },
    ];
  });
}
