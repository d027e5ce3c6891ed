/**
 * Issue 30, what the API says about classes and name clashes, on the in-memory world:
 * - a PostgresClusterClass in use carries `pgfsm.io/class-in-use`: deleting it leaves it Terminating, its clusters
 *   stay Ready and are told once, and it goes with its last cluster;
 * - a class that never existed still fails the cluster as ClassMissing, with a remedy the API accepts;
 * - a PostgresCluster named like a CNPG Cluster nobody handed over is told that, first, with the command that
 *   hands it over — not judged against a database that is not its own.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterClass } from '../../src/operator/api/schema.ts';
import { CLASS_DELETION_EVENT_REASON, CLASS_FINALIZER } from '../../src/operator/domain/class-protection.ts';
import { POSTGRES_IMAGE } from '../../src/operator/domain/components/cluster.ts';
import {
  clusterObject,
  conditionOf,
  eventsOf,
  getCluster,
  NS,
  reasonsOf,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const classOf = (sim: Simulation, name = 'standard') =>
  sim.api.get<PostgresClusterClass>({ kind: 'PostgresClusterClass', namespace: '', name });

describe('deleting a PostgresClusterClass in use', () => {
  it('leaves it Terminating while clusters use it: they stay Ready, are told once, and it goes with the last', async () => {
    const sim = simulationWith([clusterObject('orders'), clusterObject('billing')]);
    await untilReady(sim, 'orders');
    await untilReady(sim, 'billing');
    expect(classOf(sim)?.metadata.finalizers).toEqual([CLASS_FINALIZER]);

    sim.api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    await sim.run(30 * 60_000);
    expect(classOf(sim)?.metadata.deletionTimestamp).toBeDefined();
    for (const name of ['orders', 'billing']) {
      expect(statusOf(sim, name).state).toBe('Ready');
      expect(conditionOf(sim, name, 'Ready').status).toBe('True');
      expect(conditionOf(sim, name, 'Stalled').status).toBe('False');
      expect(reasonsOf(sim, name)).not.toContain('ClusterClassNotFound');
      // Told once, through the resyncs of half an hour.
      const told = eventsOf(sim, name).filter((e) => e.reason === CLASS_DELETION_EVENT_REASON);
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ type: 'Warning' });
      expect(told[0]?.message).toContain(
        `PostgresClusterClass standard is being deleted; it stays until no PostgresCluster uses it: billing, orders in ${NS}`,
      );
    }

    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    expect(classOf(sim)).toBeDefined();
    expect(statusOf(sim, 'billing').state).toBe('Ready');

    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'billing' });
    await sim.run(60_000);
    expect(getCluster(sim, 'billing')).toBeUndefined();
    expect(classOf(sim)).toBeUndefined();
  });

  it('a class nobody uses has no finalizer, and one whose last cluster goes loses it', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    sim.api.create({ ...classOf(sim), metadata: { name: 'premium', namespace: '' } } as unknown as StoredObject);
    await untilReady(sim, 'orders');
    expect(classOf(sim, 'premium')?.metadata.finalizers ?? []).toEqual([]);
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(classOf(sim)?.metadata.finalizers ?? []).toEqual([]);
    sim.api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    expect(classOf(sim)).toBeUndefined();
  });

  it('holds under lagging watches: one finalizer write each way, never a class gone under a Ready cluster', async () => {
    const sim = simulationWith([clusterObject('orders')], { watchLagMs: 2_000 });
    await untilReady(sim, 'orders');
    const classWrites = () => sim.api.writes.filter((w) => w.kind === 'PostgresClusterClass').length;
    const before = classWrites();
    sim.api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    await sim.run(10 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Ready');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(2 * 60_000);
    expect(classOf(sim)).toBeUndefined();
    expect(classWrites() - before).toBeLessThanOrEqual(2);
  });
});

describe('a class that never existed', () => {
  it('still fails as ClassMissing, offering only what the API accepts', async () => {
    const sim = simulationWith([clusterObject('orders', { class: 'standrad' })]);
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ClassMissing');
    const message = conditionOf(sim, 'orders', 'ClusterReady').message;
    expect(message).toContain('PostgresClusterClass standrad not found');
    expect(message).toContain('delete this PostgresCluster and create it again naming an existing class');
    expect(message).not.toContain('fix spec.class');
  });
});

describe('a PostgresCluster named like a CNPG Cluster nobody handed over', () => {
  const theirs = (spec: object): StoredObject =>
    ({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'orders', namespace: NS },
      spec: { instances: 1, imageName: `${POSTGRES_IMAGE}:17`, storage: { size: '20Gi' }, ...spec },
    }) as unknown as StoredObject;

  it('is told it is not adoptable, with the command, not judged against that database', async () => {
    const sim = simulationWith([]);
    sim.api.create(theirs({}));
    // A spec that the other database would refuse (an older major, less storage): not ours to compare.
    sim.api.create(clusterObject('orders', { postgresVersion: '16', storage: '10Gi' }));
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    const condition = conditionOf(sim, 'orders', 'ClusterReady');
    expect(condition.reason).toBe('ClusterNotAdoptable');
    expect(condition.message).toContain(
      `kubectl annotate -n ${NS} clusters.postgresql.cnpg.io orders pgfsm.io/adopt=true`,
    );
    const said = eventsOf(sim, 'orders')
      .map((e) => e.message)
      .join('\n');
    expect(said).not.toContain('cannot go down');
    expect(said).not.toContain('cannot shrink');
    expect(reasonsOf(sim, 'orders')).not.toContain('InvalidConfiguration');
    // Untouched.
    const cnpg = sim.api.get<StoredObject>({ kind: 'Cluster', namespace: NS, name: 'orders' });
    expect(cnpg?.metadata.ownerReferences ?? []).toEqual([]);
    expect((cnpg?.spec as { imageName?: string } | undefined)?.imageName).toBe(`${POSTGRES_IMAGE}:17`);
  });

  it('once handed over, what it runs bounds the spec: the major cannot go down', async () => {
    const sim = simulationWith([]);
    sim.api.create({
      ...theirs({}),
      metadata: { name: 'orders', namespace: NS, annotations: { 'pgfsm.io/adopt': 'true' } },
    } as unknown as StoredObject);
    sim.api.create(clusterObject('orders', { postgresVersion: '16', storage: '20Gi' }));
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.InvalidSpec');
    expect(conditionOf(sim, 'orders', 'ClusterReady').message).toContain('major version cannot go down');
  });
});
