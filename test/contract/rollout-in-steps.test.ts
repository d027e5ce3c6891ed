/**
 * Behaviour contract: a change CNPG accepts only in parts. CNPG's webhook refuses an update of the image
 * and the PostgreSQL parameters together under `primaryUpdateMethod: switchover`; pgfsm rolls it out in
 * two steps it shows (Provisioning.ClusterStaged, CNPGClusterUpdatingInSteps, CNPGClusterUpdateStaged): the
 * parameters, then, once CNPG is healthy with every instance ready, the image.
 */

import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import {
  clusterObject,
  conditionOf,
  editSpec,
  eventsOf,
  NS,
  reasonsOf,
  simulationWith,
  standardClass,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

/** CNPG v1.28's `validateConfigurationChange`, as the API server would run it on pgfsm's applies. */
function cnpgWebhook(sim: Simulation): string[] {
  const refused: string[] = [];
  sim.api.admit(({ object, previous }) => {
    if (object.kind !== 'Cluster' || !previous) return undefined;
    const next = (object as unknown as CnpgCluster).spec;
    const old = (previous as unknown as CnpgCluster).spec;
    if (old.imageName === next.imageName || next.primaryUpdateMethod !== 'switchover') return undefined;
    if (isDeepStrictEqual(old.postgresql?.parameters ?? {}, next.postgresql?.parameters ?? {})) return undefined;
    const said =
      `admission webhook "vcluster.cnpg.io" denied the request: Cluster.postgresql.cnpg.io "${object.metadata.name}" ` +
      `is invalid: spec.imageName: Invalid value: "${next.imageName}": Can't change image name and configuration at ` +
      'the same time when `primaryUpdateMethod` is set to `switchover`.';
    refused.push(said);
    return said;
  });
  return refused;
}

const cnpgOf = (sim: Simulation) => sim.api.get<CnpgCluster>({ kind: 'Cluster', namespace: NS, name: 'orders' });
const upgrade = (sim: Simulation) =>
  editSpec(sim, 'orders', (spec) => ({ ...spec, postgresVersion: '18', postgresqlConfig: { max_connections: '300' } }));

describe('a change CNPG accepts only in parts is rolled out in two steps', () => {
  it('under switchover: the parameters, then the image once CNPG is healthy again, never refused', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = cnpgWebhook(sim);
    upgrade(sim);
    await sim.run(100);

    // Step 1 was written; CNPG applies the configuration and the image waits for it.
    const staged = eventsOf(sim, 'orders').find((e) => e.reason === 'CNPGClusterUpdateStaged');
    expect(staged?.message).toMatch(/step 1 of 2: postgresql\.parameters; the image .*:18 follows/);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.ClusterStaged');
    expect(conditionOf(sim, 'orders', 'ClusterReady')).toMatchObject({
      status: 'False',
      reason: 'CNPGClusterUpdatingInSteps',
      message: expect.stringContaining('step 2 of 2, the image ghcr.io/cloudnative-pg/postgresql:18 waits'),
    });
    expect(conditionOf(sim, 'orders', 'Reconciling').reason).toBe('ProvisioningClusterStaged');
    expect(cnpgOf(sim)?.spec.postgresql?.parameters?.max_connections).toBe('300');
    expect(cnpgOf(sim)?.spec.imageName).toMatch(/:17$/);
    expect(reasonsOf(sim, 'orders')).not.toContain('CNPGClusterUpdated');

    await untilReady(sim, 'orders');
    expect(cnpgOf(sim)?.spec.imageName).toMatch(/:18$/);
    expect(cnpgOf(sim)?.spec.postgresql?.parameters?.max_connections).toBe('300');
    expect(refused).toEqual([]);
    const updates = reasonsOf(sim, 'orders').filter(
      (r) => r === 'CNPGClusterUpdateStaged' || r === 'CNPGClusterUpdated',
    );
    expect(updates).toEqual(['CNPGClusterUpdateStaged', 'CNPGClusterUpdated']);
    expect(eventsOf(sim, 'orders').filter((e) => e.type === 'Warning')).toEqual([]);
  });

  it('a restart between the two steps resumes with the image', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = cnpgWebhook(sim);
    upgrade(sim);
    await sim.run(100);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.ClusterStaged');
    sim.restartOperator();
    await untilReady(sim, 'orders');
    expect(cnpgOf(sim)?.spec.imageName).toMatch(/:18$/);
    expect(refused).toEqual([]);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'CNPGClusterUpdateStaged')).toHaveLength(1);
  });

  it('under restart nothing is staged: one update', async () => {
    const cls = standardClass();
    const spec = cls.spec as { cnpg: { primaryUpdateMethod: string } };
    spec.cnpg.primaryUpdateMethod = 'restart';
    const sim = simulationWith([clusterObject('orders')]);
    const live = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
    sim.api.put({ ...live, spec: cls.spec });
    await untilReady(sim, 'orders');
    const refused = cnpgWebhook(sim);
    upgrade(sim);
    await sim.run(100);
    expect(statusOf(sim, 'orders').state).not.toBe('Provisioning.ClusterStaged');
    expect(cnpgOf(sim)?.spec.imageName).toMatch(/:18$/);
    await untilReady(sim, 'orders');
    expect(refused).toEqual([]);
    expect(reasonsOf(sim, 'orders')).not.toContain('CNPGClusterUpdateStaged');
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'CNPGClusterUpdated')).toHaveLength(1);
  });

  it('without the steps, CNPG would have refused: the same change sent whole fails as ClusterSpecRejected', async () => {
    // The webhook of this test is CNPG's rule indeed: sending the change in one piece is refused.
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = cnpgWebhook(sim);
    const whole = structuredClone(cnpgOf(sim)) as CnpgCluster;
    whole.spec.imageName = whole.spec.imageName?.replace(/:17$/, ':18');
    whole.spec.postgresql = { ...whole.spec.postgresql, parameters: { max_connections: '300' } };
    expect(() => sim.api.apply(whole as unknown as StoredObject, 'pgfsm')).toThrow(/at the same time/);
    expect(refused).toHaveLength(1);
  });
});
