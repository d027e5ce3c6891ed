/**
 * A pass follows its own writes (core/follow.ts): it ticks again on what their answers say instead of
 * ending and leaving the same tick to the next pass. Nothing a user sees may change but the count of
 * passes and status writes: the same events in the same order, the same status at the end.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import {
  clusterObject,
  getCluster,
  NS,
  passwordSecret,
  reasonsOf,
  simulationWith,
  standardClass,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';

const fleet = (): StoredObject[] => [
  clusterObject('plain'),
  clusterObject('pooled', {
    instances: 2,
    connectionPoolerEnabled: true,
    managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
  }),
  clusterObject('classless', { class: 'missing' }),
  clusterObject('invalid', { instances: 0 } as never),
  passwordSecret('app-password', 'app'),
];
const NAMES = ['plain', 'pooled', 'classless', 'invalid'];

/**
 * The status without its times (a pass that follows its writes stores it sooner), nor the uid of the CNPG Cluster
 * (the in-memory API numbers uids in creation order, which the passes' order on the two workers decides: the
 * class protection's passes share them).
 */
const timeless = (status: PostgresClusterStatus | undefined) =>
  status && {
    ...status,
    ...(status.provisionerRef ? { provisionerRef: { ...status.provisionerRef, uid: undefined } } : {}),
    stateSince: undefined,
    lastTransitionTime: undefined,
    conditions: status.conditions?.map((c) => ({ ...c, lastTransitionTime: undefined })),
  };

async function runWith(followWrites: boolean) {
  const sim = simulationWith(fleet(), { followWrites });
  await sim.run(20 * 60_000);
  // A change after Ready: the ConfigMap's step is taken again, alone.
  sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'plain-endpoints' });
  await sim.run(5 * 60_000);
  const statusWrites = sim.api.writes.filter((w) => w.verb === 'updateStatus').length;
  return {
    sim,
    statusWrites,
    passes: sim.passCount,
    reasons: Object.fromEntries(NAMES.map((n) => [n, reasonsOf(sim, n)])),
    statuses: Object.fromEntries(NAMES.map((n) => [n, timeless(getCluster(sim, n)?.status)])),
  };
}

describe('a pass that follows its own writes', () => {
  it('says and stores what single-tick passes do, with fewer passes and status writes', async () => {
    const single = await runWith(false);
    const following = await runWith(true);
    expect(following.statuses.plain?.state).toBe('Ready');
    expect(following.statuses.pooled?.state).toBe('Ready');
    // The same words, but for the deleted ConfigMap: single-tick passes store Ready False while they re-create
    // it (NotReady, then Ready again); a pass that follows its write re-creates it without Ready ever changing
    // in the status, and says only what it did (core/announcements.ts).
    const readiness = ['NotReady', 'Ready'];
    const afterLoss = (reasons: string[]) => reasons.slice(reasons.indexOf('NotReady'));
    expect(afterLoss(single.reasons.plain ?? [])).toEqual(['NotReady', 'EndpointsRepaired', 'Ready']);
    expect(following.reasons).toEqual({
      ...single.reasons,
      plain: single.reasons.plain?.filter((r, i, all) => !readiness.includes(r) || i < all.indexOf('NotReady')),
    });
    expect(following.statuses).toEqual(single.statuses);
    // The plain cluster alone saves 3 status writes (Pending, Provisioning.Secret, Provisioning.ConfigMap),
    // and so does the pooled one; the deleted ConfigMap's pass takes it back to Ready in one.
    expect(following.statusWrites).toBeLessThanOrEqual(single.statusWrites - 6);
    expect(following.passes).toBeLessThan(single.passes);
  });

  it('takes a new cluster to its CNPG Cluster requested in one pass and one status write', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    const mark = sim.api.writes.length;
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome).toMatchObject({ to: 'Provisioning.Cluster', writes: 3, statusWritten: true });
    expect(outcome.from).toBeUndefined();
    // Besides the CNPG simulator's own writes to its Cluster, as it comes up.
    const writes = sim.api.writes.slice(mark).filter((w) => !(w.kind === 'Cluster' && w.verb === 'update'));
    expect(writes.map((w) => `${w.verb} ${w.kind}`)).toEqual([
      'update PostgresCluster',
      'create Secret',
      'apply Cluster',
      'updateStatus PostgresCluster',
    ]);
    expect(outcome.events.map((e) => e.reason)).toEqual(['SuperuserSecretCreated', 'CNPGClusterCreated']);
    // What it followed, each at the version its write left: their watch events wake it for nothing
    // (driver/echoes.ts). Not the Cluster, whose answer it did not go on from, nor the status written last.
    const secret = sim.api.list('Secret', NS).find((s) => s.metadata.name === 'orders-superuser');
    const cluster = getCluster(sim, 'orders');
    expect(outcome.followed).toEqual([
      { kind: 'PostgresCluster', namespace: NS, name: 'orders', resourceVersion: expect.any(String) },
      { kind: 'Secret', namespace: NS, name: 'orders-superuser', resourceVersion: secret?.metadata.resourceVersion },
    ]);
    expect(Number(outcome.followed?.[0]?.resourceVersion)).toBeLessThan(Number(cluster?.metadata.resourceVersion));
  });

  it('goes on from a state it only left: a class that appears takes a failed cluster on to its CNPG Cluster', async () => {
    const sim = simulationWith([clusterObject('orders', { class: 'late' })]);
    expect(await sim.reconcileNow({ namespace: NS, name: 'orders' })).toMatchObject({ to: 'Failed.ClassMissing' });
    sim.api.create({ ...standardClass(), metadata: { name: 'late', namespace: '' } } as StoredObject);
    // Leaving the failure for Pending writes nothing: without following that step, Pending waited for
    // the requeue delay, since no write of its own would wake the cluster sooner. Then the chart's
    // longest chain: the finalizer (never added while the class was missing), the Secret, the Cluster.
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome).toMatchObject({
      from: 'Failed.ClassMissing',
      to: 'Provisioning.Cluster',
      writes: 3,
      statusWritten: true,
    });
    // Not cut short (that runs the pass again at once): the Cluster step's own wait for CNPG.
    expect(outcome.requeue).toMatchObject({ kind: 'after', ms: expect.any(Number) });
    expect(outcome.requeue.kind === 'after' && outcome.requeue.ms).toBeGreaterThan(0);
    expect(sim.api.list('Cluster', NS)).toHaveLength(1);
  });

  it('ends where a write failed, with that failure, and leaves the next step to the next pass', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    sim.api.injectFault('Secret', 'create', 'forbidden');
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome.to).toBe('Provisioning.Secret');
    expect(outcome.writes).toBe(1);
    expect(outcome.requeue.kind).toBe('backoff');
    expect(sim.api.list('Cluster', NS)).toHaveLength(0);
    expect(getCluster(sim, 'orders')?.status?.conditions?.find((c) => c.type === 'SecretsReady')?.status).toBe('False');
  });
});
