/** The superuser Secret: created once (the password never passes the core), adopted, never rewritten. */
import { describe, expect, it } from 'vitest';
import { judgeSecret, secretRef } from '../../../src/operator/domain/components/secret.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { ADOPT_ANNOTATION, Reason } from '../../../src/operator/domain/vocabulary.ts';
import { CLUSTER_UID } from '../../../src/tools/fixtures/observations.ts';
import { effectOfType, eventOf, world } from './support.ts';

const withSecretOwners = (
  observation: Observation,
  owners: NonNullable<Observation['secret']>['metadata']['ownerReferences'],
) => {
  if (!observation.secret) throw new Error('fixture has no secret');
  return {
    ...observation,
    secret: { ...observation.secret, metadata: { ...observation.secret.metadata, ownerReferences: owners } },
  };
};

describe('superuser Secret', () => {
  it('ready: Ready / SuperUserSecretReady, nothing to do', () => {
    const observation = world();
    const h = judgeSecret(observation).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.SuperUserSecretReady);
    expect(judgeSecret(observation).effects).toEqual([]);
  });

  it('missing: not Ready, one createSecret with SuperuserSecretCreated', () => {
    const observation = world({ secret: 'missing' });
    const h = judgeSecret(observation).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.SuperUserSecretPending);
    const effects = judgeSecret(observation).effects;
    expect(effects).toHaveLength(1);
    const [create] = effectOfType(effects, 'createSecret');
    if (!create) throw new Error('no createSecret effect');
    expect(create.component).toBe('secret');
    expect(create.secret.ref).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: 'team-a',
      name: 'orders-superuser',
    });
    expect(create.secret.username).toBe('postgres');
    expect(create.secret.owner).toMatchObject({ uid: CLUSTER_UID, controller: true, kind: 'PostgresCluster' });
    expect(create.secret.labels).toMatchObject({ 'pgfsm.io/cluster': 'orders' });
    expect(eventOf(create).reason).toBe('SuperuserSecretCreated');
  });

  it('the createSecret effect never carries a password or any data', () => {
    const [create] = judgeSecret(world({ secret: 'missing' })).effects;
    expect(create).toBeDefined();
    const carried = JSON.stringify(create);
    expect(carried).not.toMatch(/password/i);
    expect(create).not.toHaveProperty('data');
    expect(create).not.toHaveProperty('stringData');
    if (create?.type !== 'createSecret') throw new Error('not a createSecret');
    expect(Object.keys(create.secret).sort()).toEqual(['labels', 'owner', 'ref', 'username']);
  });

  it('no password key: Failed / SuperUserSecretFailed naming the key, and nothing written', () => {
    const observation = world({ secret: 'noKey' });
    const h = judgeSecret(observation).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.SuperUserSecretFailed);
    expect(h.message).toContain('"password"');
    expect(h.message).toContain('orders-superuser');
    expect(judgeSecret(observation).effects).toEqual([]);
  });

  it('an orphan without a password key is Failed and not adopted: it stays its author’s', () => {
    const observation = world({ secret: 'noKey' });
    if (!observation.secret) throw new Error('fixture has no Secret');
    const orphan = { ...observation, secret: { ...observation.secret, metadata: { ...observation.secret.metadata } } };
    orphan.secret.metadata.ownerReferences = [];
    expect(judgeSecret(orphan).verdict.state).toBe('Failed');
    expect(judgeSecret(orphan).effects).toEqual([]);
  });

  it('orphan (retained earlier): adopted with setOwner and SuperuserSecretAdopted; not Ready until then', () => {
    const observation = world({ secret: 'orphan' });
    const h = judgeSecret(observation).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.SuperUserSecretPending);
    const effects = judgeSecret(observation).effects;
    expect(effects).toHaveLength(1);
    const [adopt] = effectOfType(effects, 'setOwner');
    if (!adopt) throw new Error('no setOwner effect');
    expect(adopt.component).toBe('secret');
    expect(adopt.ref).toEqual(secretRef(observation));
    expect(adopt.owner).toMatchObject({ uid: CLUSTER_UID, controller: true });
    expect(eventOf(adopt).reason).toBe('SuperuserSecretAdopted');
    expect(eventOf(adopt).message).toContain('secret');
  });

  it('foreign (controlled by someone else): Failed / SuperUserSecretFailed and never written', () => {
    const observation = withSecretOwners(world(), [
      {
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresCluster',
        name: 'billing',
        uid: 'uid-billing',
        controller: true,
      },
    ]);
    const h = judgeSecret(observation).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.SuperUserSecretFailed);
    expect(h.message).toContain('PostgresCluster/billing');
    expect(judgeSecret(observation).effects).toEqual([]);
  });

  it('a non-controller owner reference does not make the Secret foreign: handed over, it is adopted', () => {
    const observation = withSecretOwners(world(), [
      { apiVersion: 'v1', kind: 'ServiceAccount', name: 'sa', uid: 'uid-sa' },
    ]);
    if (!observation.secret) throw new Error('no Secret');
    observation.secret.metadata.annotations = { [ADOPT_ANNOTATION]: 'true' };
    expect(effectOfType(judgeSecret(observation).effects, 'setOwner')).toHaveLength(1);
  });
});
