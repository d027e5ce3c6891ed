/** `pgfsm sandbox switchover`: the request, from another terminal, through the annotation the sandbox watches. */
import { loadKubeConfig } from '../../operator/kubernetes/kubeconfig.ts';
import { mergePatchObject } from '../install/manifests.ts';
import { EXAMPLES_NAMESPACE } from './examples.ts';
import { SWITCHOVER_ANNOTATION, switchoverRequest } from './switchover.ts';

export async function requestSwitchover(cluster: string, kubeconfig?: string): Promise<string> {
  const [namespace, name] = cluster.includes('/') ? cluster.split('/', 2) : [EXAMPLES_NAMESPACE, cluster];
  if (!namespace || !name) throw new Error(`expected namespace/name or a name, got "${cluster}"`);
  const kc = loadKubeConfig(kubeconfig ? { kubeconfig } : {});
  try {
    await mergePatchObject(kc, switchoverRequest(namespace, name));
  } catch (error) {
    if ((error as { cause?: { code?: number } }).cause?.code === 404) {
      throw new Error(
        `no CNPG Cluster ${namespace}/${name} at ${kc.getCurrentCluster()?.server}: is this the sandbox's kubeconfig?`,
      );
    }
    throw error;
  }
  return `asked for a switchover of ${namespace}/${name} (annotation ${SWITCHOVER_ANNOTATION}); watch the sandbox's output`;
}
