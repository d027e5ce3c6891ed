/**
 * What a pass knows of the world after its own writes, from the API server's answers to them — so that
 * the pass can tick again on it instead of ending and waiting for the next pass to read the same thing.
 *
 * Only the answers that say exactly what the world now holds are folded in: a finalizer added (the answer
 * is the object's new version), the superuser Secret created (the answer is the Secret as created, key
 * names only) and the ConfigMap applied (the answer is the ConfigMap as stored). Any other write — an
 * apply CNPG's operator answers later through the object's status, a delete, an owner patch, a write
 * whose answer was lost and a read showed had landed — leaves the pass to end there and the next pass to
 * observe the world afresh. Pure: the answers arrive as data.
 */
import type { PostgresCluster } from '../api/schema.ts';
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
        if (effect.component !== 'configMap' || !isObjectAnswer(answer)) return undefined;
        const configMap = answer as ConfigMap;
        if (configMap.kind !== 'ConfigMap' || !sameObject(configMap, effect.object)) return undefined;
        next = { ...next, configMap };
        break;
      }
      default:
        return undefined;
    }
  }
  return next;
}
