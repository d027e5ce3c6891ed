/**
 * Adopt only what is ours to adopt. An object of a child's name that nobody owns may be anyone's: a Secret
 * a team keeps its own credentials in, a ConfigMap of another tool, a CNPG Cluster made by hand (a
 * database), a Pooler. pgfsm adopts such an orphan only when it is handed over, with the annotation
 * `pgfsm.io/adopt: "true"`: a person puts it on what pgfsm did not create, a Retain deletion on what it
 * releases. pgfsm's labels are no proof: anyone who may create the object may copy them. Without it the step
 * fails (Stalled, one Warning, the message naming the annotation), nothing is written to the object, and
 * deleting the PostgresCluster under the Delete policy leaves it alone: only what this cluster owns is deleted.
 */
import { describe, expect, it } from 'vitest';
import { ADOPT_ANNOTATION, childLabels } from '../../src/operator/domain/vocabulary.ts';
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

const CNPG = 'postgresql.cnpg.io/v1';
const child = (sim: Simulation, kind: string, name: string) => sim.api.get({ kind, namespace: NS, name });
const pooled = (policy: 'Delete' | 'Retain') =>
  clusterObject('orders', { connectionPoolerEnabled: true, clusterDeletionPolicy: policy });

/** What a person made before pgfsm was asked for `orders`, without owner or pgfsm's labels. */
const NOT_OURS = {
  secret: {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'orders-superuser', namespace: NS },
    stringData: { username: 'postgres', password: 'theirs', 'team-api-token': 'keep-me' },
  },
  configMap: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'orders-endpoints', namespace: NS },
    data: { CLUSTER_RW_ENDPOINT: 'their-db.example.com', NOTE: 'kept by the platform team' },
  },
  cnpg: {
    apiVersion: CNPG,
    kind: 'Cluster',
    metadata: { name: 'orders', namespace: NS },
    spec: {
      instances: 1,
      imageName: 'ghcr.io/cloudnative-pg/postgresql:16',
      superuserSecret: { name: 'orders-superuser' },
      enableSuperuserAccess: true,
      storage: { size: '1Gi' },
    },
  },
  pooler: {
    apiVersion: CNPG,
    kind: 'Pooler',
    metadata: { name: 'orders-pooler-rw', namespace: NS },
    spec: { cluster: { name: 'orders' }, type: 'rw', instances: 1, pgbouncer: { poolMode: 'session' } },
  },
} as const;
type Which = keyof typeof NOT_OURS;

const CASES: Array<{ which: Which; state: string; condition: string; reason: string; resource: string }> = [
  {
    which: 'secret',
    state: 'Failed.Secret',
    condition: 'SecretsReady',
    reason: 'SecretNotAdoptable',
    resource: 'secret',
  },
  {
    which: 'cnpg',
    state: 'Failed.Cluster',
    condition: 'ClusterReady',
    reason: 'ClusterNotAdoptable',
    resource: 'clusters.postgresql.cnpg.io',
  },
  {
    which: 'pooler',
    state: 'Failed.Pooler',
    condition: 'PoolerReady',
    reason: 'PoolerNotAdoptable',
    resource: 'poolers.postgresql.cnpg.io',
  },
  {
    which: 'configMap',
    state: 'Failed.ConfigMap',
    condition: 'ConfigMapsReady',
    reason: 'ConfigMapNotAdoptable',
    resource: 'configmap',
  },
];

const objectOf = (which: Which, annotations?: Record<string, string>) => {
  const object = structuredClone(NOT_OURS[which]) as unknown as StoredObject;
  if (annotations) object.metadata.annotations = annotations;
  return object;
};
const liveOf = (sim: Simulation, which: Which) => {
  const { kind, metadata } = NOT_OURS[which];
  return child(sim, kind, metadata.name);
};
/** What a write would change: everything but the bookkeeping of the store and the status CNPG writes. */
const contentOf = (object: StoredObject | undefined) => {
  if (!object) return undefined;
  const { resourceVersion: _r, generation: _g, ...metadata } = object.metadata;
  const { status: _s, ...rest } = object as StoredObject & { status?: unknown };
  return { ...rest, metadata };
};

