/**
 * A PostgresDatabase on the real node: pgfsm's own image, CloudNativePG's real operator (managed roles, its
 * Database controller), real PostgreSQL 18 and PgBouncer, and the grants made over SQL by the operator's Pod
 * through the cluster's `-rw` Service. An application is given nothing but its Secret's `uri`; a read-only
 * user reads what it wrote and is refused a write; the pooler is turned off and the Secrets follow; a database
 * under `Delete` is dropped with its roles. The steps share one cluster and run in order.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attach,
  connect,
  connectByUri,
  createClass,
  createCluster,
  createDatabase,
  createNamespace,
  type E2e,
  endpoints,
  eventsAbout,
  getCluster,
  getDatabase,
  patchSpec,
  query,
  secretValue,
  serverVersion,
  untilDatabaseState,
  untilReadyRecorded,
  waitFor,
} from './support/node.ts';
import { recordResult } from './support/results.ts';

const NS = 'books';
const CLUSTER = 'library';
const CLASS = 'e2e-books';

let e2e: E2e;
const clients: pg.Client[] = [];

async function byUri(secret: string) {
  const client = await connectByUri(e2e, await secretValue(e2e, NS, secret, 'uri'));
  clients.push(client);
  return client;
}

/** The superuser, directly on `-rw`: to look at what pgfsm made, as an administrator would. */
async function administrator() {
  const ep = await endpoints(e2e, NS, CLUSTER);
  const secret = ep.SUPER_USER_SECRET_REF ?? '';
  const client = await connect(e2e, {
    host: ep.CLUSTER_RW_ENDPOINT ?? '',
    port: Number(ep.DEFAULT_CLUSTER_PORT),
    user: await secretValue(e2e, NS, secret, 'username'),
    password: await secretValue(e2e, NS, secret, 'password'),
  });
  clients.push(client);
  return client;
}

