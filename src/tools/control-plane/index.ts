/** Public surface of the real-control-plane test harness. */
export {
  type Binaries,
  CNPG_VERSION,
  type CnpgAssets,
  type EnsureBinariesOptions,
  ETCD_VERSION,
  ensureBinaries,
  KUBERNETES_VERSION,
  MissingBinariesError,
} from './build.ts';
export {
  CNPG_OPERATOR_NAMESPACE,
  CNPG_WATCH_NAMESPACE,
  cnpgCrdFiles,
  type RunningCnpg,
} from './cnpg.ts';
export {
  auditPolicyFor,
  type ControlPlane,
  describeControlPlane,
  type ServiceAccountRef,
  type StartControlPlaneOptions,
  serviceAccountUser,
  startControlPlane,
  type TokenOptions,
  withControlPlane,
} from './harness.ts';
