/**
 * Adopt only what is ours to adopt, against a real API server and real garbage collection: an ownerless
 * Secret or ConfigMap of a child's name that pgfsm did not create is not adopted, changed or deleted (not
 * under the Delete policy), until a person hands it over with `pgfsm.io/adopt=true`. pgfsm's labels on it
 * change nothing; what a Retain deletion releases carries the annotation from the release (operator.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_IMAGE } from '../../src/operator/domain/components/cluster.ts';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  conditions,
  createClass,
  createCluster,
  eventsAbout,
  getCluster,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  sleep,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

const gone = async (read: () => Promise<unknown>) =>
  read().then(
    () => false,
    (error: { code?: number }) => {
      if (error.code === 404) return true;
      throw error;
    },
  );

const cnpgCluster = (name: string) => ({
  group: 'postgresql.cnpg.io',
  version: 'v1',
  namespace: NS,
  plural: 'clusters',
  name,
});

const deleteCluster = (name: string) =>
  world.custom.deleteNamespacedCustomObject({
    group: 'pgfsm.io',
    version: 'v1alpha1',
    namespace: NS,
    plural: 'postgresclusters',
    name,
  });

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('adopt only what is ours to adopt, on a real API server', () => {
  it('a team’s Secret of the superuser name is not adopted until annotated, then kept with its keys', async () => {
    await world.core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'ledger-superuser' },
        stringData: { username: 'postgres', password: 'theirs', 'team-api-token': 'keep-me' },
      },
    });
    await createCluster(world, 'ledger', { class: 'standard', clusterDeletionPolicy: 'Delete' });
    await untilState(world, 'ledger', 'Failed.Secret');
    expect((await conditions(world, 'ledger')).SecretsReady).toBe('False/SecretNotAdoptable');
    const secret = await world.core.readNamespacedSecret({ name: 'ledger-superuser', namespace: NS });
    expect(secret.metadata?.ownerReferences ?? []).toEqual([]);
    const warnings = (await eventsAbout(world, 'ledger')).filter((e) => e.reason === 'SecretNotAdoptable');
    expect(warnings).toHaveLength(1);

    // The hand-over: the Secret watch sees the annotation and the pass continues at once.
    await world.core.patchNamespacedSecret({
      name: 'ledger-superuser',
      namespace: NS,
      body: [{ op: 'add', path: '/metadata/annotations', value: { 'pgfsm.io/adopt': 'true' } }],
    });
    await untilState(world, 'ledger', 'Ready');
    const adopted = await world.core.readNamespacedSecret({ name: 'ledger-superuser', namespace: NS });
    expect(adopted.metadata?.ownerReferences?.map((o) => o.uid)).toEqual([
      (await getCluster(world, 'ledger'))?.metadata.uid,
    ]);
    expect(Object.keys(adopted.data ?? {}).sort()).toEqual(['password', 'team-api-token', 'username']);
  });

  it('a Secret planted with pgfsm’s labels before its cluster is not adopted until annotated', async () => {
    const labels = { 'app.kubernetes.io/managed-by': 'pgfsm', 'pgfsm.io/cluster': 'payroll' };
    await world.core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'payroll-superuser', labels },
        stringData: { username: 'postgres', password: 'chosen' },
      },
    });
    await createCluster(world, 'payroll', { class: 'standard', clusterDeletionPolicy: 'Delete' });
    await untilState(world, 'payroll', 'Failed.Secret');
    const condition = (await getCluster(world, 'payroll'))?.status?.conditions?.find((c) => c.type === 'SecretsReady');
    expect(condition).toMatchObject({ status: 'False', reason: 'SecretNotAdoptable' });
    expect(condition?.message).toContain(`kubectl annotate -n ${NS} secret payroll-superuser pgfsm.io/adopt=true`);
    const secret = await world.core.readNamespacedSecret({ name: 'payroll-superuser', namespace: NS });
    expect(secret.metadata?.ownerReferences ?? []).toEqual([]);
    expect(await gone(() => world.custom.getNamespacedCustomObject(cnpgCluster('payroll')))).toBe(true);

    await world.core.patchNamespacedSecret({
      name: 'payroll-superuser',
      namespace: NS,
      body: [{ op: 'add', path: '/metadata/annotations', value: { 'pgfsm.io/adopt': 'true' } }],
    });
    await untilState(world, 'payroll', 'Ready');
    const adopted = await world.core.readNamespacedSecret({ name: 'payroll-superuser', namespace: NS });
    expect(adopted.metadata?.ownerReferences?.map((o) => o.uid)).toEqual([
      (await getCluster(world, 'payroll'))?.metadata.uid,
    ]);
  });

  it('an unowned ConfigMap of the endpoints name survives a Delete deletion; what the cluster owns is deleted', async () => {
    await world.core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: 'journal-endpoints' }, data: { NOTE: 'kept by the platform team' } },
    });
    await createCluster(world, 'journal', { class: 'standard', clusterDeletionPolicy: 'Delete' });
    await untilState(world, 'journal', 'Failed.ConfigMap');
    expect((await conditions(world, 'journal')).ConfigMapsReady).toBe('False/ConfigMapNotAdoptable');

    await deleteCluster('journal');
    await waitFor('journal gone', async () => ((await getCluster(world, 'journal')) ? undefined : true));
    await sleep(2_000);
    const kept = await world.core.readNamespacedConfigMap({ name: 'journal-endpoints', namespace: NS });
    expect(kept.data).toEqual({ NOTE: 'kept by the platform team' });
    expect(kept.metadata?.ownerReferences ?? []).toEqual([]);
    expect(await gone(() => world.core.readNamespacedSecret({ name: 'journal-superuser', namespace: NS }))).toBe(true);
  });

  it('a PostgresCluster named like a CNPG Cluster nobody handed over is told so first, not judged against it', async () => {
    // Someone's database, an older spec would be refused against: PostgreSQL 17 on 20Gi.
    await world.custom.createNamespacedCustomObject({
      ...cnpgCluster('archive'),
      body: {
        apiVersion: 'postgresql.cnpg.io/v1',
        kind: 'Cluster',
        metadata: { name: 'archive', namespace: NS },
        spec: { instances: 1, imageName: `${POSTGRES_IMAGE}:17`, storage: { size: '20Gi' } },
      },
    });
    await createCluster(world, 'archive', {
      class: 'standard',
      postgresVersion: '16',
      clusterDeletionPolicy: 'Delete',
    });
    await untilState(world, 'archive', 'Failed.Cluster');
    const condition = (await getCluster(world, 'archive'))?.status?.conditions?.find((c) => c.type === 'ClusterReady');
    expect(condition).toMatchObject({ status: 'False', reason: 'ClusterNotAdoptable' });
    expect(condition?.message).toContain(
      `kubectl annotate -n ${NS} clusters.postgresql.cnpg.io archive pgfsm.io/adopt=true`,
    );
    const said = (await eventsAbout(world, 'archive')).map((e) => e.note).join('\n');
    expect(said).not.toContain('cannot go down');
    const theirs = (await world.custom.getNamespacedCustomObject(cnpgCluster('archive'))) as CnpgCluster;
    expect(theirs.metadata.ownerReferences ?? []).toEqual([]);
    expect(theirs.spec.imageName).toBe(`${POSTGRES_IMAGE}:17`);
  });
});