describe('a PostgresDatabase on real PostgreSQL', () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    await createClass(e2e, CLASS);
    // Two instances: the read-only user's endpoint serves from the replica.
    await createCluster(e2e, NS, CLUSTER, {
      class: CLASS,
      instances: 2,
      connectionPoolerEnabled: true,
      clusterDeletionPolicy: 'Delete',
    });
    await createDatabase(e2e, NS, 'library-app', {
      cluster: CLUSTER,
      name: 'catalogue',
      owner: 'librarian',
      users: [{ name: 'reader', access: 'readOnly' }],
    });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    await e2e?.close();
  });

  it('reaches Ready; the owner connects with its uri alone, creates a table and writes', async () => {
    await untilReadyRecorded(e2e, NS, CLUSTER);
    await untilDatabaseState(e2e, NS, 'library-app', 'Ready');
    const uri = await secretValue(e2e, NS, 'library-app-librarian', 'uri');
    expect(new URL(uri).hostname).toBe(`${CLUSTER}-pooler-rw.${NS}.svc.cluster.local`);
    const owner = await byUri('library-app-librarian');
    const version = await serverVersion(owner);
    expect(version).toMatch(/^18\.\d+$/);
    recordResult({ cluster: `${NS}/${CLUSTER}`, ready: true, serverVersion: version });
    expect(
      (await query<{ db: string; me: string }>(owner, 'SELECT current_database() AS db, current_user AS me'))[0],
    ).toEqual({
      db: 'catalogue',
      me: 'librarian',
    });
    await query(owner, 'CREATE TABLE books (id int PRIMARY KEY, title text NOT NULL)');
    await query(owner, "INSERT INTO books VALUES (1, 'Middlemarch'), (2, 'Bleak House')");
    // Not the superuser: an application never needs it.
    const roles = await query<{ super: boolean }>(
      owner,
      'SELECT rolsuper AS super FROM pg_roles WHERE rolname = current_user',
    );
    expect(roles[0]?.super).toBe(false);
  });

  it('the read-only user reads the rows through the read pooler and is refused a write', async () => {
    const uri = await secretValue(e2e, NS, 'library-app-reader', 'uri');
    expect(new URL(uri).hostname).toBe(`${CLUSTER}-pooler-ro.${NS}.svc.cluster.local`);
    const reader = await byUri('library-app-reader');
    const rows = await waitFor('the rows on the replica', async () => {
      const found = await query<{ title: string }>(reader, 'SELECT title FROM books ORDER BY id').catch(() => []);
      return found.length === 2 ? found : undefined;
    });
    expect(rows.map((r) => r.title)).toEqual(['Middlemarch', 'Bleak House']);
    // On the primary, so that the refusal is the grants', not the replica's read-only transaction.
    const ep = await endpoints(e2e, NS, CLUSTER);
    const onPrimary = await connect(e2e, {
      host: ep.CLUSTER_RW_ENDPOINT ?? '',
      port: 5432,
      user: 'reader',
      password: await secretValue(e2e, NS, 'library-app-reader', 'password'),
      database: 'catalogue',
    });
    clients.push(onPrimary);
    expect((await query<{ n: string }>(onPrimary, 'SELECT count(*) AS n FROM books'))[0]?.n).toBe('2');
    await expect(query(onPrimary, "INSERT INTO books VALUES (3, 'Persuasion')")).rejects.toMatchObject({
      code: '42501',
    });
    await expect(query(onPrimary, 'CREATE TABLE notes (id int)')).rejects.toMatchObject({ code: '42501' });
  });

  it('turning the pooler off points the Secrets at -rw within seconds, and the next connection works', async () => {
    // The pooled connections end with their PgBouncer Pods: closed first, as an application's pool would lose them.
    for (const client of clients.splice(0)) await client.end().catch(() => undefined);
    await patchSpec(e2e, NS, CLUSTER, { connectionPoolerEnabled: false });
    const started = Date.now();
    await waitFor(
      'the owner Secret to name -rw',
      async () => {
        const uri = await secretValue(e2e, NS, 'library-app-librarian', 'uri');
        return new URL(uri).hostname === `${CLUSTER}-rw.${NS}.svc.cluster.local` ? true : undefined;
      },
      120_000,
    );
    console.log(`the Secret followed the pooler switch-off in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const owner = await byUri('library-app-librarian');
    expect((await query<{ n: string }>(owner, 'SELECT count(*) AS n FROM books'))[0]?.n).toBe('2');
    // The same pass writes the reader's Secret after the owner's, then the status: waited for, not raced.
    await waitFor('the reader Secret to name -ro and the status the unpooled endpoint', async () => {
      const reader = await secretValue(e2e, NS, 'library-app-reader', 'uri');
      const pooled = (await getDatabase(e2e, NS, 'library-app'))?.status?.endpoint?.pooled;
      return new URL(reader).hostname === `${CLUSTER}-ro.${NS}.svc.cluster.local` && pooled === false
        ? true
        : undefined;
    });
  });

  it('Delete: deleting a database drops it and its roles in PostgreSQL', async () => {
    await createDatabase(e2e, NS, 'library-scratch', {
      cluster: CLUSTER,
      name: 'scratch',
      owner: 'scratcher',
      deletionPolicy: 'Delete',
    });
    await untilDatabaseState(e2e, NS, 'library-scratch', 'Ready');
    const admin = await administrator();
    const exists = async () =>
      (await query(admin, "SELECT 1 FROM pg_database WHERE datname = 'scratch'")).length +
      (await query(admin, "SELECT 1 FROM pg_roles WHERE rolname = 'scratcher'")).length;
    expect(await exists()).toBe(2);
    const notReady = async () =>
      (await eventsAbout(e2e, NS, CLUSTER)).filter((e) => e.reason === 'NotReady').reduce((n, e) => n + e.count, 0);
    const notReadyBefore = await notReady();
    await e2e.custom.deleteNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'postgresdatabases',
      name: 'library-scratch',
    });
    await waitFor('library-scratch gone', async () =>
      (await getDatabase(e2e, NS, 'library-scratch')) ? undefined : true,
    );
    expect(await exists()).toBe(0);
    // Its roles leaving the cluster's list are not pending: the cluster never left Ready for them (issue 37, 4).
    expect(await notReady()).toBe(notReadyBefore);
    expect((await getCluster(e2e, NS, CLUSTER))?.status?.state).toBe('Ready');
    // The other database is untouched.
    expect((await getDatabase(e2e, NS, 'library-app'))?.status?.state).toBe('Ready');
  });
});
