/**
 * Leader election on a real coordination.k8s.io/v1 Lease: one leader at a time, a fast hand-over when
 * the leader shuts down, take-over of a lease whose holder died, and a leader that loses the right to
 * renew (its RBAC grant is revoked) stepping down within its renew deadline, and, with nobody else around,
 * taking the lease back as the same term once it may renew again.
 */
import { CoordinationV1Api, CoreV1Api, RbacAuthorizationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaseElector, type LeaseElectorOptions } from '../../src/operator/kubernetes/leader.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';

let controlPlane: ControlPlane | undefined;
const electors: LeaseElector[] = [];

const cp = () => {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane;
};

beforeAll(async () => {
  controlPlane = await startControlPlane();
});
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop()));
});
afterAll(async () => {
  await controlPlane?.stop();
});

const suffix = Date.now().toString(36);
let count = 0;
async function namespace(): Promise<string> {
  const name = `lease-${suffix}-${++count}`;
  await cp()
    .kubeConfig.makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } });
  return name;
}

/** An elector plus a record of its leadership changes, with timestamps. */
function elector(options: LeaseElectorOptions, kc = cp().kubeConfig) {
  const e = new LeaseElector(kc, options);
  const changes: Array<{ leading: boolean; at: number; continued?: boolean }> = [];
  e.start({
    onStartedLeading: (continued) => changes.push({ leading: true, at: Date.now(), continued }),
    onStoppedLeading: () => changes.push({ leading: false, at: Date.now() }),
  });
  electors.push(e);
  return { e, changes };
}

const holderOf = async (namespace: string, name: string) =>
  (await cp().kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name, namespace })).spec;

/** Samples both electors and fails the test if both ever lead at the same moment. */
function watchForTwoLeaders(a: LeaseElector, b: LeaseElector) {
  let both = 0;
  const timer = setInterval(() => {
    if (a.isLeader() && b.isLeader()) both++;
  }, 20);
  return () => {
    clearInterval(timer);
    return both;
  };
}

const poll = (timeout: number) => ({ timeout, interval: 25 });

describe('LeaseElector (15 s lease, 10 s renew deadline, 2 s retry)', () => {
  it('elects exactly one leader and hands over within a couple of seconds when it shuts down', async () => {
    const ns = await namespace();
    const a = elector({ namespace: ns, name: 'pgfsm-leader', identity: 'replica-a' });
    await expect.poll(() => a.e.isLeader(), poll(10_000)).toBe(true);
    const b = elector({ namespace: ns, name: 'pgfsm-leader', identity: 'replica-b' });
    const stopWatching = watchForTwoLeaders(a.e, b.e);

    // Several renewals later, still one leader and the standby waiting.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(a.e.isLeader()).toBe(true);
    expect(b.e.isLeader()).toBe(false);
    const held = await holderOf(ns, 'pgfsm-leader');
    expect(held?.holderIdentity).toBe('replica-a');
    expect(held?.leaseDurationSeconds).toBe(15);
    expect(String(held?.renewTime)).toMatch(/\.\d{6}Z$/);

    const stoppedAt = Date.now();
    await a.e.stop();
    expect(a.changes.map((c) => c.leading)).toEqual([true, false]);
    await expect.poll(() => b.e.isLeader(), poll(5_000)).toBe(true);
    const handover = (b.changes[0]?.at ?? Number.POSITIVE_INFINITY) - stoppedAt;
    // Without the release the standby would wait out the whole 15 s lease.
    expect(handover).toBeLessThan(3_500);
    expect(stopWatching()).toBe(0);
    const after = await holderOf(ns, 'pgfsm-leader');
    expect(after?.holderIdentity).toBe('replica-b');
    expect(after?.leaseTransitions).toBe(1);
  });
});

