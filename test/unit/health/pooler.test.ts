/** The rw and ro Poolers: created, repaired on drift, deleted when disabled; ready means ready replicas. */
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ConnectionPoolerConfig, PoolMode } from '../../../src/operator/api/schema.ts';
import { OWNED_PARAMETERS_ANNOTATION } from '../../../src/operator/domain/components/cluster.ts';
import {
  desiredPooler,
  judgePoolers,
  POOLER_TYPES,
  poolerDrift,
  poolersServing,
} from '../../../src/operator/domain/components/pooler.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { Pooler, PoolerView } from '../../../src/operator/domain/objects.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { ADOPT_ANNOTATION, Reason } from '../../../src/operator/domain/vocabulary.ts';
import { CLUSTER_UID } from '../../../src/tools/fixtures/observations.ts';
import { configOf, effectOfType, eventOf, makeClass, withClass, world } from './support.ts';

/** A healthy world whose observed poolers are changed by `mutate` (per type). */
function withPoolers(mutate: (view: PoolerView, type: 'rw' | 'ro') => void, facts = {}): Observation {
  const observation = world(facts);
  const poolers: Observation['poolers'] = {};
  for (const type of POOLER_TYPES) {
    const view = structuredClone(observation.poolers[type]);
    if (!view) throw new Error(`fixture has no ${type} pooler`);
    mutate(view, type);
    poolers[type] = view;
  }
  return { ...observation, poolers };
}

/** The applies of a plan, each checked to be a pooler apply. */
function poolerApplies(effects: Effect[]) {
  const applies = effectOfType(effects, 'apply');
  expect(applies).toHaveLength(effects.length);
  for (const apply of applies) expect(apply.component).toBe('pooler');
  return applies.map((a) => ({ pooler: a.object as Pooler, event: eventOf(a) }));
}

describe('pooler disabled', () => {
  it('disabled with no pooler is Ready / PoolerDisabled and plans nothing', () => {
    const observation = world({ poolerEnabled: false });
    const config = configOf(observation);
    expect(config.pooler).toBeUndefined();
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.PoolerDisabled);
    expect(judgePoolers(observation, config).effects).toEqual([]);
    expect(poolersServing(observation, config)).toBe(false);
  });

  it('disabled with both poolers left over deletes both, and is not Ready until they are gone', () => {
    const leftovers = world().poolers;
    const observation = { ...world({ poolerEnabled: false }), poolers: leftovers };
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.PoolerDeleting);
    const effects = judgePoolers(observation, config).effects;
    const deletes = effectOfType(effects, 'delete');
    expect(deletes).toHaveLength(2);
    expect(effects).toHaveLength(2);
    expect(deletes.map((d) => d.ref.name).sort()).toEqual(['orders-pooler-ro', 'orders-pooler-rw']);
    for (const d of deletes) {
      expect(d.component).toBe('pooler');
      expect(d.ref).toMatchObject({ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Pooler', namespace: 'team-a' });
      expect(eventOf(d).reason).toBe('PoolerDeleted');
    }
  });

  it('disabled with only the ro pooler left over deletes just that one', () => {
    const { ro } = world().poolers;
    const observation = { ...world({ poolerEnabled: false }), poolers: { ro } };
    const deletes = effectOfType(judgePoolers(observation, configOf(observation)).effects, 'delete');
    expect(deletes.map((d) => d.ref.name)).toEqual(['orders-pooler-ro']);
  });

  it('disabled with a foreign Pooler of our name: never deleted, so never reported as being deleted', () => {
    const foreign = structuredClone(world().poolers.rw) as PoolerView;
    foreign.pooler.metadata.ownerReferences = [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'someone', uid: 'uid-someone', controller: true },
    ];
    const observation = { ...world({ poolerEnabled: false }), poolers: { rw: foreign } };
    const config = configOf(observation);
    expect(judgePoolers(observation, config).effects).toEqual([]);
    // Reporting "Removing the connection poolers" while planning no removal would wait forever.
    const h = judgePoolers(observation, config).verdict;
    expect(h.reason).not.toBe(Reason.PoolerDeleting);
    expect(['Ready', 'Failed']).toContain(h.state);
  });
});

