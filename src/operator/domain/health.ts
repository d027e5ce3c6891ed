/**
 * Health: the verdict of a pure health check on one component, and the reason vocabulary.
 *
 * Every check has the shape `(observation, desired) -> Health`. `Pending` means the step cannot act yet
 * (blocked or waiting for its object to appear), `Provisioning` that it is being created or changed,
 * `Configuring` that CNPG is busy with an operation on a running cluster, `Failed` that it needs a human
 * or a change of input. Only `Ready` lets the pipeline move on.
 */
export type HealthState = 'Ready' | 'Pending' | 'Provisioning' | 'Configuring' | 'Failed';

export interface Health {
  state: HealthState;
  reason: string;
  message: string;
}

export const health = (state: HealthState, reason: string, message: string): Health => ({ state, reason, message });

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