describe('LeaseElector with short timings', () => {
  const fast = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 };

  it('waits out a lease whose holder died without releasing it, then takes it', async () => {
    const ns = await namespace();
    const now = new V1MicroTime(Date.now());
    await cp()
      .kubeConfig.makeApiClient(CoordinationV1Api)
      .createNamespacedLease({
        namespace: ns,
        body: {
          metadata: { name: 'pgfsm-leader', namespace: ns },
          spec: { holderIdentity: 'crashed', leaseDurationSeconds: 3, acquireTime: now, renewTime: now },
        },
      });
    const startedAt = Date.now();
    const b = elector({ namespace: ns, name: 'pgfsm-leader', identity: 'replica-b', ...fast });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(b.e.isLeader()).toBe(false);
    await expect.poll(() => b.e.isLeader(), poll(10_000)).toBe(true);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(3_000);
    expect((await holderOf(ns, 'pgfsm-leader'))?.holderIdentity).toBe('replica-b');
  });

  /**
   * A namespace where replica A runs as the operator does: a ServiceAccount token with exactly the
   * leader-election Role, whose binding `grant` and `revoke` give and take away.
   */
  async function replicaWithGrant() {
    const ns = await namespace();
    const admin = cp().kubeConfig;
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await admin
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'pgfsm' } } });
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'leader-election' },
        rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
      },
    });
    const grant = () =>
      rbac.createNamespacedRoleBinding({
        namespace: ns,
        body: {
          metadata: { name: 'pgfsm-leader-election' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'leader-election' },
          subjects: [{ kind: 'ServiceAccount', name: 'pgfsm', namespace: ns }],
        },
      });
    const revoke = () => rbac.deleteNamespacedRoleBinding({ name: 'pgfsm-leader-election', namespace: ns });
    await grant();
    const token = await cp().tokenFor({ namespace: ns, name: 'pgfsm' });
    const a = elector(
      { namespace: ns, name: 'pgfsm-leader', identity: 'replica-a', ...fast },
      cp().kubeConfigForToken(token),
    );
    await expect.poll(() => a.e.isLeader(), poll(15_000)).toBe(true);
    return { ns, a, grant, revoke };
  }

  it('a leader that cannot renew steps down within its renew deadline, before anyone else takes over', async () => {
    const { ns, a, revoke } = await replicaWithGrant();
    const b = elector({ namespace: ns, name: 'pgfsm-leader', identity: 'replica-b', ...fast });
    const stopWatching = watchForTwoLeaders(a.e, b.e);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(b.e.isLeader()).toBe(false);

    // The grant goes away: every renewal of A now fails with 403.
    await revoke();
    const revokedAt = Date.now();
    await expect.poll(() => a.e.isLeader(), poll(10_000)).toBe(false);
    const steppedDown = (a.changes.at(-1)?.at ?? 0) - revokedAt;
    expect(steppedDown).toBeLessThanOrEqual(fast.renewDeadlineMs + fast.retryPeriodMs + 500);
    expect(a.changes.map((c) => c.leading)).toEqual([true, false]);

    // B takes over only once the lease A can no longer renew has expired.
    await expect.poll(() => b.e.isLeader(), poll(10_000)).toBe(true);
    expect(b.changes[0]?.at ?? 0).toBeGreaterThan(a.changes.at(-1)?.at ?? Number.POSITIVE_INFINITY);
    expect(stopWatching()).toBe(0);
    expect((await holderOf(ns, 'pgfsm-leader'))?.holderIdentity).toBe('replica-b');
  });

  it('a leader that could not renew for a while, with nobody else around, takes the lease back as the same term', async () => {
    const { ns, a, grant, revoke } = await replicaWithGrant();
    expect(a.changes).toEqual([expect.objectContaining({ leading: true, continued: false })]);
    await revoke();
    await expect.poll(() => a.e.isLeader(), poll(10_000)).toBe(false);
    await grant();
    // The Lease still names A: nobody else can have led, so what A kept from its term still holds.
    await expect.poll(() => a.e.isLeader(), poll(10_000)).toBe(true);
    expect(a.changes.map(({ leading, continued }) => ({ leading, continued }))).toEqual([
      { leading: true, continued: false },
      { leading: false, continued: undefined },
      { leading: true, continued: true },
    ]);
    expect((await holderOf(ns, 'pgfsm-leader'))?.leaseTransitions).toBe(0);
  });

  it('a leader that sees another holder in the lease steps down at once', async () => {
    const ns = await namespace();
    const a = elector({ namespace: ns, name: 'pgfsm-leader', identity: 'replica-a', ...fast });
    await expect.poll(() => a.e.isLeader(), poll(10_000)).toBe(true);
    const leases = cp().kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await leases.readNamespacedLease({ name: 'pgfsm-leader', namespace: ns });
    const now = new V1MicroTime(Date.now());
    await leases.replaceNamespacedLease({
      name: 'pgfsm-leader',
      namespace: ns,
      body: {
        metadata: { name: 'pgfsm-leader', namespace: ns, resourceVersion: lease.metadata?.resourceVersion ?? '' },
        spec: { holderIdentity: 'intruder', leaseDurationSeconds: 3, acquireTime: now, renewTime: now },
      },
    });
    const at = Date.now();
    await expect.poll(() => a.e.isLeader(), poll(5_000)).toBe(false);
    expect(Date.now() - at).toBeLessThan(fast.renewDeadlineMs);
  });
});
