/**
 * The vocabulary pgfsm speaks to the world: its components and their conditions, every reason, and the
 * names and labels of its children — built here and parsed back here.
 */
import { API_VERSION, type OwnerReference, type PostgresCluster } from '../api/schema.ts';

export const FINALIZER = 'pgfsm.io/finalizer';
export const FIELD_MANAGER = 'pgfsm';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const CLUSTER_LABEL = 'pgfsm.io/cluster';
export const SUPERUSER_NAME = 'postgres';
export const PASSWORD_KEY = 'password';
export const DEFAULT_PORT = '5432';

export const childNames = (clusterName: string) => ({
  secret: `${clusterName}-superuser`,
  cnpgCluster: clusterName,
  poolerRw: `${clusterName}-pooler-rw`,
  poolerRo: `${clusterName}-pooler-ro`,
  configMap: `${clusterName}-endpoints`,
});

export const childLabels = (clusterName: string): Record<string, string> => ({
  [MANAGED_BY_LABEL]: 'pgfsm',
  [CLUSTER_LABEL]: clusterName,
});

export function ownerReferenceTo(cluster: PostgresCluster): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: 'PostgresCluster',
    name: cluster.metadata.name,
    uid: cluster.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export type Ownership = 'ours' | 'orphan' | 'foreign';

/**
 * Who controls a child: this cluster (`ours`), nobody (`orphan`: retained by an earlier cluster of the
 * same name, ours to adopt), or another controller (`foreign`: never taken over silently).
 */
export function ownershipOf(owners: OwnerReference[] | undefined, cluster: PostgresCluster): Ownership {
  const controller = (owners ?? []).find((o) => o.controller);
  if (!controller) return 'orphan';
  return controller.uid === cluster.metadata.uid ? 'ours' : 'foreign';
}

export const describeOwner = (owners: OwnerReference[] | undefined) => {
  const c = (owners ?? []).find((o) => o.controller);
  return c ? `${c.kind}/${c.name}` : 'nobody';
};

/** The pipeline's components, in order; each owns one condition. */
export const COMPONENTS = ['secret', 'cluster', 'managedRoles', 'pooler', 'configMap'] as const;
export type Component = (typeof COMPONENTS)[number];

export const CONDITION_OF: Record<Component, string> = {
  secret: 'SecretsReady',
  cluster: 'ClusterReady',
  managedRoles: 'ManagedRolesReady',
  pooler: 'PoolerReady',
  configMap: 'ConfigMapsReady',
};

/** The Normal event emitted when a component's condition turns True. */
export const READY_EVENT_OF: Record<Component, string> = {
  secret: 'SecretReady',
  cluster: 'CNPGClusterReady',
  managedRoles: 'ManagedRolesReady',
  pooler: 'PoolerReady',
  configMap: 'ConfigMapReady',
};

export const Reason = {
  // secret
  SuperUserSecretReady: 'SuperUserSecretReady',
  UserSecretPending: 'UserSecretPending',
  SuperUserSecretFailed: 'SuperUserSecretFailed',
  // class and spec
  ClusterClassNotFound: 'ClusterClassNotFound',
  InvalidConfiguration: 'InvalidConfiguration',
  // CNPG cluster
  CNPGClusterHealthy: 'CNPGClusterHealthy',
  CNPGClusterPending: 'CNPGClusterPending',
  CNPGClusterProvisioning: 'CNPGClusterProvisioning',
  CNPGClusterUpdating: 'CNPGClusterUpdating',
  CNPGClusterScaling: 'CNPGClusterScaling',
  CNPGSwitchover: 'CNPGSwitchover',
  CNPGFailingOver: 'CNPGFailingOver',
  CNPGRestarting: 'CNPGRestarting',
  CNPGUpgrading: 'CNPGUpgrading',
  CNPGApplyingConfiguration: 'CNPGApplyingConfiguration',
  CNPGPromoting: 'CNPGPromoting',
  CNPGWaitingForUser: 'CNPGWaitingForUser',
  CNPGUnrecoverable: 'CNPGUnrecoverable',
  CNPGProvisioningFailed: 'CNPGProvisioningFailed',
  CNPGPluginError: 'CNPGPluginError',
  CNPGImageError: 'CNPGImageError',
  ClusterOwnedByOther: 'ClusterOwnedByOther',
  ClusterSuperuserSecretMismatch: 'ClusterSuperuserSecretMismatch',
  // managed roles
  ManagedRolesReconciled: 'ManagedRolesReconciled',
  ManagedRolesPending: 'ManagedRolesPending',
  ManagedRolesReconciliationFailed: 'ManagedRolesReconciliationFailed',
  // pooler
  PoolerDisabled: 'PoolerDisabled',
  PoolerCreating: 'PoolerCreating',
  PoolerUpdating: 'PoolerUpdating',
  PoolerDeleting: 'PoolerDeleting',
  AllInstancesReady: 'AllInstancesReady',
  PoolerOwnedByOther: 'PoolerOwnedByOther',
  // configmap
  ConfigMapReconciled: 'ConfigMapReconciled',
  ConfigMapPending: 'ConfigMapPending',
  ConfigMapDrifted: 'ConfigMapDrifted',
  ConfigMapOwnedByOther: 'ConfigMapOwnedByOther',
} as const;
