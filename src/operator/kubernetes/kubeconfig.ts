/**
 * Loading the Kubernetes client configuration. client-node silently falls back to
 * http://localhost:8080 when it finds nothing; an operator must refuse that and say what to do.
 * Every KubeConfig loaded here reuses its connections (connection.ts): one pooled keep-alive agent per API
 * server for all the clients, informers and the Lease made from it, and asks client-node to authenticate at
 * most once a second (authentication.ts).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { reuseAuthentication } from './authentication.ts';
import { type KeepAliveOptions, withKeepAlive } from './connection.ts';

export interface KubeConfigOptions {
  /** Path to a kubeconfig file; default: $KUBECONFIG, ~/.kube/config, then in-cluster. */
  kubeconfig?: string;
  context?: string;
  /** Bounds of the pooled connections (connection.ts); the defaults suit the operator. */
  keepAlive?: KeepAliveOptions;
}

export class KubeConfigError extends Error {}

export function loadKubeConfig(options: KubeConfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
  else kc.loadFromDefault();
  if (options.context) kc.setCurrentContext(options.context);
  const server = kc.getCurrentCluster()?.server;
  if (!server || /^http:\/\/localhost:8080\/?$/.test(server)) {
    throw new KubeConfigError(
      'no Kubernetes API configured: set KUBECONFIG or --kubeconfig to a kubeconfig file, or run in a pod ' +
        'with a ServiceAccount (refusing client-node’s silent fallback to http://localhost:8080)',
    );
  }
  // Innermost first: the pooling (and, in `pgfsm run`, the fence) then wrap the reused authentication.
  return withKeepAlive(reuseAuthentication(kc), options.keepAlive);
}
