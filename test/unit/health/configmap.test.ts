/** The endpoints ConfigMap: exact keys, FQDN values, pooler keys only when both poolers serve, no secrets. */
import { describe, expect, it } from 'vitest';
import {
  configMapDrift,
  desiredConfigMap,
  EndpointKey,
  judgeConfigMap,
} from '../../../src/operator/domain/components/configmap.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { ConfigMap } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation, type Settings } from '../../../src/operator/domain/observation.ts';
import { Reason } from '../../../src/operator/domain/vocabulary.ts';
import { CLUSTER_UID } from '../../../src/tools/fixtures/observations.ts';
import { configOf, eventOf, world } from './support.ts';

const desiredOf = (observation: Observation, settings: Settings = defaultSettings) =>
  desiredConfigMap(observation, configOf(observation), settings);

const DIRECT_KEYS = [
  'CLUSTER_RW_ENDPOINT',
  'CLUSTER_RO_ENDPOINT',
  'CLUSTER_R_ENDPOINT',
  'DEFAULT_CLUSTER_PORT',
  'SUPER_USER_NAME',
  'SUPER_USER_SECRET_REF',
];
const POOLER_KEYS = ['CLUSTER_POOLER_RW_ENDPOINT', 'CLUSTER_POOLER_RO_ENDPOINT'];

function singleApply(effects: Effect[]) {
  expect(effects).toHaveLength(1);
  const [effect] = effects;
  if (effect?.type !== 'apply') throw new Error(`expected an apply, got ${JSON.stringify(effect)}`);
  expect(effect.component).toBe('configMap');
  return effect;
}

describe('desired ConfigMap', () => {
  it('the endpoint keys are the documented constants', () => {
    expect(Object.values(EndpointKey).sort()).toEqual([...DIRECT_KEYS, ...POOLER_KEYS].sort());
  });

  it('with serving poolers it holds exactly the documented keys, as service FQDNs in cluster.local', () => {
    const observation = world();
    const desired = desiredOf(observation);
    expect(desired.metadata.name).toBe('orders-endpoints');
    expect(desired.metadata.namespace).toBe('team-a');
    expect(desired.data).toEqual({
      CLUSTER_RW_ENDPOINT: 'orders-rw.team-a.svc.cluster.local',
      CLUSTER_RO_ENDPOINT: 'orders-ro.team-a.svc.cluster.local',
      CLUSTER_R_ENDPOINT: 'orders-r.team-a.svc.cluster.local',
      DEFAULT_CLUSTER_PORT: '5432',
      SUPER_USER_NAME: 'postgres',
      SUPER_USER_SECRET_REF: 'orders-superuser',
      CLUSTER_POOLER_RW_ENDPOINT: 'orders-pooler-rw.team-a.svc.cluster.local',
      CLUSTER_POOLER_RO_ENDPOINT: 'orders-pooler-ro.team-a.svc.cluster.local',
    });
    expect(desired.metadata.ownerReferences?.[0]).toMatchObject({ uid: CLUSTER_UID, controller: true });
  });

  it('a custom clusterDomain is used in every endpoint', () => {
    const settings = { ...defaultSettings, clusterDomain: 'corp.example' };
    const desired = desiredOf(world(), settings);
    const endpoints = Object.entries(desired.data ?? {}).filter(([k]) => k.endsWith('_ENDPOINT'));
    expect(endpoints).toHaveLength(5);
    for (const [, value] of endpoints) {
      expect(value).toMatch(/^orders-[a-z-]+\.team-a\.svc\.corp\.example$/);
      expect(value).not.toContain('cluster.local');
    }
  });

  it.each([
    ['the pooler is disabled', world({ poolerEnabled: false })],
    ['the poolers do not exist yet', world({ poolers: 'missing' })],
    ['the poolers have no ready replica', world({ poolers: 'notReady' })],
    ['the poolers drifted', world({ poolers: 'drifted' })],
  ])('no pooler endpoint keys when %s', (_what, observation) => {
    expect(Object.keys(desiredOf(observation).data ?? {}).sort()).toEqual([...DIRECT_KEYS].sort());
  });

  it('no pooler endpoint keys while only one of the two poolers serves', () => {
    const base = world();
    const observation = { ...base, poolers: { rw: base.poolers.rw } };
    expect(Object.keys(desiredOf(observation).data ?? {})).not.toContain('CLUSTER_POOLER_RW_ENDPOINT');
  });

  it('never any secret value: only the Secret name, and the data keys are exactly the documented set', () => {
    const data = desiredOf(world()).data ?? {};
    expect(Object.keys(data).sort()).toEqual([...DIRECT_KEYS, ...POOLER_KEYS].sort());
    expect(data.SUPER_USER_SECRET_REF).toBe('orders-superuser');
    for (const key of Object.keys(data)) expect(key).not.toMatch(/PASSWORD|TOKEN|KEY$/i);
    // A ConfigMap never carries binary data either.
    expect(desiredOf(world())).not.toHaveProperty('binaryData');
  });
});

