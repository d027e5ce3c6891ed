/**
 * A write that fails stops the writes planned after it, but not the announcements of the transition the pass
 * stores all the same (core/execute.ts); and a pass that enters Ready while a write of it fails, keeping the Ready
 * condition False, leaves its `Ready` to the pass that turns the condition True (core/announcements.ts). Found by
 * the fault suite against the real API server: the cluster entered Ready in a pass whose push of its databases'
 * roles got a 429, and never said Ready.
 */
import { describe, expect, it } from 'vitest';
import type { Condition, PostgresCluster, PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { Announcements, announce, type PassWords } from '../../src/operator/core/announcements.ts';
import { PortError } from '../../src/operator/core/errors.ts';
import { executeEffects, type PendingEvent } from '../../src/operator/core/execute.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { clusterReady, type Effect, normal } from '../../src/operator/domain/effects.ts';

const NO_SWITCH_OFF = { poolerSwitchedOff: false, backupsSwitchedOff: false };

const cluster = (status?: PostgresClusterStatus): PostgresCluster =>
  ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: { name: 'orders', namespace: 'team-a', uid: 'uid-1', resourceVersion: '7' },
    spec: { class: 'standard' },
    ...(status ? { status } : {}),
  }) as PostgresCluster;

const readyCondition = (ready: boolean): Condition => ({
  type: 'Ready',
  status: ready ? 'True' : 'False',
  reason: ready ? 'AllComponentsReady' : 'ManagedRolesReconciliationFailed',
  message: 'm',
  lastTransitionTime: '2026-12-07T00:00:00Z',
});
const statusOf = (state: string, ready: boolean): PostgresClusterStatus => ({
  state,
  conditions: [readyCondition(ready)],
});

describe('a write that fails', () => {
  it('stops the writes after it but keeps the announcements of the transition', async () => {
    const made: string[] = [];
    const ports = {
      cnpgClusters: {
        apply: async () => {
          throw new PortError('tooManyRequests', 'injected: 429');
        },
      },
      configMaps: { apply: async () => void made.push('configMap') },
    } as unknown as Ports;
    const object = { apiVersion: 'v1', kind: 'X', metadata: { name: 'orders', namespace: 'team-a' } };
    const effects: Effect[] = [
      { type: 'apply', component: 'managedRoles', object },
      { type: 'event', event: clusterReady() },
      { type: 'apply', component: 'configMap', object, event: normal('EndpointsUpdated', 'Update', 'updated') },
    ];
    const execution = await executeEffects(ports, cluster(), effects, NO_SWITCH_OFF);
    expect(execution.failure?.effect).toBe(effects[0]);
    expect(made).toEqual([]);
    expect(execution.events).toEqual([{ event: clusterReady(), announcement: true }]);
  });
});

describe('Ready, entered in a pass whose write failed', () => {
  const entering: PendingEvent = { event: clusterReady(), announcement: true };
  const failure = {
    component: 'managedRoles' as const,
    reason: 'ManagedRolesReconciliationFailed' as const,
    message: 'm',
  };
  const words = (previous: PostgresClusterStatus, status: PostgresClusterStatus, events: PendingEvent[]) =>
    ({ stored: cluster(previous), previous, status, events, statusOutcome: { kind: 'stored' } }) as PassWords;
  const provisioning = statusOf('Provisioning.ConfigMap', false);
  const readyButFailed = statusOf('Ready', false);
  const ready = statusOf('Ready', true);

  it('is said by the pass that turns the Ready condition True, once', () => {
    const memory = new Announcements();
    const first = announce({ ...words(provisioning, readyButFailed, [entering]), failure }, memory);
    expect(first.map((e) => e.reason)).toEqual(['ManagedRolesReconciliationFailed']);
    expect(announce(words(readyButFailed, ready, []), memory)).toEqual([clusterReady()]);
    expect(announce(words(ready, ready, []), memory)).toEqual([]);
  });

  it('waits through passes that fail again, and is held with a status that cannot be stored', () => {
    const memory = new Announcements();
    announce({ ...words(provisioning, readyButFailed, [entering]), failure }, memory);
    expect(announce(words(readyButFailed, readyButFailed, []), memory)).toEqual([]);
    const unstored: PassWords = { ...words(readyButFailed, ready, []), statusOutcome: { kind: 'failed' } };
    expect(announce(unstored, memory)).toEqual([]);
    expect(memory.pending(cluster(readyButFailed))?.events).toEqual([clusterReady()]);
  });

  it('is not owed once the cluster has left Ready', () => {
    const memory = new Announcements();
    announce({ ...words(provisioning, readyButFailed, [entering]), failure }, memory);
    announce(words(readyButFailed, provisioning, []), memory);
    expect(memory.owesReady(cluster())).toBe(false);
  });

  it('is not said again when a Ready cluster comes back from a failed write', () => {
    // Said when the state was entered; the failure and the return to True are the conditions' news, not Ready's.
    const memory = new Announcements();
    expect(announce({ ...words(ready, readyButFailed, []), failure }, memory).map((e) => e.reason)).toEqual([
      'ManagedRolesReconciliationFailed',
    ]);
    expect(announce(words(readyButFailed, ready, []), memory)).toEqual([]);
  });
});