describe('pooler enabled', () => {
  it('both missing: two applies (rw, ro) reported as one PoolersCreated; Provisioning / PoolerCreating', () => {
    const observation = world({ poolers: 'missing' });
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.PoolerCreating);
    const effects = judgePoolers(observation, config).effects;
    const applies = effectOfType(effects, 'apply');
    expect(applies).toHaveLength(2);
    expect(applies.map((a) => (a.object as Pooler).spec.type)).toEqual(['rw', 'ro']);
    expect(applies.map((a) => a.object.metadata.name)).toEqual(['orders-pooler-rw', 'orders-pooler-ro']);
    // Each write its own report, and the second the pair's, sent in place of the first's when both were made.
    expect(applies.map((a) => eventOf(a))).toMatchObject([
      { reason: 'PoolersCreated', message: 'Pooler orders-pooler-rw created' },
      { reason: 'PoolersCreated', message: 'Pooler orders-pooler-ro created' },
    ]);
    expect(applies[0]?.joins).toBeUndefined();
    expect(applies[1]?.joins).toEqual({
      previous: applies[0]?.event,
      event: expect.objectContaining({
        reason: 'PoolersCreated',
        message: 'Poolers orders-pooler-rw and orders-pooler-ro created',
      }),
    });
    for (const pooler of applies.map((a) => a.object as Pooler)) {
      expect(pooler.spec.cluster.name).toBe('orders');
      expect(pooler.spec.instances).toBe(2);
      expect(pooler.spec.pgbouncer.poolMode).toBe('transaction');
      expect(pooler.metadata.ownerReferences?.[0]).toMatchObject({ uid: CLUSTER_UID, controller: true });
    }
    expect(poolersServing(observation, config)).toBe(false);
  });

  it('one missing: one apply for it only', () => {
    const base = world();
    const observation = { ...base, poolers: { rw: base.poolers.rw } };
    const applies = poolerApplies(judgePoolers(observation, configOf(observation)).effects);
    expect(applies.map((a) => a.pooler.metadata.name)).toEqual(['orders-pooler-ro']);
    expect(applies[0]?.event).toMatchObject({ reason: 'PoolersCreated', message: 'Pooler orders-pooler-ro created' });
  });

  it('both ready (ready replicas = instances) is Ready / AllInstancesReady, serves, and plans nothing', () => {
    const observation = world();
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.AllInstancesReady);
    expect(judgePoolers(observation, config).effects).toEqual([]);
    expect(poolersServing(observation, config)).toBe(true);
  });

  it('no ready replicas is not Ready', () => {
    const observation = world({ poolers: 'notReady' });
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.PoolerCreating);
    expect(judgePoolers(observation, config).effects).toEqual([]);
    expect(poolersServing(observation, config)).toBe(false);
  });

  it('scheduled but not ready is not Ready: CNPG status.instances is no readiness signal (ref. §10.5)', () => {
    const observation = withPoolers((view, type) => {
      view.pooler.status = { instances: 2 }; // every pod scheduled
      view.readyReplicas = type === 'ro' ? 1 : 2; // one ro pod not ready
    });
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.message).toContain('ro pooler has 1/2 ready instances');
    expect(poolersServing(observation, config)).toBe(false);
  });

  it('more ready replicas than instances (rollout) is Ready', () => {
    const observation = withPoolers((view) => {
      view.readyReplicas = 3;
    });
    expect(judgePoolers(observation, configOf(observation)).verdict.state).toBe('Ready');
  });

  it('the class defaults a pooler without instances or mode to 3 instances in transaction mode', () => {
    const base = world({ poolers: 'missing' });
    const observation = withClass(base, makeClass({ cnpg: { connectionPooler: {} } }));
    const config = configOf(observation);
    expect(config.pooler).toEqual({ instances: 3, mode: 'transaction', parameters: {} });
    const applies = effectOfType(judgePoolers(observation, config).effects, 'apply');
    expect(applies.map((a) => (a.object as Pooler).spec.instances)).toEqual([3, 3]);
  });
});

