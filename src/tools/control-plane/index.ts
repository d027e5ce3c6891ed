/** Public surface of the real-control-plane test harness. */
export {
  type Binaries,
  type EnsureBinariesOptions,
  ETCD_VERSION,
  ensureBinaries,
  KUBERNETES_VERSION,
  MissingBinariesError,
} from './build.ts';
export {
  type ControlPlane,
  type ServiceAccountRef,
  type StartControlPlaneOptions,
  startControlPlane,
  type TokenOptions,
  withControlPlane,
} from './harness.ts';
