/** Deletion: poolers first, then the deletion policy for the data-bearing children, then the finalizer. */
import { describe, expect, it } from 'vitest';
import { transition } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import {
  deletionPolicyOf,
  planDeletionPolicy,
  planFinalizerRemoval,
  planPoolerDeletion,
  policyApplied,
  poolersGone,
} from '../../../src/operator/domain/deletion.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { OwnerReference, PoolerView } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../../src/operator/domain/observation.ts';
import { CLUSTER_UID, type Facts } from '../../../src/tools/fixtures/observations.ts';
import { effectOfType, eventOf, world } from './support.ts';

const deleting = (facts: Partial<Facts> = {}) => world({ deletion: true, ...facts });
const withoutPoolers = (observation: Observation): Observation => ({ ...observation, poolers: {} });
const FOREIGN: OwnerReference = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  name: 'someone',
  uid: 'uid-someone',
  controller: true,
};

/** One tick of the machine from `state`, with the effects its actions carry. */
function tick(state: string | Record<string, string>, observation: Observation) {
  const snapshot = postgresClusterMachine.resolveState({ value: state, context: {} });
  const [next, actions] = transition(postgresClusterMachine, snapshot, {
    type: 'tick',
    now: Date.parse('2026-11-30T12:00:00Z'),
    observation,
    settings: defaultSettings,
  });
  const effects = actions.filter((a) => a.type === 'effect').map((a) => a.params as Effect);
  return { value: next.value, effects };
}

