/**
 * Adoption never changes a running database's credentials: an orphaned CNPG Cluster that authenticates
 * its superuser with another Secret (one made by the reference controller, `<name>-secret`, or by hand)
 * stops the pipeline in Failed.Cluster with a reason that says what to do, and is adopted once a person
 * has pointed it at pgfsm's Secret.
 */
import { describe, expect, it } from 'vitest';
import { isReadyState } from '../../machines/states.ts';
import { CNPG_TAKE_UP_MS, SPEC_WRITTEN_AT_ANNOTATION } from '../../src/operator/domain/components/cluster.ts';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
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

const cnpgOf = (sim: Simulation) =>
  sim.api.get({ kind: 'Cluster', namespace: NS, name: 'orders' }) as unknown as CnpgCluster | undefined;

const actionsOf = (sim: Simulation) => eventsOf(sim, 'orders').map((e) => e.action);

function pointCnpgAt(sim: Simulation, secret: string) {
  const cnpg = cnpgOf(sim);
  if (!cnpg) throw new Error('no CNPG cluster');
  sim.api.put({ ...cnpg, spec: { ...cnpg.spec, superuserSecret: { name: secret } } } as unknown as StoredObject);
}

describe('adopting a CNPG Cluster that uses another superuser Secret', () => {
  it('fails naming the Secret and the field, writes nothing to it, and adopts it once it is pointed at ours', async () => {
    const sim = simulationWith([clusterObject('orders', { clusterDeletionPolicy: 'Retain' })]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    // The retained CNPG Cluster, as if the reference controller had made it with its own Secret name.
    pointCnpgAt(sim, 'orders-secret');
    const before = cnpgOf(sim);

    sim.api.create(clusterObject('orders', { clusterDeletionPolicy: 'Retain' }));
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(conditionOf(sim, 'orders', 'ClusterReady')).toMatchObject({
      status: 'False',
      reason: 'ClusterSuperuserSecretMismatch',
      message: expect.stringContaining('uses superuser secret orders-secret, not orders-superuser'),
    });
    expect(conditionOf(sim, 'orders', 'Stalled')?.status).toBe('True');
    // Untouched: not adopted, not re-pointed.
    expect(cnpgOf(sim)?.spec).toEqual(before?.spec);
    expect(cnpgOf(sim)?.metadata.ownerReferences ?? []).toEqual([]);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'ClusterSuperuserSecretMismatch')).toHaveLength(1);
    expect(actionsOf(sim)).not.toContain('AdoptCNPGCluster');

    // A person points the CNPG Cluster at pgfsm's Secret (after copying the password into it).
    pointCnpgAt(sim, 'orders-superuser');
    await untilReady(sim, 'orders');
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    expect(cnpgOf(sim)?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    expect(actionsOf(sim)).toContain('AdoptCNPGCluster');
  });
});

describe('adopting a CNPG Cluster whose spec pgfsm then changes', () => {
  it('is not Ready on the healthy status CNPG wrote before the change, and is Ready once the wait runs out, without a flap', async () => {
    const sim = simulationWith([clusterObject('orders', { clusterDeletionPolicy: 'Retain' })]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    expect(getCluster(sim, 'orders')).toBeUndefined();
    // The released CNPG Cluster runs with one instance too many: adopting it writes the spec back to 3.
    const released = cnpgOf(sim);
    if (!released) throw new Error('no CNPG cluster');
    sim.api.put({ ...released, spec: { ...released.spec, instances: 4 } } as unknown as StoredObject);

    sim.api.create(clusterObject('orders', { clusterDeletionPolicy: 'Retain' }));
    const states: { at: number; state: string | undefined }[] = [];
    const until = sim.clock.now() + 60_000;
    while (sim.clock.now() < until) {
      await sim.run(250);
      states.push({ at: sim.clock.now(), state: getCluster(sim, 'orders')?.status?.state });
    }
    const adopted = eventsOf(sim, 'orders').find((e) => e.action === 'AdoptCNPGCluster');
    expect(adopted).toBeDefined();
    const writtenAt = Number(cnpgOf(sim)?.metadata.annotations?.[SPEC_WRITTEN_AT_ANNOTATION]);
    expect(writtenAt).toBeGreaterThanOrEqual(adopted?.time ?? Number.NaN);
    const firstReady = states.find((s) => s.at > (adopted?.time ?? 0) && isReadyState(s.state));
    // Not before CNPG had its time to take the change up (the simulated CNPG also scales in meanwhile), and
    // before the state's 15 s requeue: the pass looks again when the wait ends.
    expect(firstReady?.at).toBeGreaterThanOrEqual(writtenAt + CNPG_TAKE_UP_MS);
    expect(firstReady?.at).toBeLessThan(writtenAt + 15_000);
    // Once Ready, it stays so: no Ready, then not, then Ready again.
    const after = states.filter((s) => s.at >= (firstReady?.at ?? 0));
    expect(after.every((s) => isReadyState(s.state))).toBe(true);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'ClusterReady' || r === 'Ready').length).toBeLessThanOrEqual(2);
  });
});
