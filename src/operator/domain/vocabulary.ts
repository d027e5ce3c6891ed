/**
 * The vocabulary pgfsm speaks to the world: its components and their conditions, every reason, and the
 * names and labels of its children — built here and parsed back here.
 */
import { API_VERSION, type ObjectMeta, type OwnerReference, type PostgresCluster } from '../api/schema.ts';

export const FINALIZER = 'pgfsm.io/finalizer';
export const FIELD_MANAGER = 'pgfsm';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const CLUSTER_LABEL = 'pgfsm.io/cluster';
export const SUPERUSER_NAME = 'postgres';
export const PASSWORD_KEY = 'password';
export const DEFAULT_PORT = '5432';

/** How each child is named after its cluster: the one table both `childNames` and its parser read. */
const CHILDREN = {
  secret: { kind: 'Secret', suffix: '-superuser' },
  cnpgCluster: { kind: 'Cluster', suffix: '' },
  poolerRw: { kind: 'Pooler', suffix: '-pooler-rw' },
  poolerRo: { kind: 'Pooler', suffix: '-pooler-ro' },
  configMap: { kind: 'ConfigMap', suffix: '-endpoints' },
} as const;
export type Child = keyof typeof CHILDREN;

// Spelled out rather than built with Object.fromEntries: every judgment asks for these names on every
// tick, and the literal is several times cheaper (npm run bench, engine). The type keeps it complete.
export const childNames = (clusterName: string): Record<Child, string> => ({
  secret: `${clusterName}${CHILDREN.secret.suffix}`,
  cnpgCluster: `${clusterName}${CHILDREN.cnpgCluster.suffix}`,
  poolerRw: `${clusterName}${CHILDREN.poolerRw.suffix}`,
  poolerRo: `${clusterName}${CHILDREN.poolerRo.suffix}`,
  configMap: `${clusterName}${CHILDREN.configMap.suffix}`,
});

export const kindOfChild = (child: Child): string => CHILDREN[child].kind;

/**
 * The cluster whose child of this kind would have this name, read back from the name alone (for objects
 * that carry neither our owner reference nor our label); undefined when no child of the kind is so named.
 */
export function clusterNameOfChild(kind: string, name: string): string | undefined {
  for (const { kind: childKind, suffix } of Object.values(CHILDREN)) {
    if (childKind === kind && name.length > suffix.length && name.endsWith(suffix)) {
      return name.slice(0, name.length - suffix.length);
    }
  }
  return undefined;
}

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
 * Who controls a child: this cluster (`ours`), nobody (`orphan`: adopted only when `mayAdopt` says so),
 * or another controller (`foreign`: never taken over silently).
 */
export function ownershipOf(owners: OwnerReference[] | undefined, cluster: PostgresCluster): Ownership {
  const controller = (owners ?? []).find((o) => o.controller);
  if (!controller) return 'orphan';
  return controller.uid === cluster.metadata.uid ? 'ours' : 'foreign';
}

/**
 * The hand-over of an ownerless object to the PostgresCluster whose child it would be by name. A person puts
 * it on an object pgfsm did not create (`kubectl annotate secret orders-superuser pgfsm.io/adopt=true`); a
 * Retain deletion puts it on each child it releases, so that a new cluster of the name takes them back.
 */
export const ADOPT_ANNOTATION = 'pgfsm.io/adopt';

/** pgfsm's labels naming this cluster: what it puts on every child it creates, and anyone may copy. */
const carriesLabelsOf = (metadata: ObjectMeta, cluster: PostgresCluster): boolean => {
  const labels = metadata.labels ?? {};
  return labels[MANAGED_BY_LABEL] === 'pgfsm' && labels[CLUSTER_LABEL] === cluster.metadata.name;
};

/**
 * Whether an orphan (no controller) may be adopted by this cluster: only when it is handed over, with the
 * annotation `pgfsm.io/adopt: "true"`. An object of a child's name may be anyone's: a Secret a team keeps for
 * itself, a CNPG Cluster made by hand — a database. Labels prove nothing: whoever may create the object may
 * copy them, and a Secret planted with pgfsm's labels would choose a future cluster's superuser password.
 * What a Retain deletion releases carries the annotation, put there by the release itself (the ports'
 * `releaseOwner`), so that the round trip needs no one's hand.
 */
export function mayAdopt(metadata: ObjectMeta): boolean {
  return metadata.annotations?.[ADOPT_ANNOTATION] === 'true';
}

/** The resource `kubectl` knows each child kind by, for the commands pgfsm's messages suggest. */
const KUBECTL_RESOURCE: Record<string, string> = {
  Secret: 'secret',
  ConfigMap: 'configmap',
  Cluster: 'clusters.postgresql.cnpg.io',
  Pooler: 'poolers.postgresql.cnpg.io',
  ObjectStore: 'objectstores.barmancloud.cnpg.io',
  ScheduledBackup: 'scheduledbackups.postgresql.cnpg.io',
  Backup: 'backups.postgresql.cnpg.io',
};