describe('pooler drift', () => {
  const cases: Array<[string, string, (view: PoolerView) => void]> = [
    [
      'instances',
      'instances',
      (v) => {
        v.pooler.spec.instances = 1;
      },
    ],
    [
      'instances left to the CNPG default (1)',
      'instances',
      (v) => {
        delete v.pooler.spec.instances;
      },
    ],
    [
      'poolMode',
      'poolMode',
      (v) => {
        v.pooler.spec.pgbouncer.poolMode = 'session';
      },
    ],
    [
      'poolMode left to the CNPG default (session)',
      'poolMode',
      (v) => {
        delete v.pooler.spec.pgbouncer.poolMode;
      },
    ],
    [
      'a parameter we set last time but no longer want',
      'parameters',
      (v) => {
        v.pooler.metadata.annotations = { [OWNED_PARAMETERS_ANNOTATION]: 'max_client_conn' };
        v.pooler.spec.pgbouncer.parameters = { max_client_conn: '1000' };
      },
    ],
    [
      'the cluster it serves',
      'cluster',
      (v) => {
        v.pooler.spec.cluster = { name: 'billing' };
      },
    ],
  ];

  it.each(cases)(
    'drift of %s is Provisioning / PoolerUpdating and two applies with PoolerUpdated',
    (_what, field, mutate) => {
      const observation = withPoolers((view) => mutate(view));
      const config = configOf(observation);
      const h = judgePoolers(observation, config).verdict;
      expect(h.state).toBe('Provisioning');
      expect(h.reason).toBe(Reason.PoolerUpdating);
      expect(h.message).toContain(field);
      const applies = poolerApplies(judgePoolers(observation, config).effects);
      expect(applies).toHaveLength(2);
      for (const { pooler, event } of applies) {
        expect(event.reason).toBe('PoolerUpdated');
        expect(event.message).toContain(field);
        expect(pooler).toEqual(
          desiredPooler(
            observation,
            config.pooler as NonNullable<typeof config.pooler>,
            pooler.spec.type as 'rw' | 'ro',
          ),
        );
      }
      expect(poolersServing(observation, config)).toBe(false);
    },
  );

  it('the fixture world with drifted poolers is repaired', () => {
    const observation = world({ poolers: 'drifted' });
    const applies = poolerApplies(judgePoolers(observation, configOf(observation)).effects);
    expect(applies.map((a) => a.event.reason)).toEqual(['PoolerUpdated', 'PoolerUpdated']);
  });

  it('a changed class (mode and parameters) is drift of the existing poolers', () => {
    const base = world();
    const observation = withClass(
      base,
      makeClass({
        cnpg: { connectionPooler: { instances: 2, mode: 'session', parameters: { default_pool_size: '50' } } },
      }),
    );
    const config = configOf(observation);
    const rw = observation.poolers.rw?.pooler as Pooler;
    const drift = poolerDrift(rw, desiredPooler(observation, config.pooler as NonNullable<typeof config.pooler>, 'rw'));
    expect(drift).toEqual(['poolMode', 'parameters']);
    expect(poolerApplies(judgePoolers(observation, config).effects)).toHaveLength(2);
  });

  it('parameters in a different key order are not drift', () => {
    const base = world();
    const observation = withClass(
      base,
      makeClass({
        cnpg: {
          connectionPooler: {
            instances: 2,
            mode: 'transaction',
            parameters: { max_client_conn: '1', default_pool_size: '2' },
          },
        },
      }),
    );
    const config = configOf(observation);
    const desired = desiredPooler(observation, config.pooler as NonNullable<typeof config.pooler>, 'rw');
    const observed = structuredClone(desired);
    observed.spec.pgbouncer.parameters = { default_pool_size: '2', max_client_conn: '1' };
    expect(poolerDrift(observed, desired)).toEqual([]);
  });

  it('a parameter another writer added (not one of ours) is not drift', () => {
    const observation = withPoolers((view) => {
      view.pooler.spec.pgbouncer.parameters = { ...view.pooler.spec.pgbouncer.parameters, max_client_conn: '1000' };
    });
    const config = configOf(observation);
    expect(judgePoolers(observation, config).verdict.state).toBe('Ready');
    expect(judgePoolers(observation, config).effects).toEqual([]);
  });

  it('a parameter of ours changed by someone else is drift', () => {
    const base = world();
    const observation = withClass(
      base,
      makeClass({
        cnpg: { connectionPooler: { instances: 2, mode: 'transaction', parameters: { min_pool_size: '1' } } },
      }),
    );
    const config = configOf(observation);
    const desired = desiredPooler(observation, config.pooler as NonNullable<typeof config.pooler>, 'rw');
    const observed = structuredClone(desired);
    observed.spec.pgbouncer.parameters = { min_pool_size: '2' };
    expect(poolerDrift(observed, desired)).toEqual(['parameters']);
  });

  it('an orphan pooler handed over is adopted: one apply each with PoolerAdopted, not Ready', () => {
    const observation = withPoolers((view) => {
      view.pooler.metadata.ownerReferences = [];
      view.pooler.metadata.annotations = { ...view.pooler.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
    });
    const config = configOf(observation);
    expect(judgePoolers(observation, config).verdict.state).toBe('Provisioning');
    const applies = poolerApplies(judgePoolers(observation, config).effects);
    expect(applies.map((a) => a.event.reason)).toEqual(['PoolerAdopted', 'PoolerAdopted']);
  });

  it('a pooler controlled by someone else is Failed / PoolerOwnedByOther and never written', () => {
    const observation = withPoolers((view, type) => {
      if (type === 'rw') {
        view.pooler.metadata.ownerReferences = [
          { apiVersion: 'v1', kind: 'PostgresCluster', name: 'billing', uid: 'uid-billing', controller: true },
        ];
        view.pooler.spec.instances = 7;
      }
    });
    const config = configOf(observation);
    const h = judgePoolers(observation, config).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.PoolerOwnedByOther);
    expect(h.message).toContain('orders-pooler-rw');
    expect(judgePoolers(observation, config).effects).toEqual([]);
  });
});

describe('pool mode', () => {
  it.each([['session'], ['transaction']])('%s is a valid pool mode', (mode) => {
    expect(Value.Check(PoolMode, mode)).toBe(true);
    expect(Value.Check(ConnectionPoolerConfig, { mode })).toBe(true);
  });

  it.each([['statement'], ['Session'], [''], [1]])('%j is not a pool mode CNPG accepts (ref. §10.6)', (mode) => {
    expect(Value.Check(PoolMode, mode)).toBe(false);
    expect(Value.Check(ConnectionPoolerConfig, { mode })).toBe(false);
  });
});
