/** The Kubernetes adapters: the ports over a real API server. */
export {
  type ConnectionPool,
  connectionPoolOf,
  KEEP_ALIVE_DEFAULTS,
  type KeepAliveOptions,
  withKeepAlive,
} from './connection.ts';
export { classOfStatus, toPortError } from './errors.ts';
export { KubernetesEventSink, SERIES_WINDOW_MS } from './events.ts';
export { KubeConfigError, type KubeConfigOptions, loadKubeConfig } from './kubeconfig.ts';
export { type KubernetesPortsOptions, kubernetesPorts } from './ports.ts';
