/**
 * PostgresDatabase against a real kube-apiserver and etcd, with CloudNativePG's real CRDs and admission
 * webhooks (the CNPG Cluster, its managed roles and the CNPG Database objects pgfsm writes are defaulted and
 * validated by CNPG's own code, CNPG_VERSION). CNPG's controller is simulated (src/tools/simulation: roles reconciled,
 * Databases applied), and there is no PostgreSQL here, so the grants go to a stand-in that records them; the
 * e2e suite (test/e2e/postgres-database.test.ts) runs all of it on a real node with a real PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../src/operator/api/schema.ts';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import type { RecordingPrivileges } from '../../src/tools/memory/database-ports.ts';
import {
  countOf,
  createClass,
  createCluster,
  createDatabase,
  eventsAbout,
  getCluster,
  getDatabase,
  NS,
  type OperatorHandle,
  patchSpec,
  runOperator,
  secretValues,
  setUpWorld,
  untilDatabaseState,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

const custom = (plural: string, name: string) => ({
  group: 'postgresql.cnpg.io',
  version: 'v1',
  namespace: NS,
  plural,
  name,
});
const cnpgCluster = async (name: string) =>
  (await world.custom.getNamespacedCustomObject(custom('clusters', name))) as CnpgCluster;
const cnpgDatabase = async (name: string) => {
  try {
    return (await world.custom.getNamespacedCustomObject(custom('databases', name))) as {
      metadata: { annotations?: Record<string, string>; uid: string };
      spec: Record<string, unknown>;
    };
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
};
const condition = (database: PostgresDatabase | undefined, type: string) =>
  database?.status?.conditions?.find((c) => c.type === type);
const clusterState = async (name: string) => (await getCluster(world, name))?.status?.state;
const grants = () => (operator?.privileges as RecordingPrivileges | undefined)?.grants ?? [];

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  operator = await runOperator(world);
  await createCluster(world, 'shop', { class: 'standard', instances: 1 });
  await untilState(world, 'shop', 'Ready');
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('PostgresDatabase against a real API server', () => {
  it('reaches Ready: roles pushed by the cluster, a CNPG Database, grants, a connection Secret per role', async () => {
    await createDatabase(world, 'shop-app', {
      cluster: 'shop',
      name: 'app',
      owner: 'app',
      users: [{ name: 'reader', access: 'readOnly' }],
      schemas: [{ name: 'sales' }],
    });
    await untilDatabaseState(world, 'shop-app', 'Ready');
    const database = await getDatabase(world, 'shop-app');
    expect(condition(database, 'Ready')?.status).toBe('True');
    expect(database?.status?.secrets).toEqual([
      { user: 'app', secretName: 'shop-app-app', access: 'owner' },
      { user: 'reader', secretName: 'shop-app-reader', access: 'readOnly' },
    ]);
    // The cluster is the one writer of managed.roles: the database's roles sit beside its own.
    const roles = (await cnpgCluster('shop')).spec.managed?.roles ?? [];
    expect(roles.map((r) => [r.name, r.passwordSecret?.name])).toEqual([
      ['app', 'shop-app-app'],
      ['reader', 'shop-app-reader'],
    ]);
    const owner = await secretValues(world, 'shop-app-app');
    expect(owner?.host).toBe('shop-rw.team-a.svc.cluster.local');
    expect(owner?.uri).toBe(
      `postgresql://app:${encodeURIComponent(owner?.password ?? '')}@shop-rw.team-a.svc.cluster.local:5432/app`,
    );
    expect((await secretValues(world, 'shop-app-reader'))?.host).toBe('shop-ro.team-a.svc.cluster.local');
    const made = await cnpgDatabase('shop-app');
    expect(made?.spec).toMatchObject({
      name: 'app',
      owner: 'app',
      cluster: { name: 'shop' },
      databaseReclaimPolicy: 'retain',
    });
    expect(made?.metadata.annotations?.['pgfsm.io/privileges']).toMatch(/^[0-9a-f]{16}$/);
    expect(grants().map((g) => g.plan)).toEqual([
      { database: 'app', owner: 'app', schemas: ['public', 'sales'], users: [{ name: 'reader', access: 'readOnly' }] },
    ]);
    // Adding a database is no change of the cluster: it stayed Ready, and said so once.
    expect(countOf(await eventsAbout(world, 'shop'), 'Ready')).toBe(1);
    expect(countOf(await eventsAbout(world, 'shop'), 'NotReady')).toBe(0);
    // No password in the status or the events.
    const published = JSON.stringify([database?.status, await eventsAbout(world, 'shop-app', 'PostgresDatabase')]);
    expect(published).not.toContain(owner?.password);
  });

  it('follows the cluster: turning the pooler on points the Secrets at it, off points them back', async () => {
    const before = await secretValues(world, 'shop-app-app');
    await patchSpec(world, 'shop', { connectionPoolerEnabled: true });
    // One pass writes the Secrets one after the other: wait for the last, not only the first.
    await waitFor('the owner Secret to name the rw pooler and the reader Secret the ro pooler', async () =>
      (await secretValues(world, 'shop-app-app'))?.host === 'shop-pooler-rw.team-a.svc.cluster.local' &&
      (await secretValues(world, 'shop-app-reader'))?.host === 'shop-pooler-ro.team-a.svc.cluster.local'
        ? true
        : undefined,
    );
    const after = await secretValues(world, 'shop-app-app');
    expect(after?.password).toBe(before?.password);
    await untilDatabaseState(world, 'shop-app', 'Ready');
    expect((await getDatabase(world, 'shop-app'))?.status?.endpoint).toEqual({
      host: 'shop-pooler-rw.team-a.svc.cluster.local',
      port: '5432',
      pooled: true,
    });
    await patchSpec(world, 'shop', { connectionPoolerEnabled: false });
    await waitFor('the owner Secret to name -rw again', async () =>
      (await secretValues(world, 'shop-app-app'))?.host === 'shop-rw.team-a.svc.cluster.local' ? true : undefined,
    );
    const events = await eventsAbout(world, 'shop-app', 'PostgresDatabase');
    expect(events.filter((e) => e.reason === 'SecretUpdated').length).toBeGreaterThan(0);
    expect(countOf(events, 'NotReady')).toBe(0);
  });

  it('a switchover needs nothing: the Secrets name Services that follow the primary, the database stays Ready', async () => {
    await untilDatabaseState(world, 'shop-app', 'Ready');
    const before = await secretValues(world, 'shop-app-app');
    world.simulator.switchover(NS, 'shop', 2_000);
    await waitFor('the cluster to go Degraded', async () =>
      (await clusterState('shop')) === 'Degraded' ? true : undefined,
    );
    await untilState(world, 'shop', 'Ready');
    expect(await secretValues(world, 'shop-app-app')).toEqual(before);
    expect((await getDatabase(world, 'shop-app'))?.status?.state).toBe('Ready');
    expect(countOf(await eventsAbout(world, 'shop-app', 'PostgresDatabase'), 'NotReady')).toBe(0);
  });

  it('repairs what is deleted: a Secret and the CNPG Database come back, and the grants are made again', async () => {
    await world.core.deleteNamespacedSecret({ name: 'shop-app-reader', namespace: NS });
    await waitFor(
      'the reader Secret to be back',
      async () => (await secretValues(world, 'shop-app-reader')) ?? undefined,
    );
    const uid = (await cnpgDatabase('shop-app'))?.metadata.uid;
    const granted = grants().length;
    await world.custom.deleteNamespacedCustomObject(custom('databases', 'shop-app'));
    await waitFor('a new CNPG Database', async () => {
      const made = await cnpgDatabase('shop-app');
      return made && made.metadata.uid !== uid ? made : undefined;
    });
    await untilDatabaseState(world, 'shop-app', 'Ready');
    expect(grants().length).toBe(granted + 1);
  });

  it('names what it waits for and who has a role it asks for', async () => {
    await createDatabase(world, 'ghost-app', { cluster: 'ghost', name: 'app', owner: 'ghost_owner' });
    await waitFor('ghost-app to report its missing cluster', async () => {
      const c = condition(await getDatabase(world, 'ghost-app'), 'ClusterAvailable');
      return c?.reason === 'ClusterNotFound' ? c : undefined;
    });
    expect(condition(await getDatabase(world, 'ghost-app'), 'ClusterAvailable')?.message).toContain(
      'PostgresCluster ghost',
    );
    await createDatabase(world, 'shop-other', { cluster: 'shop', name: 'other', owner: 'app' });
    await untilDatabaseState(world, 'shop-other', 'Failed.Claims');
    const claims = condition(await getDatabase(world, 'shop-other'), 'ClaimsHeld');
    expect(claims?.reason).toBe('RoleClaimed');
    expect(claims?.message).toContain('role app is held by PostgresDatabase shop-app');
    // Refused, it made nothing: no Secret, no CNPG Database; the holder records what it holds.
    expect(await cnpgDatabase('shop-other')).toBeUndefined();
    expect((await getDatabase(world, 'shop-app'))?.status?.claims).toMatchObject({
      database: 'app',
      roles: ['app', 'reader'],
    });
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresdatabases',
      name: 'shop-other',
    });
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresdatabases',
      name: 'ghost-app',
    });
    await waitFor('both gone', async () =>
      !(await getDatabase(world, 'shop-other')) && !(await getDatabase(world, 'ghost-app')) ? true : undefined,
    );
  });

  it('Retain (the default): deleting keeps the roles in PostgreSQL and hands the Secrets over', async () => {
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresdatabases',
      name: 'shop-app',
    });
    await waitFor('shop-app gone', async () => ((await getDatabase(world, 'shop-app')) ? undefined : true));
    const roles = (await cnpgCluster('shop')).spec.managed?.roles ?? [];
    // Out of the list, not `absent`: CNPG leaves them in PostgreSQL as they are.
    expect(roles.map((r) => r.name)).toEqual([]);
    const secret = await world.core.readNamespacedSecret({ name: 'shop-app-app', namespace: NS });
    expect(secret.metadata?.ownerReferences ?? []).toEqual([]);
    expect(secret.metadata?.annotations?.['pgfsm.io/adopt']).toBe('true');
    expect(await cnpgDatabase('shop-app')).toBeUndefined();
  });

  it('Delete: drops the database and its roles and deletes the Secrets', async () => {
    await createDatabase(world, 'shop-tmp', {
      cluster: 'shop',
      name: 'tmp',
      owner: 'tmp_owner',
      deletionPolicy: 'Delete',
    });
    await untilDatabaseState(world, 'shop-tmp', 'Ready');
    expect((await cnpgDatabase('shop-tmp'))?.spec.databaseReclaimPolicy).toBe('delete');
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresdatabases',
      name: 'shop-tmp',
    });
    await waitFor('shop-tmp gone', async () => ((await getDatabase(world, 'shop-tmp')) ? undefined : true));
    const roles = (await cnpgCluster('shop')).spec.managed?.roles ?? [];
    expect(roles.find((r) => r.name === 'tmp_owner')?.ensure).toBe('absent');
    expect(await secretValues(world, 'shop-tmp-tmp-owner')).toBeUndefined();
    expect(await cnpgDatabase('shop-tmp')).toBeUndefined();
    await untilState(world, 'shop', 'Ready');
  });
});

describe('when the PostgresCluster goes', () => {
  it('its databases say so, naming it, and stay where they are', async () => {
    await createDatabase(world, 'shop-last', { cluster: 'shop', name: 'last', owner: 'last_owner' });
    await untilDatabaseState(world, 'shop-last', 'Ready');
    await world.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresclusters',
      name: 'shop',
    });
    const reported = await waitFor('shop-last to report its cluster gone', async () => {
      const c = condition(await getDatabase(world, 'shop-last'), 'ClusterAvailable');
      return c?.reason === 'ClusterNotFound' || c?.reason === 'ClusterDeleting' ? c : undefined;
    });
    expect(reported.message).toContain('PostgresCluster shop');
    expect(condition(await getDatabase(world, 'shop-last'), 'Ready')?.status).toBe('False');
    expect(countOf(await eventsAbout(world, 'shop-last', 'PostgresDatabase'), 'NotReady')).toBe(1);
  });
});