describe('ConfigMap health and plan', () => {
  it('up to date is Ready / ConfigMapReconciled and plans nothing', () => {
    const observation = world();
    const desired = desiredOf(observation);
    const h = judgeConfigMap(observation, desired).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.ConfigMapReconciled);
    expect(judgeConfigMap(observation, desired).effects).toEqual([]);
  });

  it('missing: not Ready, one apply with EndpointsPublished', () => {
    const observation = world({ configMap: 'missing' });
    const desired = desiredOf(observation);
    const h = judgeConfigMap(observation, desired).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.ConfigMapPending);
    const apply = singleApply(judgeConfigMap(observation, desired).effects);
    expect(apply.object).toEqual(desired);
    const event = eventOf(apply);
    expect(event.reason).toBe('EndpointsPublished');
    expect(event.message).toBe('Endpoints published in ConfigMap orders-endpoints');
  });

  it('a drifted value is Provisioning / ConfigMapDrifted and one apply with EndpointsRepaired', () => {
    const observation = world({ configMap: 'drifted' });
    const desired = desiredOf(observation);
    expect(configMapDrift(observation.configMap as ConfigMap, desired)).toEqual(['CLUSTER_RW_ENDPOINT']);
    const h = judgeConfigMap(observation, desired).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.ConfigMapDrifted);
    expect(h.message).toContain('CLUSTER_RW_ENDPOINT');
    const apply = singleApply(judgeConfigMap(observation, desired).effects);
    expect(apply.object).toEqual(desired);
    const event = eventOf(apply);
    expect(event.reason).toBe('EndpointsRepaired');
    expect(event.message).toContain('repaired');
    expect(event.message).toContain('CLUSTER_RW_ENDPOINT');
  });

  it('a key of ours deleted by someone is drift', () => {
    const observation = world();
    const configMap = structuredClone(observation.configMap as ConfigMap);
    const { DEFAULT_CLUSTER_PORT: _gone, ...rest } = configMap.data ?? {};
    configMap.data = rest;
    const withMissingKey = { ...observation, configMap };
    const desired = desiredOf(withMissingKey);
    expect(configMapDrift(configMap, desired)).toEqual(['DEFAULT_CLUSTER_PORT']);
    expect(singleApply(judgeConfigMap(withMissingKey, desired).effects).object).toEqual(desired);
  });

  it('stale pooler endpoints (poolers disabled since) are drift, so consumers stop using them', () => {
    const served = world();
    const observation = { ...world({ poolerEnabled: false }), configMap: served.configMap };
    const desired = desiredOf(observation);
    expect(configMapDrift(observation.configMap as ConfigMap, desired)).toEqual(POOLER_KEYS.slice().sort());
    expect(judgeConfigMap(observation, desired).verdict.state).toBe('Provisioning');
    // The world changed, nobody tampered: updated, saying why, never "restored" nor "repaired".
    const event = eventOf(singleApply(judgeConfigMap(observation, desired, false).effects));
    expect(event).toMatchObject({
      reason: 'EndpointsUpdated',
      message: 'ConfigMap orders-endpoints updated: pooler endpoints removed, the pooler is switched off',
    });
    // Switched on but not serving (yet, or any more): the same, with that reason.
    expect(eventOf(singleApply(judgeConfigMap(observation, desired, true).effects)).message).toBe(
      'ConfigMap orders-endpoints updated: pooler endpoints removed, the poolers are not serving',
    );
  });

  it('pooler endpoints appearing once the poolers serve are an update, not a repair', () => {
    const unserved = world({ poolers: 'missing' });
    const observation = { ...world(), configMap: unserved.configMap };
    const desired = desiredOf(observation);
    expect(configMapDrift(observation.configMap as ConfigMap, desired)).toEqual(POOLER_KEYS.slice().sort());
    expect(eventOf(singleApply(judgeConfigMap(observation, desired, true).effects))).toMatchObject({
      reason: 'EndpointsUpdated',
      message: 'ConfigMap orders-endpoints updated: pooler endpoints added, the poolers serve',
    });
  });

  it('a pooler endpoint someone edited or deleted alone is repaired', () => {
    const observation = world();
    const configMap = structuredClone(observation.configMap as ConfigMap);
    configMap.data = { ...configMap.data, CLUSTER_POOLER_RO_ENDPOINT: 'elsewhere' };
    const edited = { ...observation, configMap };
    expect(eventOf(singleApply(judgeConfigMap(edited, desiredOf(edited), true).effects)).reason).toBe(
      'EndpointsRepaired',
    );
    const { CLUSTER_POOLER_RW_ENDPOINT: _gone, ...rest } = configMap.data;
    const deleted = { ...observation, configMap: { ...configMap, data: { ...rest, CLUSTER_POOLER_RO_ENDPOINT: '' } } };
    expect(eventOf(singleApply(judgeConfigMap(deleted, desiredOf(deleted), true).effects)).reason).toBe(
      'EndpointsRepaired',
    );
  });

  it('keys added by other writers are not drift', () => {
    const observation = world();
    const configMap = structuredClone(observation.configMap as ConfigMap);
    configMap.data = { ...configMap.data, TEAM_CONTACT: 'dba@example.com', 'app.properties': 'x=1' };
    const withExtra = { ...observation, configMap };
    const desired = desiredOf(withExtra);
    expect(configMapDrift(configMap, desired)).toEqual([]);
    expect(judgeConfigMap(withExtra, desired).verdict.state).toBe('Ready');
    expect(judgeConfigMap(withExtra, desired).effects).toEqual([]);
  });

  it('an orphan ConfigMap (retained earlier) is adopted with one apply', () => {
    const observation = world({ configMap: 'released' });
    const desired = desiredOf(observation);
    expect(judgeConfigMap(observation, desired).verdict.state).toBe('Provisioning');
    expect(eventOf(singleApply(judgeConfigMap(observation, desired).effects)).reason).toBe('EndpointsAdopted');
  });

  it('a ConfigMap controlled by someone else is Failed / ConfigMapOwnedByOther and never written', () => {
    const observation = world({ configMap: 'drifted' });
    const configMap = structuredClone(observation.configMap as ConfigMap);
    configMap.metadata.ownerReferences = [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-web', controller: true },
    ];
    const foreign = { ...observation, configMap };
    const desired = desiredOf(foreign);
    const h = judgeConfigMap(foreign, desired).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.ConfigMapOwnedByOther);
    expect(h.message).toContain('Deployment/web');
    expect(judgeConfigMap(foreign, desired).effects).toEqual([]);
  });
});
