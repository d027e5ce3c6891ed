/**
 * A CNPG Cluster update CNPG accepts only in parts. Its validating webhook (v1.28,
 * `validateConfigurationChange`) refuses an update that changes `imageName` and `postgresql.parameters`
 * together while the new spec's `primaryUpdateMethod` is `switchover` (pg_hba does not count). So pgfsm
 * rolls such a change out in two steps it can show: everything but the image first, then, once CNPG is
 * healthy again with every instance ready, the image. Level-based: after the first step the observed
 * cluster has the new parameters and the old image, which is all the second step needs to know.
 */
import type { CnpgCluster } from '../objects.ts';
import { meaningOfPhase } from './cnpg-phases.ts';

/** Which step of an update in steps is due, if the update must go in steps. */
export type Steps =
  /** Everything but the image, keeping the image CNPG runs. */
  | { step: 1; object: CnpgCluster; fields: string[] }
  /** Only the image is left, and it waits until CNPG has settled from the first step. */
  | { step: 2; waiting: true };

/** CNPG has settled: healthy, with as many ready instances as its spec asks for. */
const settled = (cnpg: CnpgCluster) =>
  meaningOfPhase(cnpg.status?.phase).state === 'Ready' &&
  (cnpg.status?.readyInstances ?? 0) === (cnpg.spec?.instances ?? 1);

/**
 * The step due for an update with this drift, or undefined when it can go in one piece: not under
 * switchover, the image unchanged, or (second step) CNPG settled, or failing, when the new image may be the fix.
 */
export function stepsOf(cnpg: CnpgCluster, desired: CnpgCluster, drift: readonly string[]): Steps | undefined {
  const observedImage = cnpg.spec?.imageName;
  if (desired.spec.primaryUpdateMethod !== 'switchover' || !drift.includes('imageName') || !observedImage) {
    return undefined;
  }
  if (drift.includes('postgresql.parameters')) {
    const object = structuredClone(desired);
    object.spec.imageName = observedImage;
    return { step: 1, object, fields: drift.filter((f) => f !== 'imageName') };
  }
  if (settled(cnpg) || meaningOfPhase(cnpg.status?.phase).state === 'Failed') return undefined;
  return { step: 2, waiting: true };
}
