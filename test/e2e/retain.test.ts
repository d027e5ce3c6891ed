/**
 * Deletion under `Retain` on real PostgreSQL: the PostgresCluster goes, the database keeps running with its
 * data, and a new PostgresCluster of the same name adopts it (pgfsm stamped the adopt annotation when it let
 * go) and reads the old rows with the old superuser Secret. This is the suite's PostgreSQL 17 cluster (the
 * others run 18, the default): 17 stays supported, and adoption must keep the major it found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attach,
  connect,
  createClass,
  createCluster,
  createNamespace,
  type E2e,
  endpoints,
  GROUP,
  getCluster,
  query,
  secretValue,
  serverVersion,
  untilReadyRecorded,
  waitFor,
} from './support/node.ts';
import { recordResult } from './support/results.ts';

const NS = 'ledger';
const NAME = 'books';
const CLASS = 'e2e-ledger';

let e2e: E2e;

const create = () => createCluster(e2e, NS, NAME, { class: CLASS, clusterDeletionPolicy: 'Retain' });

async function superuserClient() {
  const ep = await endpoints(e2e, NS, NAME);
  const secret = ep.SUPER_USER_SECRET_REF ?? '';
  return connect(e2e, {
    host: ep.CLUSTER_RW_ENDPOINT ?? '',
    port: Number(ep.DEFAULT_CLUSTER_PORT),
    user: await secretValue(e2e, NS, secret, 'username'),
    password: await secretValue(e2e, NS, secret, 'password'),
  });
}

describe('Retain on real PostgreSQL', () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    await createClass(e2e, CLASS, { postgresVersion: '17' });
    await create();
  });
  afterAll(async () => {
    await e2e?.close();
  });

  it('keeps the database when the PostgresCluster goes, and a new one of the same name adopts it', async () => {
    await untilReadyRecorded(e2e, NS, NAME);
    const first = await superuserClient();
    const version = await serverVersion(first);
    expect(version).toMatch(/^17\.\d+$/);
    recordResult({ cluster: `${NS}/${NAME}`, ready: true, serverVersion: version });
    await query(first, 'CREATE TABLE entries (id int PRIMARY KEY, amount numeric NOT NULL)');
    await query(first, 'INSERT INTO entries VALUES (1, 10.50), (2, -3.25)');
    await first.end();
    const password = await secretValue(e2e, NS, `${NAME}-superuser`, 'password');

    await e2e.custom.deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name: NAME });
    await waitFor('the PostgresCluster gone', async () => (await getCluster(e2e, NS, NAME)) === undefined || undefined);
    const cnpg = (await e2e.custom.getNamespacedCustomObject({
      group: 'postgresql.cnpg.io',
      version: 'v1',
      namespace: NS,
      plural: 'clusters',
      name: NAME,
    })) as { metadata: { ownerReferences?: unknown[]; annotations?: Record<string, string> } };
    expect(cnpg.metadata.ownerReferences ?? []).toEqual([]);
    expect(cnpg.metadata.annotations?.['pgfsm.io/adopt']).toBe('true');
    const pvcs = await e2e.core.listNamespacedPersistentVolumeClaim({
      namespace: NS,
      labelSelector: `cnpg.io/cluster=${NAME}`,
    });
    expect(pvcs.items.length).toBe(1);

    await create();
    await untilReadyRecorded(e2e, NS, NAME, `${NS}/${NAME} (adopted)`);
    expect(await secretValue(e2e, NS, `${NAME}-superuser`, 'password')).toBe(password);
    const second = await superuserClient();
    const rows = await query<{ amount: string }>(second, 'SELECT amount FROM entries ORDER BY id');
    const adopted = await serverVersion(second);
    await second.end();
    expect(adopted).toBe(version);
    recordResult({ cluster: `${NS}/${NAME} (adopted)`, ready: true, serverVersion: adopted });
    expect(rows.map((r) => r.amount)).toEqual(['10.50', '-3.25']);
  });
});
