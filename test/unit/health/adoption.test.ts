/**
 * Adoption rung of every component's ladder: an orphan (no controller) is adopted only when it carries a
 * person's hand-over (`pgfsm.io/adopt: "true"`), or pgfsm's own labels naming this cluster beside the CNPG
 * Cluster a Retain deletion kept (what that deletion left behind). Anything else is a person's: Failed with `<Component>NotAdoptable`, a message that
 * names the annotation and the command, and no write at all — not even a delete when the pooler is off or
 * the cluster is deleted under the Delete policy.
 */
import { describe, expect, it } from 'vitest';
import { assess } from '../../../src/operator/domain/assessment.ts';
import { planDeletionPolicy, planPoolerDeletion } from '../../../src/operator/domain/deletion.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../../src/operator/domain/observation.ts';
import { ADOPT_ANNOTATION, type Component, mayAdopt, Reason } from '../../../src/operator/domain/vocabulary.ts';
import type { Facts } from '../../../src/tools/fixtures/observations.ts';
import { world } from './support.ts';

const CASES: Array<{
  component: Component;
  facts: Partial<Facts>;
  reason: Reason;
  /** The event its adoption is reported with. */
  adopted: string;
  command: string;
  objects: (o: Observation) => Array<KubeObject | undefined>;
}> = [
  {
    component: 'secret',
    facts: { secret: 'unmarked' },
    reason: Reason.SecretNotAdoptable,
    adopted: 'SuperuserSecretAdopted',
    command: 'kubectl annotate -n team-a secret orders-superuser pgfsm.io/adopt=true',
    objects: (o) => [o.secret],
  },
  {
    component: 'cluster',
    facts: { cnpg: 'unmarked' },
    reason: Reason.ClusterNotAdoptable,
    adopted: 'CNPGClusterAdopted',
    command: 'kubectl annotate -n team-a clusters.postgresql.cnpg.io orders pgfsm.io/adopt=true',
    objects: (o) => [o.cnpg],
  },
  {
    component: 'pooler',
    facts: { poolers: 'unmarked' },
    reason: Reason.PoolerNotAdoptable,
    adopted: 'PoolerAdopted',
    command: 'kubectl annotate -n team-a poolers.postgresql.cnpg.io orders-pooler-rw pgfsm.io/adopt=true',
    objects: (o) => [o.poolers.rw?.pooler, o.poolers.ro?.pooler],
  },
  {
    component: 'configMap',
    facts: { configMap: 'unmarked' },
    reason: Reason.ConfigMapNotAdoptable,
    adopted: 'EndpointsAdopted',
    command: 'kubectl annotate -n team-a configmap orders-endpoints pgfsm.io/adopt=true',
    objects: (o) => [o.configMap],
  },
];

