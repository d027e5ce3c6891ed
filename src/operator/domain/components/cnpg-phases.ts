/**
 * CNPG v1.28 to v1.30 `Cluster.status.phase` sentences and what each means for pgfsm. CNPG publishes English
 * sentences, not codes; this table turns every one of them into a verdict state and a stable reason.
 */
import type { VerdictState } from '../verdict.ts';
import { Reason } from '../vocabulary.ts';

export const CnpgPhase = {
  Healthy: 'Cluster in healthy state',
  FirstPrimary: 'Setting up primary',
  CreatingReplica: 'Creating a new replica',
  WaitingForInstances: 'Waiting for the instances to become active',
  Switchover: 'Switchover in progress',
  FailOver: 'Failing over',
  Upgrade: 'Upgrading cluster',
  MajorUpgrade: 'Upgrading Postgres major version',
  UpgradeDelayed: 'Cluster upgrade delayed',
  OnlineUpgrading: 'Online upgrade in progress',
  InplacePrimaryRestart: 'Primary instance is being restarted in-place',
  InplaceDeletePrimaryRestart: 'Primary instance is being restarted without a switchover',
  ApplyingConfiguration: 'Applying configuration',
  ReplicaClusterPromotion: 'Promoting to primary cluster',
  WaitingForUser: 'Waiting for user action',
  Unrecoverable: 'Cluster is unrecoverable and needs manual intervention',
  CannotCreateClusterObjects: 'Unable to create required cluster objects',
  UnknownPlugin: 'Cluster cannot proceed to reconciliation due to an unknown plugin being required',
  FailurePlugin: 'Cluster cannot proceed to reconciliation due to an error while interacting with plugins',
  ImageCatalogError: 'Cluster has incomplete or invalid image catalog',
  ArchitectureBinaryMissing: 'Cluster cannot execute instance online upgrade due to missing architecture binary',
  /** New in 1.30: CNPG's own validation, run while reconciling when its admission webhook was not asked. */
  DefinitionInvalid: 'Invalid cluster definition',
} as const;

export interface PhaseMeaning {
  state: VerdictState;
  reason: Reason;
  /** Human sentence; the phase and its reason are appended by the check. */
  message: string;
}

const m = (state: VerdictState, reason: Reason, message: string): PhaseMeaning => ({ state, reason, message });

const MEANINGS: Record<string, PhaseMeaning> = {
  [CnpgPhase.Healthy]: m('Ready', Reason.CNPGClusterHealthy, 'CNPG cluster is healthy'),
  [CnpgPhase.FirstPrimary]: m('Provisioning', Reason.CNPGClusterProvisioning, 'CNPG is setting up the primary'),
  [CnpgPhase.CreatingReplica]: m('Provisioning', Reason.CNPGClusterProvisioning, 'CNPG is creating a replica'),
  [CnpgPhase.WaitingForInstances]: m(
    'Provisioning',
    Reason.CNPGClusterProvisioning,
    'CNPG is waiting for the instances to become active',
  ),
  [CnpgPhase.Switchover]: m('Configuring', Reason.CNPGSwitchover, 'CNPG is changing the primary (switchover)'),
  [CnpgPhase.FailOver]: m('Configuring', Reason.CNPGFailingOver, 'CNPG is failing over to a new primary'),
  [CnpgPhase.Upgrade]: m('Configuring', Reason.CNPGUpgrading, 'CNPG is upgrading the cluster'),
  [CnpgPhase.MajorUpgrade]: m('Configuring', Reason.CNPGUpgrading, 'CNPG is upgrading the PostgreSQL major version'),
  [CnpgPhase.UpgradeDelayed]: m('Configuring', Reason.CNPGUpgrading, 'CNPG has delayed the cluster upgrade'),
  [CnpgPhase.OnlineUpgrading]: m('Configuring', Reason.CNPGUpgrading, 'CNPG is upgrading the instances online'),
  [CnpgPhase.InplacePrimaryRestart]: m('Configuring', Reason.CNPGRestarting, 'CNPG is restarting the primary'),
  [CnpgPhase.InplaceDeletePrimaryRestart]: m(
    'Configuring',
    Reason.CNPGRestarting,
    'CNPG is restarting the primary without a switchover',
  ),
  [CnpgPhase.ApplyingConfiguration]: m(
    'Configuring',
    Reason.CNPGApplyingConfiguration,
    'CNPG is applying configuration',
  ),
  [CnpgPhase.ReplicaClusterPromotion]: m('Configuring', Reason.CNPGPromoting, 'CNPG is promoting the replica cluster'),
  [CnpgPhase.WaitingForUser]: m('Failed', Reason.CNPGWaitingForUser, 'CNPG is waiting for a user action'),
  [CnpgPhase.Unrecoverable]: m('Failed', Reason.CNPGUnrecoverable, 'CNPG cluster is unrecoverable'),
  [CnpgPhase.CannotCreateClusterObjects]: m(
    'Failed',
    Reason.CNPGProvisioningFailed,
    'CNPG cannot create the objects the cluster needs',
  ),
  [CnpgPhase.UnknownPlugin]: m('Failed', Reason.CNPGPluginError, 'CNPG needs a plugin it does not know'),
  // CNPG sets it for any error while talking to a plugin, a passing one included (the plugin's connection not
  // loaded within 5 s, a conflict while the plugin writes its Role) and tries again 15 s later: work in progress, as
  // for the pipeline's other waits; the progress deadline makes one that lasts Stalled. An unknown plugin stays
  // Failed: it is one nobody installed.
  [CnpgPhase.FailurePlugin]: m(
    'Configuring',
    Reason.CNPGPluginError,
    'CNPG failed while talking to a plugin and tries again',
  ),
  [CnpgPhase.ImageCatalogError]: m('Failed', Reason.CNPGImageError, 'CNPG image catalog is incomplete or invalid'),
  [CnpgPhase.ArchitectureBinaryMissing]: m(
    'Failed',
    Reason.CNPGImageError,
    'CNPG is missing the binary for the instance architecture',
  ),
  [CnpgPhase.DefinitionInvalid]: m(
    'Failed',
    Reason.CNPGProvisioningFailed,
    'CNPG finds the cluster definition invalid (its admission webhook did not judge it)',
  ),
};

/** What a CNPG phase means; an empty phase is "not picked up yet", an unknown one "still working". */
export function meaningOfPhase(phase: string | undefined): PhaseMeaning {
  if (!phase) return m('Pending', Reason.CNPGClusterPending, 'CNPG has not reported a phase yet');
  // `Object.hasOwn`: the phase comes from outside; "constructor" must not find Object.prototype's.
  if (Object.hasOwn(MEANINGS, phase)) return MEANINGS[phase] as PhaseMeaning;
  return m('Provisioning', Reason.CNPGClusterProvisioning, 'CNPG reports an unfamiliar phase');
}
