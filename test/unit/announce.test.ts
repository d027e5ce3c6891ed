/** The one rule book of what a pass says, and when (core/announcements.ts, `announce`). */
import { describe, expect, it } from 'vitest';
import type { Condition, PostgresCluster, PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { Announcements, announce, type PassWords } from '../../src/operator/core/announcements.ts';
import type { PendingEvent } from '../../src/operator/core/execute.ts';
import { normal, warning } from '../../src/operator/domain/effects.ts';

const condition = (type: string, status: 'True' | 'False', reason = 'R', message = 'm'): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2026-12-05T00:00:00Z',
});
const statusOf = (state: string, ready: boolean, extra: Condition[] = []): PostgresClusterStatus => ({
  state,
  conditions: [condition('Ready', ready ? 'True' : 'False'), ...extra],
});
const ready = statusOf('Ready', true);
const repairing = statusOf('Provisioning.ConfigMap', false);
const cluster = (status?: PostgresClusterStatus): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name: 'orders', uid: 'uid-1', resourceVersion: '7' },
  spec: { class: 'standard' },
  ...(status ? { status } : {}),
});

const becameReady = normal('Ready', 'BecomeReady', 'PostgresCluster is ready');
const lostReady = warning('NotReady', 'BecomeNotReady', 'PostgresCluster is no longer ready');
const repaired = normal('EndpointsRepaired', 'Repair', 'ConfigMap orders-endpoints repaired');
const report = (event = repaired): PendingEvent => ({ event, announcement: false });
const announcement = (event = becameReady): PendingEvent => ({ event, announcement: true });

const pass = (words: Partial<PassWords>): PassWords => ({
  stored: cluster(words.previous),
  previous: undefined,
  status: undefined,
  events: [],
  statusOutcome: { kind: 'stored' },
  ...words,
});

describe('announce', () => {
  it('says Ready when the stored Ready condition turns True', () => {
    const words = pass({ previous: repairing, status: ready, events: [report(), announcement()] });
    expect(announce(words, new Announcements())).toEqual([repaired, becameReady]);
  });

  it('says neither NotReady nor Ready for a pass that left Ready and came back within itself', () => {
    // A ConfigMap repaired while the pass followed its writes: the stored Ready never changed.
    const events = [announcement(lostReady), report(), announcement(becameReady)];
    expect(announce(pass({ previous: ready, status: ready, events }), undefined)).toEqual([repaired]);
  });

  it('says NotReady when the stored Ready condition turns False', () => {
    const words = pass({ previous: ready, status: repairing, events: [announcement(lostReady)] });
    expect(announce(words, undefined)).toEqual([lostReady]);
  });

  it('holds the announcements of a pass whose status write failed, and sends only its reports', () => {
    const memory = new Announcements();
    const words = pass({ previous: repairing, status: ready, events: [report(), announcement()] });
    expect(announce({ ...words, statusOutcome: { kind: 'failed' } }, memory)).toEqual([repaired]);
    expect(memory.pending(cluster(repairing))).toEqual({ status: ready, events: [becameReady] });
  });

  it('says a failed write once: not again while the stored condition says so already', () => {
    const failure = {
      component: 'configMap' as const,
      reason: 'ConfigMapReconciliationFailed' as const,
      message: 'no',
    };
    const first = pass({ previous: repairing, status: repairing, failure });
    expect(announce(first, undefined)).toEqual([warning('ConfigMapReconciliationFailed', 'Write', 'no')]);
    const said = statusOf('Provisioning.ConfigMap', false, [
      condition('ConfigMapsReady', 'False', 'ConfigMapReconciliationFailed', 'no'),
    ]);
    expect(announce({ ...first, previous: said }, undefined)).toEqual([]);
  });

  it('says a refused status in Events, once per version of the object', () => {
    const memory = new Announcements();
    const words = pass({
      previous: repairing,
      status: ready,
      events: [report(), announcement()],
      statusOutcome: { kind: 'refused', error: new Error('spec.instances: Invalid value') },
    });
    const said = announce(words, memory);
    expect(said.map((e) => e.reason)).toEqual(['EndpointsRepaired', 'Ready', 'StatusRejected']);
    // The same version refused again: only the reports of the writes made.
    expect(announce(words, memory)).toEqual([repaired]);
  });

  it('makes what the pass before could not, except what this pass says itself', () => {
    const resumed = normal('Resumed', 'Resume', 'Reconciliation resumed');
    const handover = { status: repairing, events: [resumed, becameReady] };
    const words = pass({ previous: repairing, status: ready, handover, events: [announcement()] });
    expect(announce(words, new Announcements())).toEqual([resumed, becameReady]);
  });

  it('keeps only the reports of a pass whose replica lost the lease, for its next term', () => {
    const memory = new Announcements();
    const words = pass({
      previous: repairing,
      events: [report(), announcement()],
      statusOutcome: { kind: 'lostLease' },
    });
    expect(announce(words, memory)).toEqual([]);
    expect(memory.takeUnsent(cluster(repairing))).toEqual([repaired]);
  });
});