describe('an unowned object pgfsm did not create is not adopted, changed or deleted', () => {
  it.each(CASES)(
    '$which: $state with $reason naming the annotation, one Warning, kept under Delete',
    async ({ which, state, condition, reason, resource }) => {
      const sim = simulationWith([objectOf(which), pooled('Delete')]);
      await sim.run(5 * 60_000);
      expect(statusOf(sim, 'orders').state).toBe(state);
      const name = NOT_OURS[which].metadata.name;
      expect(conditionOf(sim, 'orders', condition)).toMatchObject({
        status: 'False',
        reason,
        message: expect.stringContaining(`kubectl annotate -n ${NS} ${resource} ${name} ${ADOPT_ANNOTATION}=true`),
      });
      expect(conditionOf(sim, 'orders', 'Stalled')).toMatchObject({ status: 'True', reason });
      const warnings = eventsOf(sim, 'orders').filter((e) => e.type === 'Warning');
      expect(warnings.map((e) => e.reason)).toEqual([reason]);
      const before = contentOf(objectOf(which));
      expect(contentOf(liveOf(sim, which))).toMatchObject(before ?? {});
      expect(liveOf(sim, which)?.metadata.ownerReferences ?? []).toEqual([]);
      expect(eventsOf(sim, 'orders').filter((e) => e.reason.endsWith('Adopted'))).toEqual([]);

      // Deleting the PostgresCluster under Delete removes what it owns, never the object it did not take.
      const owned = [
        'Secret/orders-superuser',
        'Cluster/orders',
        'Pooler/orders-pooler-ro',
        'ConfigMap/orders-endpoints',
      ].filter((ref) => ref !== `${NOT_OURS[which].kind}/${name}`);
      const ownedBefore = owned.filter((ref) => {
        const [kind = '', n = ''] = ref.split('/');
        return child(sim, kind, n) !== undefined;
      });
      // The Secret is the first step: when it is not ours, nothing else was made.
      expect(ownedBefore.length > 0).toBe(which !== 'secret');
      sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
      await sim.run(60_000);
      expect(getCluster(sim, 'orders')).toBeUndefined();
      expect(contentOf(liveOf(sim, which))).toMatchObject(before ?? {});
      for (const ref of ownedBefore) {
        const [kind = '', n = ''] = ref.split('/');
        expect(child(sim, kind, n), `${ref} (ours) deleted`).toBeUndefined();
      }
      expect(reasonsOf(sim, 'orders').at(-1)).toBe('CleanupComplete');
    },
  );

  it('a person hands an object over with the annotation: the failure clears and it is adopted', async () => {
    const sim = simulationWith([objectOf('configMap'), pooled('Delete')]);
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ConfigMap');

    const live = liveOf(sim, 'configMap');
    if (!live) throw new Error('ConfigMap gone');
    sim.api.put({ ...live, metadata: { ...live.metadata, annotations: { [ADOPT_ANNOTATION]: 'true' } } });
    await untilReady(sim, 'orders');
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    expect(liveOf(sim, 'configMap')?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    expect(eventsOf(sim, 'orders').map((e) => e.action)).toContain('AdoptConfigMap');
  });

  it('a Secret handed over before the cluster exists is adopted with its password and other keys', async () => {
    const sim = simulationWith([objectOf('secret', { [ADOPT_ANNOTATION]: 'true' }), pooled('Retain')]);
    await untilReady(sim, 'orders');
    const secret = liveOf(sim, 'secret') as (StoredObject & { stringData?: Record<string, string> }) | undefined;
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    expect(secret?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    expect(secret?.stringData).toEqual(NOT_OURS.secret.stringData);
    expect(eventsOf(sim, 'orders').filter((e) => e.type === 'Warning')).toEqual([]);
    expect(eventsOf(sim, 'orders').map((e) => e.action)).toContain('AdoptSecret');
  });

  it('what a Retain deletion released comes back, handed over by the release itself', async () => {
    const sim = simulationWith([pooled('Retain')]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    const retained = [
      ['Secret', 'orders-superuser'],
      ['Cluster', 'orders'],
      ['ConfigMap', 'orders-endpoints'],
    ] as const;
    for (const [kind, name] of retained) {
      const kept = child(sim, kind, name);
      expect(kept?.metadata.ownerReferences ?? [], `${kind} released`).toEqual([]);
      expect(kept?.metadata.annotations?.[ADOPT_ANNOTATION], `${kind} handed over`).toBe('true');
    }
    sim.api.create(pooled('Retain'));
    await untilReady(sim, 'orders');
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    for (const [kind, name] of retained) {
      expect(child(sim, kind, name)?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    }
  });

  it('a Secret planted with pgfsm’s labels chooses no password: it is adopted only once annotated', async () => {
    const planted = objectOf('secret');
    planted.metadata.labels = childLabels('orders');
    const sim = simulationWith([planted, pooled('Delete')]);
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Secret');
    expect(conditionOf(sim, 'orders', 'SecretsReady')).toMatchObject({
      status: 'False',
      reason: 'SecretNotAdoptable',
      message: expect.stringContaining("it carries pgfsm's labels, but labels anyone may copy hand nothing over"),
    });
    expect(conditionOf(sim, 'orders', 'SecretsReady').message).toContain(
      `kubectl annotate -n ${NS} secret orders-superuser ${ADOPT_ANNOTATION}=true`,
    );
    expect(conditionOf(sim, 'orders', 'Stalled')).toMatchObject({ status: 'True', reason: 'SecretNotAdoptable' });
    expect(contentOf(liveOf(sim, 'secret'))).toMatchObject(contentOf(planted) ?? {});
    expect(child(sim, 'Cluster', 'orders'), 'no database made with the planted password').toBeUndefined();

    const live = liveOf(sim, 'secret');
    if (!live) throw new Error('Secret gone');
    sim.api.put({ ...live, metadata: { ...live.metadata, annotations: { [ADOPT_ANNOTATION]: 'true' } } });
    await untilReady(sim, 'orders');
    const uid = getCluster(sim, 'orders')?.metadata.uid;
    expect(liveOf(sim, 'secret')?.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);
    expect(eventsOf(sim, 'orders').map((e) => e.action)).toContain('AdoptSecret');
  });

  it('a retained Secret whose hand-over someone took back is not adopted', async () => {
    const sim = simulationWith([pooled('Retain')]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await sim.run(60_000);
    // A person removes the annotation the release put there: the labels alone vouch for nothing.
    const kept = liveOf(sim, 'secret');
    if (!kept) throw new Error('Secret gone');
    sim.api.put({ ...kept, metadata: { ...kept.metadata, annotations: {} } });
    sim.api.create(pooled('Retain'));
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Secret');
    expect(conditionOf(sim, 'orders', 'SecretsReady')).toMatchObject({
      reason: 'SecretNotAdoptable',
      message: expect.stringContaining(`kubectl annotate -n ${NS} secret orders-superuser ${ADOPT_ANNOTATION}=true`),
    });
  });

  it('pgfsm’s labels for another cluster are no mark for this one', async () => {
    const secret = objectOf('secret');
    secret.metadata.labels = { 'app.kubernetes.io/managed-by': 'pgfsm', 'pgfsm.io/cluster': 'billing' };
    const sim = simulationWith([secret, pooled('Delete')]);
    await sim.run(5 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Secret');
    expect(conditionOf(sim, 'orders', 'SecretsReady').reason).toBe('SecretNotAdoptable');
  });
});
