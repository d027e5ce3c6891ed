/**
 * A second team on the same PostgresCluster, and someone who may create Secrets in the namespace (issue 37), on
 * the real node with real PostgreSQL: every database, role and connection Secret name on a cluster has one
 * holder, and what a PostgresDatabase does not hold is never created, pushed, granted or dropped for it.
 *
 * 1. A database name taken: `second` names the database `first` holds; it is refused (`Failed.Claims`,
 *    `DatabaseClaimed`), gets no CNPG Database and no Secret, and deleting it under `Delete` leaves `first`'s rows,
 *    password and Ready as they were.
 * 2. A Secret name taken: `shopx-app`'s user `ro` and `shopx`'s user `app_ro` both want `shopx-app-ro`; the younger
 *    is refused (`SecretClaimed`), the Secret stays `shopx`'s, and role `ro` is never pushed with its password.
 * 3. A planted Secret: one of the name pgfsm would use, made before the PostgresDatabase, is never anyone's password
 *    (`Failed.Secrets`, `SecretOwnedByOther`); `pgfsm.io/adopt=true` hands it over, and the database goes on at
 *    once (the Secret's watch event), not at the next resync.
 *
 * "Never" is checked on the whole history of the namespace's objects (support/history.ts: every version the
 * watches delivered), not only on the last look. Each "not pushed" is checked after a barrier: a witness
 * PostgresDatabase created after the refused one, whose role the cluster's pass pushes — that pass saw the refused
 * one too. The steps share one cluster and run in order.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGFSM_NAMESPACE } from '../../src/tools/node/install.ts';
import { collectionPaths, type History, type KubeObject, recordHistory } from './support/history.ts';
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
  getDatabase,
  query,
  secretValue,
  serverVersion,
  untilDatabaseState,
  untilReadyRecorded,
  waitFor,
} from './support/node.ts';
import { recordLine, recordResult } from './support/results.ts';

const NS = 'market';
const CLUSTER = 'stalls';
const CLASS = 'e2e-market';
/** pgfsm's labels on the connection Secrets (src/operator/domain/vocabulary.ts, database/vocabulary.ts). */
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const DATABASE_LABEL = 'pgfsm.io/database';
const ADOPT_ANNOTATION = 'pgfsm.io/adopt';
/**
 * The operator's resync period when `pgfsm run` is given none: src/operator/driver/controller.ts
 * (`resyncPeriodMs ?? 10 * 60_000`; docs/operations.md, "half the 10-minute resync"). The deployment on the node
 * is read to see that it sets none.
 */
const DEFAULT_RESYNC_MS = 10 * 60_000;

interface CnpgRole {
  name: string;
  ensure?: string;
  passwordSecret?: { name: string };
}
interface CnpgCluster extends KubeObject {
  spec?: { managed?: { roles?: CnpgRole[] } };
}
interface Claims {
  database?: string;
  roles?: string[];
  secrets?: string[];
}
interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

let e2e: E2e;
let history: History;
const clients: pg.Client[] = [];
/** What each case showed, for the summary line; a case that did not get there says so. */
const summary = {
  database: 'database-name case not reached',
  secret: 'Secret-name case not reached',
  planted: 'planted-Secret case not reached',
};

async function byUri(secret: string) {
  const client = await connectByUri(e2e, await secretValue(e2e, NS, secret, 'uri'));
  clients.push(client);
  return client;
}

/** The cluster's `-rw` Service and port, as the endpoints ConfigMap publishes them. */
async function primary() {
  const ep = await endpoints(e2e, NS, CLUSTER);
  return {
    host: ep.CLUSTER_RW_ENDPOINT ?? '',
    port: Number(ep.DEFAULT_CLUSTER_PORT),
    superuser: ep.SUPER_USER_SECRET_REF,
  };
}

/** The superuser, directly on `-rw`: to look at what pgfsm made, as an administrator would. One connection. */
let admin: pg.Client | undefined;
async function administrator() {
  if (admin) return admin;
  const { host, port, superuser } = await primary();
  const client = await connect(e2e, {
    host,
    port,
    user: await secretValue(e2e, NS, superuser ?? '', 'username'),
    password: await secretValue(e2e, NS, superuser ?? '', 'password'),
  });
  clients.push(client);
  admin = client;
  return client;
}

