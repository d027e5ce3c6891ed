/**
 * Asking the simulated CNPG for a switchover from outside the sandbox process. The simulator lives in
 * the sandbox process, so another terminal needs a channel to it: an annotation on the CNPG Cluster.
 * `kubectl annotate` (or `pgfsm sandbox switchover`) sets it to a new value; the sandbox sees the change
 * through the simulator's watch and starts the switchover. Only the sandbox reacts to it: real CNPG and
 * pgfsm ignore unknown annotations, and pgfsm's server-side apply leaves annotations it does not own.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CNPG_API_VERSION, type KubeObject } from '../../operator/domain/objects.ts';
import type { SimulatorApi } from '../simulation/cnpg-simulator.ts';
import { keyOf } from './progress.ts';

export const SWITCHOVER_ANNOTATION = 'sandbox.pgfsm.io/switchover';

/** The merge patch that asks for a switchover; a fresh value each time, so each request is a change. */
export function switchoverRequest(namespace: string, name: string, now = Date.now()): KubernetesObject {
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Cluster',
    metadata: { namespace, name, annotations: { [SWITCHOVER_ANNOTATION]: new Date(now).toISOString() } },
  };
}

/**
 * Calls `trigger` when a CNPG Cluster's switchover annotation changes. Values present when watching
 * starts are remembered, not acted on: they are old requests.
 */
export function watchSwitchoverRequests(
  api: Pick<SimulatorApi, 'list' | 'onChange'>,
  trigger: (namespace: string, name: string) => void,
): () => void {
  const requestOf = (o: KubeObject) => o.metadata?.annotations?.[SWITCHOVER_ANNOTATION];
  const seen = new Map<string, string | undefined>();
  for (const cluster of api.list('Cluster')) seen.set(keyOf(cluster), requestOf(cluster));
  return api.onChange(({ type, object }) => {
    if (object.kind !== 'Cluster') return;
    const key = keyOf(object);
    if (type === 'deleted') {
      seen.delete(key);
      return;
    }
    const value = requestOf(object);
    const before = seen.get(key);
    seen.set(key, value);
    // A Cluster created with the annotation already set is not a request either.
    if (type === 'modified' && value !== undefined && value !== before) {
      trigger(object.metadata.namespace ?? '', object.metadata.name);
    }
  });
}
