/** What a pass whose status write failed hands over to the next pass of the object (core/announcements.ts). */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { Announcements, notIn } from '../../src/operator/core/announcements.ts';
import { type KubeEvent, normal, warning } from '../../src/operator/domain/effects.ts';

const cluster = (status: PostgresClusterStatus | undefined, uid = 'uid-1', name = 'orders'): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name, uid },
  spec: { class: 'standard' },
  ...(status ? { status } : {}),
});

const ready: PostgresClusterStatus = { state: 'Ready', phase: 'Ready' };
const provisioning: PostgresClusterStatus = { state: 'Provisioning.ConfigMap', phase: 'Provisioning' };
const notReady = warning('NotReady', 'BecomeNotReady', 'Cluster is no longer ready');
const readyAgain: KubeEvent = normal('Ready', 'BecomeReady', 'Cluster is up and running');

describe('Announcements', () => {
  it('hands the status and the announcements over to a pass that starts from the same stored status', () => {
    const memo = new Announcements();
    memo.hold(cluster(ready), provisioning, [notReady]);
    // Read again: a copy, possibly with undefined fields the API would not return.
    expect(memo.pending(cluster({ ...ready, stateSince: undefined }))).toEqual({
      status: provisioning,
      events: [notReady],
    });
  });

  it('announces, but goes on from what is stored, when the failed write landed after all', () => {
    const memo = new Announcements();
    memo.hold(cluster(ready), provisioning, [notReady]);
    expect(memo.pending(cluster(provisioning))).toEqual({ status: provisioning, events: [notReady] });
  });

  it('keeps what a landed write announced when the pass after it failed too, on the old view', () => {
    // Pass 1 stores `provisioning` but its answer is lost; pass 2 still reads `ready` (the watch has not
    // delivered pass 1's write), goes on from `provisioning` and fails on its conditional write, a conflict.
    const memo = new Announcements();
    memo.hold(cluster(ready), provisioning, [notReady]);
    const handover = memo.pending(cluster(ready));
    expect(handover?.status).toEqual(provisioning);
    const further: PostgresClusterStatus = { state: 'Provisioning.Pooler', phase: 'Provisioning' };
    const resumed = normal('Resumed', 'Resume', 'Reconciliation resumed');
    memo.hold(cluster(ready), further, [...(handover?.events ?? []), resumed]);
    // Pass 3 reads what pass 1 stored: pass 1's announcements are due; pass 2's transition was never stored,
    // and pass 3 takes it again (and announces it) from there, or not at all.
    expect(memo.pending(cluster(provisioning))).toEqual({ status: provisioning, events: [notReady] });
    // Still from the old view: the newest attempt, with everything it had taken over.
    memo.hold(cluster(ready), provisioning, [notReady]);
    memo.hold(cluster(ready), further, [notReady, resumed]);
    expect(memo.pending(cluster(ready))).toEqual({ status: further, events: [notReady, resumed] });
    // Pass 2's write landed after all.
    expect(memo.pending(cluster(further))).toEqual({ status: further, events: [notReady, resumed] });
  });

  it('drops what is held when another status was stored, or the name is another object', () => {
    const memo = new Announcements();
    memo.hold(cluster(ready), provisioning, [notReady]);
    expect(memo.pending(cluster({ state: 'Degraded', phase: 'Degraded' }))).toBeUndefined();
    expect(memo.size).toBe(0);
    // Dropped for good: the status it started from coming back later does not revive it.
    expect(memo.pending(cluster(ready))).toBeUndefined();

    memo.hold(cluster(ready), provisioning, [notReady]);
    expect(memo.pending(cluster(ready, 'uid-2'))).toBeUndefined();
    expect(memo.size).toBe(0);
  });

  it('holds a first status too: a cluster without any stored status', () => {
    const memo = new Announcements();
    memo.hold(cluster(undefined), { state: 'Pending', phase: 'Pending' }, []);
    expect(memo.pending(cluster(undefined))).toEqual({ status: { state: 'Pending', phase: 'Pending' }, events: [] });
  });

  it('forgets an object whose status is stored or which is gone', () => {
    const memo = new Announcements();
    memo.hold(cluster(ready), provisioning, [notReady]);
    memo.forget({ namespace: 'team-a', name: 'orders' });
    expect(memo.pending(cluster(ready))).toBeUndefined();
  });

  it('is bounded: the least recently held objects and the oldest announcements go first', () => {
    const memo = new Announcements(2, 2);
    memo.hold(cluster(ready, 'a', 'a'), provisioning, [notReady]);
    memo.hold(cluster(ready, 'b', 'b'), provisioning, [notReady]);
    memo.hold(cluster(ready, 'c', 'c'), provisioning, [notReady, readyAgain, notReady]);
    expect(memo.size).toBe(2);
    expect(memo.pending(cluster(ready, 'a', 'a'))).toBeUndefined();
    expect(memo.pending(cluster(ready, 'b', 'b'))?.events).toEqual([notReady]);
    expect(memo.pending(cluster(ready, 'c', 'c'))?.events).toEqual([readyAgain, notReady]);
  });

  it('tells an announcement a pass makes itself by reason and message', () => {
    const other = warning('NotReady', 'BecomeNotReady', 'Cluster is no longer ready: another reason');
    expect(notIn([notReady, readyAgain, other], [notReady])).toEqual([readyAgain, other]);
  });
});