const handedOver = (observation: Observation, objects: Array<KubeObject | undefined>) => {
  for (const object of objects) {
    if (!object) throw new Error('fixture has no such object');
    object.metadata.annotations = { ...object.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
  }
  return observation;
};

describe('adopt only what is ours to adopt', () => {
  it.each(CASES)(
    '$component: an unmarked orphan is Failed / $reason, the message names the annotation, no write',
    ({ component, facts, reason, command }) => {
      const { health, plans } = assess(world(facts), defaultSettings, 0);
      expect(health[component]).toMatchObject({ state: 'Failed', reason });
      expect(health[component]?.message).toContain(command);
      expect(health[component]?.message).toContain('was not created by pgfsm');
      // The other pooler is ours and still written; nothing touches the one not ours.
      const touching = plans[component].filter((e) => 'object' in e || 'ref' in e || 'secret' in e) as Array<{
        object?: KubeObject;
        ref?: { name: string };
      }>;
      const name = command.split(' ').at(-2);
      expect(touching.filter((e) => (e.object?.metadata.name ?? e.ref?.name) === name)).toEqual([]);
    },
  );

  it.each(CASES)(
    '$component: handed over with pgfsm.io/adopt=true, it is adopted ($adopted)',
    ({ component, facts, objects, adopted }) => {
      const observation = world(facts);
      const { health, plans } = assess(handedOver(observation, objects(observation)), defaultSettings, 0);
      expect(health[component]?.state).toBe('Provisioning');
      expect(plans[component].map((e) => e.event?.reason)).toContain(adopted);
    },
  );

  it('the ConfigMap message promises no resync: ConfigMaps are watched without a label selector', () => {
    const { health } = assess(world({ configMap: 'unmarked' }), defaultSettings, 0);
    expect(health.configMap?.message).not.toContain('resync');
  });

  it('a value other than "true" is no hand-over', () => {
    const observation = world({ configMap: 'unmarked' });
    if (!observation.configMap) throw new Error('no ConfigMap');
    observation.configMap.metadata.annotations = { [ADOPT_ANNOTATION]: 'yes' };
    expect(assess(observation, defaultSettings, 0).health.configMap?.reason).toBe(Reason.ConfigMapNotAdoptable);
  });

  it('only the hand-over annotation adopts: pgfsm’s labels, which anyone may copy, do not', () => {
    const labels = { 'app.kubernetes.io/managed-by': 'pgfsm', 'pgfsm.io/cluster': 'orders' };
    expect(mayAdopt({ name: 'orders-endpoints', labels })).toBe(false);
    expect(mayAdopt({ name: 'orders-endpoints' })).toBe(false);
    expect(mayAdopt({ name: 'orders-endpoints', annotations: { [ADOPT_ANNOTATION]: 'true' } })).toBe(true);
    expect(mayAdopt({ name: 'orders-endpoints', labels, annotations: { [ADOPT_ANNOTATION]: 'false' } })).toBe(false);
  });

  it('retained children (no owner, handed over by the Retain release) are re-adopted', () => {
    const { health, plans } = assess(
      world({ secret: 'released', cnpg: 'released', configMap: 'released' }),
      defaultSettings,
      0,
    );
    expect(health.secret?.state).toBe('Provisioning');
    expect(plans.secret.map((e) => e.event?.reason)).toEqual(['SuperuserSecretAdopted']);
    // Later steps wait for the Secret; their own judgments adopt when they run.
    const later = assess(world({ cnpg: 'released', configMap: 'released' }), defaultSettings, 0);
    expect(later.plans.cluster.map((e) => e.event?.reason)).toEqual(['CNPGClusterAdopted']);
  });

  it('a disabled pooler deletes its own and handed-over poolers, never an unmarked orphan', () => {
    const off = (o: Observation) => {
      o.cluster.spec = { ...o.cluster.spec, connectionPoolerEnabled: false };
      return o;
    };
    const unmarked = off(world({ poolers: 'unmarked' }));
    expect(assess(unmarked, defaultSettings, 0).plans.pooler).toEqual([]);
    expect(assess(unmarked, defaultSettings, 0).health.pooler?.reason).toBe(Reason.PoolerDisabled);
    const rw = unmarked.poolers.rw?.pooler;
    const handed = handedOver(unmarked, [rw]);
    expect(
      assess(handed, defaultSettings, 0).plans.pooler.map((e) => (e.type === 'delete' ? e.ref.name : e.type)),
    ).toEqual(['orders-pooler-rw']);
  });

  it('the Delete policy deletes only what this cluster owns, never an orphan of our name', () => {
    const observation = world({
      deletion: true,
      policy: 'Delete',
      poolers: 'unmarked',
      secret: 'unmarked',
      cnpg: 'unmarked',
      configMap: 'unmarked',
    });
    expect(planPoolerDeletion(observation)).toEqual([]);
    expect(planDeletionPolicy(observation)).toEqual([]);
    // Retained ones (pgfsm's labels, no owner) are not this cluster's either until adopted.
    const retained = world({ deletion: true, policy: 'Delete', secret: 'released', cnpg: 'released' });
    expect(planDeletionPolicy(retained).map((e) => (e.type === 'delete' ? e.ref.kind : e.type))).toEqual(['ConfigMap']);
  });
});
