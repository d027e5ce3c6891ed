/**
 * Bad input gets a clear error and loses nothing: whatever a PostgresCluster's spec holds, a pass never
 * throws, and a spec the schema rejects stops the cluster in Failed.InvalidSpec with Stalled=True and a
 * message naming the field.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { observeCluster } from '../../src/operator/core/observe.ts';
import { explain } from '../../src/operator/explain/index.ts';
import {
  clusterObject,
  conditionOf,
  getCluster,
  NS,
  passwordSecret,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
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

  /** Objects stored before the CRD rules, or with validation off: each spec, and the field its failure names. */
  const stored: Array<[name: string, spec: unknown, field: string]> = [
    ['no-spec', undefined, 'spec: '],
    ['spec-null', null, 'spec: '],
    ['spec-string', 'standard', 'spec: '],
    ['spec-array', [{ class: 'standard' }], 'spec: '],
    ['class-number', { class: 7 }, 'spec.class: '],
    ['class-object', { class: { name: 'standard' } }, 'spec.class: '],
    ['class-empty', { class: '' }, 'spec.class: '],
    ['roles-string', { class: 'standard', managedRoles: 'app' }, 'spec.managedRoles: '],
    ['roles-object', { class: 'standard', managedRoles: { name: 'app' } }, 'spec.managedRoles: '],
    ['roles-number', { class: 'standard', managedRoles: 7 }, 'spec.managedRoles: '],
    ['role-null', { class: 'standard', managedRoles: [null] }, 'spec.managedRoles[0]: '],
    [
      'ref-null',
      { class: 'standard', managedRoles: [{ name: 'app', passwordSecretRef: null }] },
      'spec.managedRoles[0].passwordSecretRef: ',
    ],
    [
      'ref-string',
      { class: 'standard', managedRoles: [{ name: 'app', passwordSecretRef: 'app-password' }] },
      'spec.managedRoles[0].passwordSecretRef: ',
    ],
    [
      'ref-name-number',
      { class: 'standard', managedRoles: [{ name: 'app', passwordSecretRef: { name: 7 } }] },
      'spec.managedRoles[0].passwordSecretRef.name: ',
    ],
  ];
  const storedObject = (name: string, spec: unknown) => {
    const object = clusterObject(name) as unknown as Record<string, unknown>;
    if (spec === undefined) delete object.spec;
    else object.spec = spec;
    return object as unknown as StoredObject;
  };

  it.each(stored)(
    '%s: a pass never throws and ends in Failed.InvalidSpec naming the field',
    async (name, spec, field) => {
      const sim = simulationWith([storedObject(name, spec)]);
      for (let i = 0; i < 3; i++) {
        const outcome = await sim.reconcileNow({ namespace: NS, name });
        expect(outcome.error).toBeUndefined();
      }
      expect(statusOf(sim, name).state).toBe('Failed.InvalidSpec');
      const ready = conditionOf(sim, name, 'ClusterReady');
      expect(ready.reason).toBe('InvalidConfiguration');
      expect(ready.message.startsWith(field)).toBe(true);
      expect(conditionOf(sim, name, 'Stalled').status).toBe('True');
    },
  );

  it('a class that is named but absent is still Failed.ClassMissing', async () => {
    const sim = simulationWith([clusterObject('orphan', { class: 'gone' })]);
    for (let i = 0; i < 2; i++) await sim.reconcileNow({ namespace: NS, name: 'orphan' });
    expect(statusOf(sim, 'orphan').state).toBe('Failed.ClassMissing');
    expect(conditionOf(sim, 'orphan', 'ClusterReady').reason).toBe('ClusterClassNotFound');
  });

  it('stay their own failure: a healthy cluster beside them is woken by its Secret and class events at once', async () => {
    const healthy = clusterObject('healthy', {
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
    });
    const sim = simulationWith([...stored.map(([name, spec]) => storedObject(name, spec)), healthy]);
    sim.api.create(passwordSecret('app-password', 'app'));
    await untilReady(sim, 'healthy');
    for (const [name] of stored) expect(statusOf(sim, name).state, name).toBe('Failed.InvalidSpec');
    // A change of the role's Secret wakes the healthy cluster within the instant, not at the next resync.
    const passes = () => sim.passes.filter((p) => p.key.name === 'healthy').length;
    const before = passes();
    sim.api.put({
      ...passwordSecret('app-password', 'app'),
      stringData: { username: 'app', password: 'new' },
    } as never);
    await sim.run(10);
    expect(passes()).toBeGreaterThan(before);
  });

  it('a role Secret name no Secret can have is never asked for, fails the spec naming it, and explain offers no Secret to create', async () => {
    const roles = [{ name: 'app', passwordSecretRef: { name: 'team/app-password' } }];
    const sim = simulationWith([clusterObject('slash', { managedRoles: roles })]);
    const asked: string[] = [];
    const get = sim.ports.secrets.get.bind(sim.ports.secrets);
    sim.ports.secrets.get = (ref) => {
      asked.push(ref.name);
      return get(ref);
    };
    for (let i = 0; i < 2; i++)
      expect((await sim.reconcileNow({ namespace: NS, name: 'slash' })).error).toBeUndefined();
    expect(asked).not.toContain('team/app-password');
    expect(statusOf(sim, 'slash').state).toBe('Failed.InvalidSpec');
    expect(conditionOf(sim, 'slash', 'ClusterReady').message).toMatch(
      /^spec\.managedRoles\[0\]\.passwordSecretRef\.name: team\/app-password is no Secret name/,
    );
    const cluster = getCluster(sim, 'slash');
    if (!cluster) throw new Error('slash is gone');
    const observation = await observeCluster(sim.ports, cluster);
    const { hints } = explain({ observation, settings: sim.settings, now: sim.clock.now() });
    expect(hints.some((h) => h.startsWith('fix spec.managedRoles[0].passwordSecretRef.name: '))).toBe(true);
    expect(hints.filter((h) => h.startsWith('create Secret'))).toEqual([]);
  });
});
