/**
 * Bad input gets a clear error and loses nothing: whatever a PostgresCluster's spec holds, a pass never
 * throws, and a spec the schema rejects stops the cluster in Failed.InvalidSpec with Stalled=True and a
 * message naming the field.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clusterObject, conditionOf, NS, simulationWith, statusOf } from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';

const anyJson = fc.jsonValue({ maxDepth: 3 });

/** Specs that keep some valid fields and garble others. */
const garbledSpec = fc.record(
  {
    class: fc.oneof(fc.constant('standard'), anyJson),
    instances: fc.oneof(fc.integer({ min: -5, max: 20 }), anyJson),
    storage: fc.oneof(fc.constantFrom('10Gi', '1Ti', 'ten gigs', ''), anyJson),
    postgresVersion: fc.oneof(fc.constantFrom('17', '16.2', 'abc'), anyJson),
    postgresqlConfig: anyJson,
    pgHBA: anyJson,
    connectionPoolerEnabled: anyJson,
    managedRoles: fc.oneof(fc.array(fc.record({ name: anyJson, exists: anyJson }), { maxLength: 3 }), anyJson),
    clusterDeletionPolicy: anyJson,
    suspend: anyJson,
  },
  { requiredKeys: [] },
);

describe('malformed PostgresClusters', () => {
  it('never make a pass throw, and an invalid spec is Stalled with the field named', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(garbledSpec, anyJson), async (spec) => {
        const sim = simulationWith([]);
        const object = { ...clusterObject('weird'), spec } as unknown as StoredObject;
        sim.api.create(object);
        for (let i = 0; i < 3; i++) {
          const outcome = await sim.reconcileNow({ namespace: NS, name: 'weird' });
          expect(outcome.found).toBe(true);
        }
        const status = statusOf(sim, 'weird');
        if (status.state === 'Failed.InvalidSpec') {
          const ready = conditionOf(sim, 'weird', 'ClusterReady');
          expect(ready.reason).toBe('InvalidConfiguration');
          expect(ready.message).toMatch(/^spec(\.[A-Za-z]+)?/);
          expect(conditionOf(sim, 'weird', 'Stalled').status).toBe('True');
        } else {
          expect(['Failed.ClassMissing', 'Provisioning.Cluster', 'Suspended']).toContain(status.state);
        }
      }),
      { numRuns: 150, seed: 20261130 },
    );
  });

  it('names the exact field of a bad value', async () => {
    const sim = simulationWith([clusterObject('weird', { instances: 42 })]);
    for (let i = 0; i < 2; i++) await sim.reconcileNow({ namespace: NS, name: 'weird' });
    expect(statusOf(sim, 'weird').state).toBe('Failed.InvalidSpec');
    expect(conditionOf(sim, 'weird', 'ClusterReady').message).toMatch(/^spec\.instances: /);
  });
});
