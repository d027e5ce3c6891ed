/** CNPG v1.28 to v1.30 `status.phase` sentences and what pgfsm makes of each (reference §3.4 and §8.1). */
import { describe, expect, it } from 'vitest';
import { CnpgPhase, meaningOfPhase } from '../../../src/operator/domain/components/cnpg-phases.ts';
import type { VerdictState } from '../../../src/operator/domain/verdict.ts';
import { Reason } from '../../../src/operator/domain/vocabulary.ts';

/** The expectation for every phase, written out from the CNPG sentences, not from the constants' names. */
const TABLE: Array<[phase: string, state: VerdictState, reason: string]> = [
  ['Cluster in healthy state', 'Ready', Reason.CNPGClusterHealthy],
  ['Setting up primary', 'Provisioning', Reason.CNPGClusterProvisioning],
  ['Creating a new replica', 'Provisioning', Reason.CNPGClusterProvisioning],
  ['Waiting for the instances to become active', 'Provisioning', Reason.CNPGClusterProvisioning],
  ['Switchover in progress', 'Configuring', Reason.CNPGSwitchover],
  ['Failing over', 'Configuring', Reason.CNPGFailingOver],
  ['Primary instance is being restarted in-place', 'Configuring', Reason.CNPGRestarting],
  ['Primary instance is being restarted without a switchover', 'Configuring', Reason.CNPGRestarting],
  ['Upgrading cluster', 'Configuring', Reason.CNPGUpgrading],
  ['Upgrading Postgres major version', 'Configuring', Reason.CNPGUpgrading],
  ['Cluster upgrade delayed', 'Configuring', Reason.CNPGUpgrading],
  ['Online upgrade in progress', 'Configuring', Reason.CNPGUpgrading],
  ['Applying configuration', 'Configuring', Reason.CNPGApplyingConfiguration],
  ['Promoting to primary cluster', 'Configuring', Reason.CNPGPromoting],
  ['Waiting for user action', 'Failed', Reason.CNPGWaitingForUser],
  ['Cluster is unrecoverable and needs manual intervention', 'Failed', Reason.CNPGUnrecoverable],
  ['Unable to create required cluster objects', 'Failed', Reason.CNPGProvisioningFailed],
  [
    'Cluster cannot proceed to reconciliation due to an unknown plugin being required',
    'Failed',
    Reason.CNPGPluginError,
  ],
  [
    'Cluster cannot proceed to reconciliation due to an error while interacting with plugins',
    'Configuring',
    Reason.CNPGPluginError,
  ],
  ['Cluster has incomplete or invalid image catalog', 'Failed', Reason.CNPGImageError],
  [
    'Cluster cannot execute instance online upgrade due to missing architecture binary',
    'Failed',
    Reason.CNPGImageError,
  ],
  ['Invalid cluster definition', 'Failed', Reason.CNPGProvisioningFailed],
];

describe('CNPG phase meanings', () => {
  it.each(TABLE)('"%s" -> %s / %s', (phase, state, reason) => {
    const meaning = meaningOfPhase(phase);
    expect(meaning.state).toBe(state);
    expect(meaning.reason).toBe(reason);
    expect(meaning.message).not.toBe('');
  });

  it('the table covers every value of CnpgPhase, and nothing else', () => {
    const tablePhases = TABLE.map(([phase]) => phase).sort();
    expect(new Set(tablePhases).size).toBe(tablePhases.length);
    expect(tablePhases).toEqual(Object.values(CnpgPhase).sort());
  });

  it('CnpgPhase holds the 21 phase sentences of CNPG v1.28 and the one 1.30 added', () => {
    expect(Object.keys(CnpgPhase)).toHaveLength(22);
  });

  it.each([[''], [undefined]])('an empty phase (%j) is Pending / CNPGClusterPending', (phase) => {
    const meaning = meaningOfPhase(phase);
    expect(meaning.state).toBe('Pending');
    expect(meaning.reason).toBe(Reason.CNPGClusterPending);
  });

  it.each([['Some future phase CNPG adds'], ['cluster in healthy state'], ['Cluster in healthy state ']])(
    'an unknown sentence (%j) is still working: Provisioning / CNPGClusterProvisioning',
    (phase) => {
      const meaning = meaningOfPhase(phase);
      expect(meaning.state).toBe('Provisioning');
      expect(meaning.reason).toBe(Reason.CNPGClusterProvisioning);
    },
  );

  // The phase is foreign input: a sentence that happens to be the name of an Object.prototype member
  // must be just as unfamiliar as any other.
  it.each([['constructor'], ['toString'], ['hasOwnProperty'], ['__proto__']])(
    'a phase named like an Object.prototype member (%j) is an unfamiliar phase, not a crash',
    (phase) => {
      const meaning = meaningOfPhase(phase);
      expect(meaning.state).toBe('Provisioning');
      expect(meaning.reason).toBe(Reason.CNPGClusterProvisioning);
      expect(typeof meaning.message).toBe('string');
    },
  );

  it('only failures that need a human are Failed; no operational phase is', () => {
    const failed = TABLE.filter(([, state]) => state === 'Failed').map(([phase]) => phase);
    for (const phase of failed) expect(meaningOfPhase(phase).state).toBe('Failed');
    expect(failed).toHaveLength(7);
    expect(meaningOfPhase(CnpgPhase.Switchover).state).not.toBe('Failed');
    // CNPG retries a failed talk with a plugin itself, 15 s later; one that lasts is Stalled by the progress deadline.
    expect(meaningOfPhase(CnpgPhase.FailurePlugin).state).not.toBe('Failed');
    expect(meaningOfPhase(CnpgPhase.FailOver).state).not.toBe('Failed');
  });
});