describe('deletion policy', () => {
  it.each([
    ['Delete', 'Delete'],
    ['Retain', 'Retain'],
    [undefined, 'Retain'],
  ] as const)('clusterDeletionPolicy %s means %s', (policy, expected) => {
    const base = deleting();
    const observation = {
      ...base,
      cluster: { ...base.cluster, spec: { ...base.cluster.spec, clusterDeletionPolicy: policy } },
    };
    expect(deletionPolicyOf(observation)).toBe(expected);
  });

  it('Delete deletes the CNPG cluster, the Secret and the ConfigMap', () => {
    const observation = deleting({ policy: 'Delete' });
    const effects = planDeletionPolicy(observation);
    expect(effects).toHaveLength(3);
    const deletes = effectOfType(effects, 'delete');
    expect(deletes.map((d) => [d.component, d.ref.kind, d.ref.name])).toEqual([
      ['cluster', 'Cluster', 'orders'],
      ['secret', 'Secret', 'orders-superuser'],
      ['configMap', 'ConfigMap', 'orders-endpoints'],
    ]);
    for (const d of deletes) {
      expect(d.ref.namespace).toBe('team-a');
      expect(eventOf(d).reason).toBe('ChildDeleted');
    }
  });

  it('Retain releases our owner reference on each of them, the ConfigMap included (ref. §10.9)', () => {
    const observation = deleting({ policy: 'Retain' });
    const effects = planDeletionPolicy(observation);
    expect(effects).toHaveLength(3);
    const releases = effectOfType(effects, 'releaseOwner');
    expect(releases.map((r) => [r.component, r.ref.name])).toEqual([
      ['cluster', 'orders'],
      ['secret', 'orders-superuser'],
      ['configMap', 'orders-endpoints'],
    ]);
    for (const r of releases) {
      expect(r.ownerUid).toBe(CLUSTER_UID);
      expect(eventOf(r).reason).toBe('ChildRetained');
    }
  });

  it('children that are gone or no longer ours are left alone', () => {
    const observation = deleting({ policy: 'Delete', cnpg: 'missing', secret: 'released', configMap: 'released' });
    expect(planDeletionPolicy(observation)).toEqual([]);
  });

  it('a child controlled by someone else is never deleted', () => {
    const base = deleting({ policy: 'Delete' });
    const secret = structuredClone(base.secret);
    if (!secret) throw new Error('fixture has no secret');
    secret.metadata.ownerReferences = [FOREIGN];
    const effects = planDeletionPolicy({ ...base, secret });
    expect(effects.map((e) => (e.type === 'delete' ? e.component : e.type))).toEqual(['cluster', 'configMap']);
  });

  it('policyApplied: false while a child still names us as owner, under either policy', () => {
    expect(policyApplied(deleting({ policy: 'Delete' }))).toBe(false);
    expect(policyApplied(deleting({ policy: 'Retain' }))).toBe(false);
    expect(policyApplied(deleting({ policy: 'Retain', cnpg: 'released', secret: 'released' }))).toBe(false);
  });

  it('policyApplied: true under Delete once the children are gone', () => {
    expect(
      policyApplied(deleting({ policy: 'Delete', cnpg: 'missing', secret: 'missing', configMap: 'missing' })),
    ).toBe(true);
  });

  it('policyApplied: true under Retain once the owner references are removed, the objects still there', () => {
    const observation = deleting({ policy: 'Retain', cnpg: 'released', secret: 'released', configMap: 'released' });
    expect(observation.cnpg).toBeDefined();
    expect(observation.secret).toBeDefined();
    expect(observation.configMap).toBeDefined();
    expect(policyApplied(observation)).toBe(true);
  });

  it('a non-controller owner reference to us still counts as ours', () => {
    const base = deleting({ policy: 'Retain', cnpg: 'released', secret: 'released', configMap: 'released' });
    const configMap = structuredClone(base.configMap);
    if (!configMap) throw new Error('fixture has no ConfigMap');
    configMap.metadata.ownerReferences = [
      { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', name: 'orders', uid: CLUSTER_UID },
    ];
    const observation = { ...base, configMap };
    expect(policyApplied(observation)).toBe(false);
    expect(effectOfType(planDeletionPolicy(observation), 'releaseOwner').map((r) => r.component)).toEqual([
      'configMap',
    ]);
  });

  it('the finalizer removal reports the policy', () => {
    const [effect] = planFinalizerRemoval(deleting({ policy: 'Delete' }));
    expect(effect?.type).toBe('removeFinalizer');
    expect(eventOf(effect).reason).toBe('CleanupComplete');
    expect(eventOf(effect).message).toContain('Delete');
  });
});

describe('poolers are deleted first', () => {
  it('both poolers of ours are planned for deletion', () => {
    const effects = planPoolerDeletion(deleting());
    expect(effectOfType(effects, 'delete').map((d) => [d.component, d.ref.name])).toEqual([
      ['pooler', 'orders-pooler-rw'],
      ['pooler', 'orders-pooler-ro'],
    ]);
    expect(poolersGone(deleting())).toBe(false);
    expect(poolersGone(withoutPoolers(deleting()))).toBe(true);
  });

  it('the first deletion tick deletes only the poolers and waits for them', () => {
    const { value, effects } = tick('Ready', deleting({ policy: 'Delete' }));
    expect(value).toEqual({ Deleting: 'Poolers' });
    expect(effects.map((e) => (e.type === 'delete' ? `${e.component}:${e.ref.name}` : e.type))).toEqual([
      'pooler:orders-pooler-rw',
      'pooler:orders-pooler-ro',
    ]);
  });

  it('once the poolers are gone, the policy is applied and waited for', () => {
    const { value, effects } = tick({ Deleting: 'Poolers' }, withoutPoolers(deleting({ policy: 'Delete' })));
    expect(value).toEqual({ Deleting: 'ApplyPolicy' });
    expect(effectOfType(effects, 'delete').map((d) => d.component)).toEqual(['cluster', 'secret', 'configMap']);
    expect(effectOfType(effects, 'removeFinalizer')).toEqual([]);
  });

  it('once the policy is applied, the finalizer is removed and the machine is done', () => {
    const observation = withoutPoolers(
      deleting({ policy: 'Retain', cnpg: 'released', secret: 'released', configMap: 'released' }),
    );
    const { value, effects } = tick({ Deleting: 'ApplyPolicy' }, observation);
    expect(value).toBe('Deleted');
    expect(effects.map((e) => e.type)).toEqual(['removeFinalizer']);
  });

  // A Pooler with our name that another controller owns is never deleted by us; it must not hold the
  // deletion (and the finalizer) forever.
  it('a Pooler of our name controlled by someone else is left alone and does not block the deletion', () => {
    const base = withoutPoolers(deleting({ policy: 'Delete' }));
    const stranger = structuredClone(deleting().poolers.rw) as PoolerView;
    stranger.pooler.metadata.ownerReferences = [FOREIGN];
    const observation = { ...base, poolers: { rw: stranger } };
    expect(planPoolerDeletion(observation)).toEqual([]);
    const { value } = tick({ Deleting: 'Poolers' }, observation);
    expect(value).toEqual({ Deleting: 'ApplyPolicy' });
  });

  // An orphan Pooler of our name (no controller) is either deleted (then waited for) or ignored; never
  // neither, which would wait forever for a deletion nobody asked for.
  it('a Pooler of our name owned by nobody is deleted or does not block the deletion', () => {
    const base = withoutPoolers(deleting({ policy: 'Delete' }));
    const orphan = structuredClone(deleting().poolers.rw) as PoolerView;
    orphan.pooler.metadata.ownerReferences = [];
    const observation = { ...base, poolers: { rw: orphan } };
    const { value, effects } = tick({ Deleting: 'Poolers' }, observation);
    const deletesOrphan = effectOfType(effects, 'delete').some((d) => d.ref.name === 'orders-pooler-rw');
    const movedOn = JSON.stringify(value) !== JSON.stringify({ Deleting: 'Poolers' });
    expect(deletesOrphan || movedOn).toBe(true);
  });
});