/**
 * Why an orphan not handed over is left alone, and the one command that hands it over. No write follows:
 * the object is not adopted, overwritten, or deleted (not even under the Delete policy: it is not ours).
 */
export function notAdoptableMessage(
  what: string,
  kind: string,
  metadata: ObjectMeta,
  cluster: PostgresCluster,
): string {
  const why = carriesLabelsOf(metadata, cluster)
    ? "exists without an owner; it carries pgfsm's labels, but labels anyone may copy hand nothing over"
    : 'exists without an owner and was not created by pgfsm';
  return (
    `${what} ${why}: it is not adopted, changed or deleted. To hand it over to this PostgresCluster, annotate ` +
    `it: kubectl annotate -n ${metadata.namespace ?? cluster.metadata.namespace} ` +
    `${KUBECTL_RESOURCE[kind] ?? kind} ${metadata.name} ${ADOPT_ANNOTATION}=true; otherwise delete or rename it`
  );
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

/**
 * Every fixed reason a condition can carry, by where it comes from. The reasons the status projection
 * builds from a name (`WaitingFor<Condition>`, `<State>`, `<State>DeadlineExceeded`) are built below.
 */
export const Reason = {
  // secret
  SuperUserSecretReady: 'SuperUserSecretReady',
  SuperUserSecretPending: 'SuperUserSecretPending',
  SuperUserSecretFailed: 'SuperUserSecretFailed',
  SecretNotAdoptable: 'SecretNotAdoptable',
  // class and spec
  ClusterClassNotFound: 'ClusterClassNotFound',
  InvalidConfiguration: 'InvalidConfiguration',
  // CNPG cluster
  CNPGClusterHealthy: 'CNPGClusterHealthy',
  CNPGClusterPending: 'CNPGClusterPending',
  CNPGClusterProvisioning: 'CNPGClusterProvisioning',
  CNPGClusterUpdating: 'CNPGClusterUpdating',
  CNPGClusterUpdatingInSteps: 'CNPGClusterUpdatingInSteps',
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
  ClusterNotAdoptable: 'ClusterNotAdoptable',
  ClusterSuperuserSecretMismatch: 'ClusterSuperuserSecretMismatch',
  ClusterSpecRejected: 'ClusterSpecRejected',
  // managed roles
  ManagedRolesReconciled: 'ManagedRolesReconciled',
  ManagedRolesPending: 'ManagedRolesPending',
  ManagedRolesReconciliationFailed: 'ManagedRolesReconciliationFailed',
  ManagedRolesSpecRejected: 'ManagedRolesSpecRejected',
  // pooler
  PoolerDisabled: 'PoolerDisabled',
  PoolerCreating: 'PoolerCreating',
  PoolerUpdating: 'PoolerUpdating',
  PoolerDeleting: 'PoolerDeleting',
  AllInstancesReady: 'AllInstancesReady',
  PoolerOwnedByOther: 'PoolerOwnedByOther',
  PoolerNotAdoptable: 'PoolerNotAdoptable',
  PoolerSpecRejected: 'PoolerSpecRejected',
  // configmap
  ConfigMapReconciled: 'ConfigMapReconciled',
  ConfigMapPending: 'ConfigMapPending',
  ConfigMapDrifted: 'ConfigMapDrifted',
  ConfigMapOwnedByOther: 'ConfigMapOwnedByOther',
  ConfigMapNotAdoptable: 'ConfigMapNotAdoptable',
  // backups (issue 36): the BackupsReady condition of a backed-up cluster, apart from the pipeline's components
  ContinuousArchivingWorking: 'ContinuousArchivingWorking',
  ContinuousArchivingUnknown: 'ContinuousArchivingUnknown',
  ContinuousArchivingFailing: 'ContinuousArchivingFailing',
  BackupObjectsPending: 'BackupObjectsPending',
  BackupStoreMisconfigured: 'BackupStoreMisconfigured',
  BackupObjectNotAdoptable: 'BackupObjectNotAdoptable',
  BackupRequestRefused: 'BackupRequestRefused',
  BackupPending: 'BackupPending',
  // a failed write, on the condition of its component (or on Ready for the finalizer)
  ClusterApplyFailed: 'ClusterApplyFailed',
  PoolerReconciliationFailed: 'PoolerReconciliationFailed',
  ConfigMapReconciliationFailed: 'ConfigMapReconciliationFailed',
  FinalizerUpdateFailed: 'FinalizerUpdateFailed',
  CleanupFailed: 'CleanupFailed',
  // the status projection
  NotAssessed: 'NotAssessed',
  AllComponentsReady: 'AllComponentsReady',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/**
 * The reason a failed write puts on the condition of the component it belonged to. Deleting or releasing
 * a child in the Deleting states (the PostgresCluster itself is going) is cleanup, whatever the component: the
 * reference system's name for it, so that `kubectl get events --field-selector reason=CleanupFailed` finds
 * every stuck deletion.
 */
export const WRITE_FAILURE_REASON = {
  secret: Reason.SuperUserSecretFailed,
  cluster: Reason.ClusterApplyFailed,
  managedRoles: Reason.ManagedRolesReconciliationFailed,
  pooler: Reason.PoolerReconciliationFailed,
  configMap: Reason.ConfigMapReconciliationFailed,
  finalizer: Reason.FinalizerUpdateFailed,
  cleanup: Reason.CleanupFailed,
} as const satisfies Record<Component | 'finalizer' | 'cleanup', Reason>;

/** A later step's reason while an earlier one blocks it: `WaitingFor<Condition>`. */
export const waitingForReason = (condition: string) => `WaitingFor${condition}`;

/** `Provisioning.Cluster` -> `ProvisioningCluster`: a state of the machine as a CamelCase reason. */
export const stateReason = (state: string) => state.replaceAll('.', '');

/** The `Stalled` reason of a waiting state past its progress deadline: `<State>DeadlineExceeded`. */
export const deadlineReason = (state: string) => `${stateReason(state)}DeadlineExceeded`;

/**
 * Every event reason pgfsm emits of its own, with the event's type. A failure state's Warning carries the
 * reason of the failed condition, a failed write's Warning its `WRITE_FAILURE_REASON`: those are `Reason`s.
 *
 * Events are for what a person learns something from: an action pgfsm took, a transition that matters, a
 * failure. A component's condition turning True is not one (the condition says it). No event is named after
 * a condition unless it means the same: `Ready` is the PostgresCluster as a whole, as its `Ready` condition is,
 * while the condition `ClusterReady` is the CNPG Cluster's, so no event is called that.
 */
const EVENT_TYPE = {
  // writes to the children
  SuperuserSecretCreated: 'Normal',
  SuperuserSecretAdopted: 'Normal',
  CNPGClusterCreated: 'Normal',
  CNPGClusterAdopted: 'Normal',
  CNPGClusterUpdated: 'Normal',
  CNPGClusterUpdateStaged: 'Normal',
  ManagedRolesApplied: 'Normal',
  /** One event for the Poolers created in one pass (the rw and ro pair, usually). */
  PoolersCreated: 'Normal',
  PoolerAdopted: 'Normal',
  PoolerUpdated: 'Normal',
  PoolerDeleted: 'Normal',
  /** The endpoints ConfigMap created. */
  EndpointsPublished: 'Normal',
  /** Its content changed because the world did (the poolers began or stopped serving). */
  EndpointsUpdated: 'Normal',
  /** Someone else's change to its keys undone. */
  EndpointsRepaired: 'Normal',
  EndpointsAdopted: 'Normal',
  /** A backup object written (the ObjectStores, the ScheduledBackup): issue 36. */
  BackupConfigured: 'Normal',
  /** The on-demand Backup a new pgfsm.io/backup-now token asks for, created. */
  BackupRequested: 'Normal',
  // deletion
  ChildDeleted: 'Normal',
  ChildRetained: 'Normal',
  CleanupComplete: 'Normal',
  // transitions of the machine: the PostgresCluster as a whole
  Ready: 'Normal',
  Degraded: 'Warning',
  NotReady: 'Warning',
  Suspended: 'Normal',
  Resumed: 'Normal',
  // the world decides, not the stored state (a status.state written by hand)
  StoredStateDiscarded: 'Warning',
  DestructiveWriteRefused: 'Warning',
  // an object the API server no longer lets anyone update, its status included: an Event is all that is left
  StatusRejected: 'Warning',
} as const satisfies Record<string, 'Normal' | 'Warning'>;

export type EventReason = keyof typeof EVENT_TYPE;
export type NormalEventReason = {
  [R in EventReason]: (typeof EVENT_TYPE)[R] extends 'Normal' ? R : never;
}[EventReason];
/** A Warning's reason: a warning event of pgfsm's own, or the reason of the condition that went wrong. */
export type WarningReason = Exclude<EventReason, NormalEventReason> | Reason;

export const EventReason = Object.fromEntries(Object.keys(EVENT_TYPE).map((r) => [r, r])) as {
  readonly [R in EventReason]: R;
};

export const eventTypeOf = (reason: EventReason): 'Normal' | 'Warning' => EVENT_TYPE[reason];
