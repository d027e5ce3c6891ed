/** The Kubernetes adapters: the ports over a real API server. */
export {
  type ConnectionPool,
  connectionPoolOf,
  KEEP_ALIVE_DEFAULTS,
  type KeepAliveOptions,
  withKeepAlive,
} from './connection.ts';
export { type ConnectionSecretKey, connectionSecretData } from './database-children.ts';
export { type KubernetesDatabasePortsOptions, kubernetesDatabasePorts } from './database-ports.ts';
export { classOfStatus, toPortError } from './errors.ts';
export { KubernetesEventSink, SERIES_WINDOW_MS } from './events.ts';
export { KubeConfigError, type KubeConfigOptions, loadKubeConfig } from './kubeconfig.ts';
export { type KubernetesPortsOptions, kubernetesPorts } from './ports.ts';
export { type HostOf, type KubernetesPrivilegesOptions, readWriteService } from './privileges.ts';