/**
 * One login attempt on the primary, not retried: `ok`, or PostgreSQL's SQLSTATE (28P01: the password is wrong or
 * the role does not exist, which PostgreSQL does not tell apart). Anything else (a refused connection) is no
 * answer about the password and is thrown.
 */
async function login(user: string, password: string, database: string): Promise<string> {
  const { host, port } = await primary();
  const localPort = await e2e.node.gateway.open(host, port);
  const client = new pg.Client({
    host: '127.0.0.1',
    port: localPort,
    user,
    password,
    database,
    ssl: false,
    connectionTimeoutMillis: 10_000,
  });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return 'ok';
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code && /^[0-9A-Z]{5}$/.test(code)) return code;
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function roleExists(name: string): Promise<boolean> {
  return (await query(await administrator(), 'SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).length > 0;
}

async function cnpgCluster(): Promise<CnpgCluster> {
  return (await e2e.custom.getNamespacedCustomObject({
    group: 'postgresql.cnpg.io',
    version: 'v1',
    namespace: NS,
    plural: 'clusters',
    name: CLUSTER,
  })) as CnpgCluster;
}

const managedRoles = (cluster: CnpgCluster | undefined) => cluster?.spec?.managed?.roles ?? [];

/** Every managed-role entry the CNPG Cluster ever had (each version the watch delivered), with the time seen. */
const everPushed = () =>
  history
    .versions<CnpgCluster>('cnpgClusters', CLUSTER)
    .flatMap((v) => managedRoles(v.object).map((role) => ({ ...role, at: v.at })));

async function cnpgDatabaseExists(name: string): Promise<boolean> {
  try {
    await e2e.custom.getNamespacedCustomObject({
      group: 'postgresql.cnpg.io',
      version: 'v1',
      namespace: NS,
      plural: 'databases',
      name,
    });
    return true;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return false;
    throw error;
  }
}

async function secretOf(name: string) {
  try {
    return await e2e.core.readNamespacedSecret({ name, namespace: NS });
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

const controllerOf = (object: KubeObject | { metadata?: KubeObject['metadata'] } | undefined) =>
  object?.metadata?.ownerReferences?.find((ref) => ref.controller === true);

function condition(status: unknown, type: string): Condition | undefined {
  const conditions = (status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  return conditions.find((c) => c.type === type);
}

const claimsOf = async (name: string) =>
  ((await getDatabase(e2e, NS, name))?.status as { claims?: Claims } | undefined)?.claims;

async function databaseEvents(name: string) {
  const list = await e2e.events.listNamespacedEvent({ namespace: NS });
  return list.items
    .filter((e) => e.regarding?.kind === 'PostgresDatabase' && e.regarding?.name === name)
    .map((e) => ({ reason: e.reason ?? '', note: e.note ?? '' }));
}

/**
 * A barrier: a new PostgresDatabase whose owner role the cluster's pass pushes to CloudNativePG. The pass that
 * pushes it read every PostgresDatabase created before it, so what it did not push for those, it refused.
 */
let witnesses = 0;
async function cnpgRolesAfterAClusterPass(): Promise<CnpgRole[]> {
  witnesses += 1;
  const role = `stall_witness_${witnesses}`;
  await createDatabase(e2e, NS, `witness-${witnesses}`, { cluster: CLUSTER, name: role, owner: role });
  return waitFor(`the cluster's pass to push ${role}`, async () => {
    const roles = managedRoles(await cnpgCluster());
    return roles.some((r) => r.name === role && r.ensure !== 'absent') ? roles : undefined;
  });
}

/** Waits for a refused state and returns the refusing condition. */
async function refused(name: string, state: string, type: string): Promise<Condition | undefined> {
  await untilDatabaseState(e2e, NS, name, state);
  return condition((await getDatabase(e2e, NS, name))?.status, type);
}

async function deleteDatabase(name: string) {
  await e2e.node.kubectl(['delete', '-n', NS, 'postgresdatabase', name, '--wait=false']);
  await waitFor(`PostgresDatabase ${name} gone`, async () => ((await getDatabase(e2e, NS, name)) ? undefined : true));
}

/** The resync period of the pgfsm deployed on the node: its own setting if the Deployment has one, else the default. */
async function deployedResyncMs(): Promise<number> {
  const deployment = await e2e.apps.readNamespacedDeployment({ name: 'pgfsm', namespace: PGFSM_NAMESPACE });
  const env = deployment.spec?.template.spec?.containers.find((c) => c.name === 'manager')?.env ?? [];
  const setting = env.find((v) => /RESYNC/.test(v.name));
  if (!setting) return DEFAULT_RESYNC_MS;
  const match = /^(\d+)(ms|s|m|h)$/.exec(setting.value ?? '');
  if (!match) throw new Error(`cannot read ${setting.name}=${setting.value} as a duration`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(match[1]) * unit;
}

describe('a second team on the same cluster', () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    history = recordHistory(e2e, collectionPaths(NS));
    await waitFor('the watches on the namespace open', async () => {
      await history.ready();
      return true;
    });
    await createClass(e2e, CLASS);
    // One instance, no pooler: every check here is on the primary, through the `-rw` Service.
    await createCluster(e2e, NS, CLUSTER, {
      class: CLASS,
      instances: 1,
      connectionPoolerEnabled: false,
      clusterDeletionPolicy: 'Delete',
    });
  });

  afterAll(async () => {
    history?.stop();
    for (const client of clients) await client.end().catch(() => undefined);
    const line = `second team: ${summary.database}; ${summary.secret}; ${summary.planted}`;
    console.log(line);
    recordLine(line);
    await e2e?.close();
  });

  it('database name: a second PostgresDatabase of the same database is refused, and deleting it drops nothing', async () => {
    await untilReadyRecorded(e2e, NS, CLUSTER);
    const created = Date.now();
    await createDatabase(e2e, NS, 'first', {
      cluster: CLUSTER,
      name: 'shop',
      owner: 'shop_owner',
      deletionPolicy: 'Retain',
    });
    await untilDatabaseState(e2e, NS, 'first', 'Ready');
    console.log(`first Ready ${((Date.now() - created) / 1000).toFixed(1)} s after it was created`);
    expect(await claimsOf('first')).toMatchObject({
      database: 'shop',
      roles: ['shop_owner'],
      secrets: ['first-shop-owner'],
    });
    const owner = await byUri('first-shop-owner');
    const version = await serverVersion(owner);
    expect(version).toMatch(/^18\.\d+$/);
    recordResult({ cluster: `${NS}/${CLUSTER}`, ready: true, serverVersion: version });
    await query(owner, 'CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL)');
    await query(owner, "INSERT INTO orders VALUES (1, 'apples'), (2, 'pears'), (3, 'plums')");
    await owner.end();
    const firstPassword = await secretValue(e2e, NS, 'first-shop-owner', 'password');

    await createDatabase(e2e, NS, 'second', {
      cluster: CLUSTER,
      name: 'shop',
      owner: 'rival_owner',
      deletionPolicy: 'Delete',
    });
    const held = await refused('second', 'Failed.Claims', 'ClaimsHeld');
    expect(held).toMatchObject({ status: 'False', reason: 'DatabaseClaimed' });
    expect(held?.message).toMatch(/\bfirst\b/);
    expect(condition((await getDatabase(e2e, NS, 'second'))?.status, 'Ready')?.status).toBe('False');

    const roles = await cnpgRolesAfterAClusterPass();
    expect(roles.map((r) => r.name)).not.toContain('rival_owner');
    expect(everPushed().filter((r) => r.name === 'rival_owner')).toEqual([]);
    expect(await cnpgDatabaseExists('second')).toBe(false);
    expect(history.versions('cnpgDatabases', 'second')).toEqual([]);
    expect(await secretOf('second-rival-owner')).toBeUndefined();
    const secondSecrets = history
      .versions('secrets')
      .filter((v) => v.object.metadata?.labels?.[DATABASE_LABEL] === 'second');
    expect(secondSecrets.map((v) => v.object.metadata?.name)).toEqual([]);

    // The natural thing to do with a mistake: delete it, under its Delete policy.
    await deleteDatabase('second');
    // A new connection with first's uri as it is: its password still works, and its rows are there.
    const again = await byUri('first-shop-owner');
    const rows = await query<{ id: number; item: string }>(again, 'SELECT id, item FROM orders ORDER BY id');
    expect(rows).toEqual([
      { id: 1, item: 'apples' },
      { id: 2, item: 'pears' },
      { id: 3, item: 'plums' },
    ]);
    const first = await getDatabase(e2e, NS, 'first');
    expect(first?.status?.state).toBe('Ready');
    expect(condition(first?.status, 'Ready')).toMatchObject({ status: 'True' });
    // Ready from the moment it first was, in every version the watch delivered.
    const states = history
      .versions('postgresDatabases', 'first')
      .map((v) => (v.object.status as { state?: string })?.state);
    expect(states.slice(states.indexOf('Ready'))).toEqual(states.slice(states.indexOf('Ready')).map(() => 'Ready'));
    expect(await secretValue(e2e, NS, 'first-shop-owner', 'password')).toBe(firstPassword);
    expect(await login('shop_owner', firstPassword, 'shop')).toBe('ok');
    expect(await roleExists('rival_owner')).toBe(false);
    expect(await login('rival_owner', firstPassword, 'shop')).toBe('28P01');
    const shop = await query<{ owner: string }>(
      await administrator(),
      "SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = 'shop'",
    );
    expect(shop).toEqual([{ owner: 'shop_owner' }]);
    const said = await databaseEvents('second');
    console.log(`events about second: ${JSON.stringify(said)}`);
    expect(said.filter((e) => ['SecretsCreated', 'CNPGDatabaseCreated', 'ChildDeleted'].includes(e.reason))).toEqual(
      [],
    );
    summary.database = `database name refused, rows ${rows.length}/3 intact`;
  });

  it("the refused database's Events never say it dropped what it did not hold", async () => {
    // Issue 37, point 3: the deletion that dropped the first team's database said `CleanupComplete: database shop
    // dropped`. Now that nothing is dropped, nothing may say so either.
    const said = await databaseEvents('second');
    expect(said.filter((e) => /\bdropped\b/.test(e.note))).toEqual([]);
  });

  it("Secret name: a user whose Secret name is another database's is refused; the Secret and its password stay theirs", async () => {
    await createDatabase(e2e, NS, 'shopx', {
      cluster: CLUSTER,
      name: 'wares',
      owner: 'wares_owner',
      users: [{ name: 'app_ro', access: 'readOnly' }],
    });
    await untilDatabaseState(e2e, NS, 'shopx', 'Ready');
    const shopx = await getDatabase(e2e, NS, 'shopx');
    const shopxClaims = await claimsOf('shopx');
    expect(shopxClaims?.database).toBe('wares');
    expect([...(shopxClaims?.roles ?? [])].sort()).toEqual(['app_ro', 'wares_owner']);
    expect([...(shopxClaims?.secrets ?? [])].sort()).toEqual(['shopx-app-ro', 'shopx-wares-owner']);
    const before = await secretOf('shopx-app-ro');
    expect(controllerOf(before)).toMatchObject({ kind: 'PostgresDatabase', name: 'shopx', uid: shopx?.metadata.uid });
    const appRoPassword = await secretValue(e2e, NS, 'shopx-app-ro', 'password');
    const since = Date.now();

    // `shopx-app` + `ro` is `shopx-app-ro` too.
    await createDatabase(e2e, NS, 'shopx-app', {
      cluster: CLUSTER,
      name: 'stock',
      owner: 'stock_owner',
      users: [{ name: 'ro', access: 'readOnly' }],
    });
    const held = await refused('shopx-app', 'Failed.Claims', 'ClaimsHeld');
    expect(held).toMatchObject({ status: 'False', reason: 'SecretClaimed' });
    expect(held?.message).toMatch(/\bshopx\b/);

    const roles = await cnpgRolesAfterAClusterPass();
    const names = roles.map((r) => r.name);
    expect(names).not.toContain('ro');
    expect(names).not.toContain('stock_owner');
    expect(everPushed().filter((r) => ['ro', 'stock_owner'].includes(r.name))).toEqual([]);
    expect(everPushed().filter((r) => r.passwordSecret?.name === 'shopx-app-ro' && r.name !== 'app_ro')).toEqual([]);
    expect(await cnpgDatabaseExists('shopx-app')).toBe(false);
    expect(history.versions('cnpgDatabases', 'shopx-app')).toEqual([]);
    expect(await secretOf('shopx-app-stock-owner')).toBeUndefined();

    const after = await secretOf('shopx-app-ro');
    expect(controllerOf(after)).toMatchObject({ kind: 'PostgresDatabase', name: 'shopx', uid: shopx?.metadata.uid });
    expect(after?.data).toEqual(before?.data);
    expect(after?.metadata?.labels?.[DATABASE_LABEL]).toBe('shopx');
    // Not only now: in every version since the second database came.
    for (const version of history.versions('secrets', 'shopx-app-ro').filter((v) => v.at >= since)) {
      expect(version.object.data).toEqual(before?.data);
      expect(controllerOf(version.object)?.uid).toBe(shopx?.metadata.uid);
    }
    expect(await roleExists('ro')).toBe(false);
    expect(await login('ro', appRoPassword, 'wares')).toBe('28P01');
    expect(await login('app_ro', appRoPassword, 'wares')).toBe('ok');
    expect((await getDatabase(e2e, NS, 'shopx'))?.status?.state).toBe('Ready');
    summary.secret = 'Secret name refused';
  });

  it('a planted Secret is never a password; handed over with pgfsm.io/adopt, the database goes on at once', async () => {
    const resyncMs = await deployedResyncMs();
    const planted = `planted-${randomBytes(12).toString('hex')}`;
    const secretName = 'kiosk-kiosk-owner';
    await e2e.core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: secretName, labels: { [MANAGED_BY_LABEL]: 'pgfsm', [DATABASE_LABEL]: 'kiosk' } },
        type: 'kubernetes.io/basic-auth',
        stringData: { username: 'kiosk_owner', password: planted },
      },
    });
    await createDatabase(e2e, NS, 'kiosk', { cluster: CLUSTER, name: 'kiosk', owner: 'kiosk_owner' });
    const secrets = await refused('kiosk', 'Failed.Secrets', 'SecretsReady');
    expect(secrets).toMatchObject({ status: 'False', reason: 'SecretOwnedByOther' });
    expect(secrets?.message).toContain(`${ADOPT_ANNOTATION}=true`);

    const roles = await cnpgRolesAfterAClusterPass();
    expect(roles.filter((r) => r.name === 'kiosk_owner' || r.passwordSecret?.name === secretName)).toEqual([]);
    expect(everPushed().filter((r) => r.name === 'kiosk_owner' || r.passwordSecret?.name === secretName)).toEqual([]);
    expect(await roleExists('kiosk_owner')).toBe(false);
    expect(await login('kiosk_owner', planted, 'postgres')).toBe('28P01');
    expect(await cnpgDatabaseExists('kiosk')).toBe(false);
    expect(await secretValue(e2e, NS, secretName, 'password')).toBe(planted);
    expect(controllerOf(await secretOf(secretName))).toBeUndefined();

    const kiosk = await getDatabase(e2e, NS, 'kiosk');
    const annotated = Date.now();
    await e2e.node.kubectl(['annotate', '-n', NS, 'secret', secretName, `${ADOPT_ANNOTATION}=true`]);
    await waitFor('the Secret controlled by kiosk', async () =>
      controllerOf(await secretOf(secretName))?.uid === kiosk?.metadata.uid ? true : undefined,
    );
    const adoptedS = (Date.now() - annotated) / 1000;
    await untilDatabaseState(e2e, NS, 'kiosk', 'Ready', resyncMs);
    const readyS = (Date.now() - annotated) / 1000;
    console.log(
      `adopted ${adoptedS.toFixed(1)} s and Ready ${readyS.toFixed(1)} s after the annotation (resync ${resyncMs / 1000} s)`,
    );
    // Well before a resync: the Secret's watch event woke the database.
    expect(adoptedS * 1000).toBeLessThan(resyncMs / 20);
    expect(readyS * 1000).toBeLessThan(resyncMs / 10);
    expect(controllerOf(await secretOf(secretName))).toMatchObject({ kind: 'PostgresDatabase', name: 'kiosk' });
    expect(managedRoles(await cnpgCluster())).toContainEqual(
      expect.objectContaining({ name: 'kiosk_owner', passwordSecret: { name: secretName } }),
    );
    // The owner connects with what the Secret now says.
    const owner = await byUri(secretName);
    expect((await query<{ me: string }>(owner, 'SELECT current_user AS me'))[0]?.me).toBe('kiosk_owner');
    const kept = (await secretValue(e2e, NS, secretName, 'password')) === planted;
    console.log(`after adoption the Secret's password is ${kept ? 'the planted one (kept)' : 'a new one'}`);
    summary.planted = `planted Secret unused, adopted in ${adoptedS.toFixed(1)}s, Ready in ${readyS.toFixed(1)}s (password ${kept ? 'kept' : 'replaced'})`;
    expect(history.gaps).toEqual([]);
  });
});
