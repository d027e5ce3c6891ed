/**
 * A PostgresCluster on the real node, as a team uses it: pgfsm's own image runs the operator, CloudNativePG's
 * real operator runs PostgreSQL 18 (the default) and PgBouncer, and an application connects by the names and Secrets pgfsm
 * publishes. Then a real failure (the primary's Pod is killed), a real change (2 → 3 instances and a
 * parameter) and deletion with `Delete`. The steps share one cluster and run in order.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attach,
  connect,
  createClass,
  createCluster,
  createNamespace,
  type E2e,
  endpoints,
  eventsAbout,
  GROUP,
  getCluster,
  patchSpec,
  poolerPodIps,
  query,
  queryOne,
  secretValue,
  serverVersion,
  untilReadyRecorded,
  waitFor,
} from './support/node.ts';
import { recordResult } from './support/results.ts';

const NS = 'shop';
const NAME = 'orders';
const CLASS = 'e2e-shop';
const ROLE = 'shop_app';
const ROLE_PASSWORD = 'shop-app-password-e2e';

/** Events pgfsm says once per cluster, whatever happens later: a second one would be a duplicate. */
const ONE_TIME = ['SuperuserSecretCreated', 'CNPGClusterCreated', 'PoolersCreated', 'EndpointsPublished'];

let e2e: E2e;
const clients: pg.Client[] = [];

async function superuser() {
  const ep = await endpoints(e2e, NS, NAME);
  const secret = ep.SUPER_USER_SECRET_REF ?? '';
  return {
    endpoints: ep,
    user: await secretValue(e2e, NS, secret, 'username'),
    password: await secretValue(e2e, NS, secret, 'password'),
    port: Number(ep.DEFAULT_CLUSTER_PORT),
  };
}

async function open(host: string, user: string, password: string, port = 5432) {
  const client = await connect(e2e, { host, port, user, password, database: 'postgres' });
  clients.push(client);
  return client;
}

async function oneTimeEventsOnce() {
  const events = await eventsAbout(e2e, NS, NAME);
  for (const reason of ONE_TIME) {
    const said = events.filter((e) => e.reason === reason);
    expect(said.length, `${reason} announced`).toBeGreaterThan(0);
    for (const event of said) expect(event.count, `${reason}: ${event.note}`).toBe(1);
    // One Event object per distinct message: the same thing said twice would be a second object or a count of 2.
    expect(new Set(said.map((e) => e.note)).size).toBe(said.length);
  }
  return events;
}

describe('a PostgresCluster on real PostgreSQL', () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    await createClass(e2e, CLASS);
    await e2e.core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'shop-app-password', labels: { 'cnpg.io/reload': 'true' } },
        type: 'kubernetes.io/basic-auth',
        stringData: { username: ROLE, password: ROLE_PASSWORD },
      },
    });
    await createCluster(e2e, NS, NAME, {
      class: CLASS,
      instances: 2,
      connectionPoolerEnabled: true,
      clusterDeletionPolicy: 'Delete',
      managedRoles: [{ name: ROLE, passwordSecretRef: { name: 'shop-app-password' } }],
    });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    await e2e?.close();
  });

  it('reaches Ready, and an application writes through the pooler and reads through the read-only pooler', async () => {
    await untilReadyRecorded(e2e, NS, NAME);
    const su = await superuser();
    expect(su.endpoints.CLUSTER_POOLER_RW_ENDPOINT).toBe(`${NAME}-pooler-rw.${NS}.svc.cluster.local`);
    expect(su.endpoints.CLUSTER_POOLER_RO_ENDPOINT).toBe(`${NAME}-pooler-ro.${NS}.svc.cluster.local`);

    const rw = await open(su.endpoints.CLUSTER_POOLER_RW_ENDPOINT ?? '', su.user, su.password, su.port);
    await query(rw, 'CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL)');
    await query(rw, "INSERT INTO orders VALUES (1, 'tea'), (2, 'bread'), (3, 'salt')");
    // Through PgBouncer: the server sees the pooler's Pod as its client, not the gateway.
    const { client: serverSawClient } = await queryOne<{ client: string }>(
      rw,
      'SELECT host(inet_client_addr()) AS client',
    );
    const poolerIps = await poolerPodIps(e2e, NS, `${NAME}-pooler-rw`);
    expect(poolerIps).toContain(serverSawClient);
    const version = await serverVersion(rw);
    expect(version).toMatch(/^18\.\d+$/);

    const ro = await open(su.endpoints.CLUSTER_POOLER_RO_ENDPOINT ?? '', su.user, su.password, su.port);
    const rows = await waitFor('the rows on the replica', async () => {
      const found = await query<{ item: string }>(ro, 'SELECT item FROM orders ORDER BY id').catch(() => []);
      return found.length === 3 ? found : undefined;
    });
    expect(rows.map((r) => r.item)).toEqual(['tea', 'bread', 'salt']);
    const { in_recovery: replica } = await queryOne<{ in_recovery: boolean }>(
      ro,
      'SELECT pg_is_in_recovery() AS in_recovery',
    );
    expect(replica).toBe(true);
    recordResult({ cluster: `${NS}/${NAME}`, ready: true, queriedThroughPooler: true, serverVersion: version });
  });

  it('lets the managed role log in with the password of its Secret', async () => {
    const { endpoints: ep } = await superuser();
    const app = await open(ep.CLUSTER_POOLER_RW_ENDPOINT ?? '', ROLE, ROLE_PASSWORD);
    const { who } = await queryOne<{ who: string }>(app, 'SELECT current_user AS who');
    expect(who).toBe(ROLE);
  });

  it('reports the loss of its primary, returns to Ready after the failover, and keeps the rows', async () => {
    const before = await e2e.core.listNamespacedPod({
      namespace: NS,
      labelSelector: `cnpg.io/cluster=${NAME},cnpg.io/instanceRole=primary`,
    });
    const primary = before.items[0]?.metadata?.name ?? '';
    expect(primary).not.toBe('');
    // A crash, not a shutdown: no grace period.
    await e2e.core.deleteNamespacedPod({ name: primary, namespace: NS, gracePeriodSeconds: 0 });
    await waitFor('pgfsm to report the degradation', async () => {
      const events = await eventsAbout(e2e, NS, NAME);
      return events.some((e) => e.reason === 'Degraded' || e.reason === 'NotReady') || undefined;
    });
    await waitFor(
      'a new primary and Ready',
      async () => {
        const cluster = await getCluster(e2e, NS, NAME);
        const pods = await e2e.core.listNamespacedPod({
          namespace: NS,
          labelSelector: `cnpg.io/cluster=${NAME},cnpg.io/instanceRole=primary`,
        });
        const now = pods.items.find((p) => p.status?.phase === 'Running')?.metadata?.name;
        return (cluster?.status?.state === 'Ready' && now && now !== primary) || undefined;
      },
      480_000,
    );
    const su = await superuser();
    const rw = await open(su.endpoints.CLUSTER_POOLER_RW_ENDPOINT ?? '', su.user, su.password, su.port);
    const rows = await waitFor('the rows after the failover', async () => {
      const found = await query<{ item: string }>(rw, 'SELECT item FROM orders ORDER BY id');
      return found.length === 3 ? found : undefined;
    });
    expect(rows.map((r) => r.item)).toEqual(['tea', 'bread', 'salt']);
    await oneTimeEventsOnce();
  });

  it('rolls out 2 → 3 instances and a PostgreSQL parameter', async () => {
    await patchSpec(e2e, NS, NAME, { instances: 3, postgresqlConfig: { work_mem: '8MB' } });
    await waitFor(
      'three ready instances',
      async () => {
        const cluster = await getCluster(e2e, NS, NAME);
        return (cluster?.status?.state === 'Ready' && cluster.status.readyInstances === 3) || undefined;
      },
      480_000,
    );
    const su = await superuser();
    const rw = await open(su.endpoints.CLUSTER_POOLER_RW_ENDPOINT ?? '', su.user, su.password, su.port);
    const workMem = await waitFor('work_mem rolled out', async () => {
      const { work_mem: value } = await queryOne<{ work_mem: string }>(rw, 'SHOW work_mem');
      return value === '8MB' ? value : undefined;
    });
    expect(workMem).toBe('8MB');
    await oneTimeEventsOnce();
  });

  it('deletes the CNPG Cluster and its volumes under the Delete policy', async () => {
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    await e2e.custom.deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name: NAME });
    await waitFor(
      'the PostgresCluster, its CNPG Cluster and its PVCs gone',
      async () => {
        const [cluster, cnpg, pvcs] = await Promise.all([
          getCluster(e2e, NS, NAME),
          e2e.custom
            .getNamespacedCustomObject({
              group: 'postgresql.cnpg.io',
              version: 'v1',
              namespace: NS,
              plural: 'clusters',
              name: NAME,
            })
            .catch((error: { code?: number }) => (error.code === 404 ? undefined : Promise.reject(error))),
          e2e.core.listNamespacedPersistentVolumeClaim({ namespace: NS, labelSelector: `cnpg.io/cluster=${NAME}` }),
        ]);
        return (cluster === undefined && cnpg === undefined && pvcs.items.length === 0) || undefined;
      },
      480_000,
    );
  });
});
