/**
 * Evidence for issue 38's decision (should a PostgresDatabase's roles be CloudNativePG `DatabaseRole` objects
 * instead of entries in the Cluster's shared `spec.managed.roles`?), observed on the real CloudNativePG and
 * PostgreSQL of the node, not read from upstream's documentation. pgfsm takes no part: a plain CNPG Cluster with
 * one `managed.roles` entry, `app_owner`, and DatabaseRole objects beside it.
 *
 *   (a) a DatabaseRole `team_a` (login, passwordSecret): time to `status.applied`, the role in pg_roles, a login;
 *   (b) a second DatabaseRole object naming `team_a`: what its status, conditions and events say, and whether
 *       the first one's role is touched;
 *   (c) a DatabaseRole naming `app_owner`, which managed.roles already holds;
 *   (d) deleting the first (default reclaim, retain): is the role kept, and does the duplicate take over; a role
 *       under `databaseRoleReclaimPolicy: delete` that owns a database, deleted;
 *   (e) `status.observedGeneration`, and how soon it follows a spec change.
 *
 * Each step asserts what was observed on CloudNativePG 1.30.1 (so a CNPG that behaves otherwise fails here) and
 * writes the raw observations (status JSON, timings, versions) to `<node dir>/database-role-evidence.json`, from
 * which docs/evidence/database-role-cnpg-1.30.1.md was written. Reproduce: `npx vitest run --project e2e-compat
 * test/e2e/compat/database-role-evidence.test.ts` as root.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { nodeBaseDir } from '../../../src/tools/node/layout.ts';
import {
  attach,
  connect,
  createNamespace,
  type E2e,
  query,
  secretValue,
  serverVersion,
  waitFor,
} from '../support/node.ts';
import { recordLine, recordResult } from '../support/results.ts';

const NS = 'role-evidence';
const CLUSTER = 'roles';
const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const HOST = `${CLUSTER}-rw.${NS}.svc.cluster.local`;
const TEAM_A_PASSWORD = 'team-a-password-e2e';
const APP_OWNER_PASSWORD = 'app-owner-password-e2e';

interface RoleObject {
  metadata: { name: string; generation?: number; finalizers?: string[]; deletionTimestamp?: string };
  spec: Record<string, unknown>;
  status?: {
    applied?: boolean;
    message?: string;
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    [key: string]: unknown;
  };
}

interface PgRole {
  rolname: string;
  rolcanlogin: boolean;
  rolcreatedb: boolean;
  rolconnlimit: number;
  has_password: boolean;
}

let e2e: E2e;
let admin: pg.Client;
const clients: pg.Client[] = [];
const observations: Record<string, unknown> = {};
const started = Date.now();

const seconds = (since: number) => Number(((Date.now() - since) / 1000).toFixed(2));

function note(key: string, value: unknown) {
  observations[key] = value;
  mkdirSync(nodeBaseDir(), { recursive: true });
  writeFileSync(join(nodeBaseDir(), 'database-role-evidence.json'), `${JSON.stringify(observations, null, 2)}\n`);
}

async function getRoleObject(name: string): Promise<RoleObject | undefined> {
  try {
    return (await e2e.custom.getNamespacedCustomObject({
      ...CNPG,
      namespace: NS,
      plural: 'databaseroles',
      name,
    })) as RoleObject;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

async function createRoleObject(name: string, spec: Record<string, unknown>) {
  await e2e.custom.createNamespacedCustomObject({
    ...CNPG,
    namespace: NS,
    plural: 'databaseroles',
    body: { apiVersion: 'postgresql.cnpg.io/v1', kind: 'DatabaseRole', metadata: { name, namespace: NS }, spec },
  });
}

/** What an object's status says, and what kubectl would show of it (name, generation, finalizers). */
function excerpt(object: RoleObject | undefined) {
  if (!object) return 'gone (404)';
  return {
    generation: object.metadata.generation,
    finalizers: object.metadata.finalizers ?? [],
    deletionTimestamp: object.metadata.deletionTimestamp ?? null,
    status: object.status ?? null,
  };
}

async function pgRole(name: string): Promise<PgRole | undefined> {
  const [row] = await query<PgRole>(
    admin,
    `SELECT r.rolname, r.rolcanlogin, r.rolcreatedb, r.rolconnlimit, a.rolpassword IS NOT NULL AS has_password
       FROM pg_roles r JOIN pg_authid a ON a.oid = r.oid WHERE r.rolname = $1`,
    [name],
  );
  return row;
}

/** Events (core/v1 and events.k8s.io, which are the same objects) about one DatabaseRole. */
async function eventsAbout(name: string) {
  const list = await e2e.core.listNamespacedEvent({ namespace: NS });
  return list.items
    .filter((e) => e.involvedObject.kind === 'DatabaseRole' && e.involvedObject.name === name)
    .map((e) => ({ type: e.type, reason: e.reason, message: e.message, count: e.count, from: e.source?.component }));
}

/** A login as `user` with `password` through the `-rw` Service: the answer, or the error's SQLSTATE. */
async function login(user: string, password: string): Promise<string> {
  try {
    const client = await connect(e2e, { host: HOST, port: 5432, user, password }, 20_000);
    clients.push(client);
    const [row] = await query<{ me: string }>(client, 'SELECT current_user AS me');
    return `ok: ${row?.me}`;
  } catch (error) {
    return `refused: ${String((error as Error).message)}`;
  }
}

/** Waits until a DatabaseRole's status says something (applied true or false, or a message). */
const untilStatusSays = (name: string, timeoutMs = 120_000) =>
  waitFor(
    `DatabaseRole ${NS}/${name} to have a status`,
    async () => {
      const object = await getRoleObject(name);
      const status = object?.status;
      return status && (status.applied !== undefined || status.message) ? object : undefined;
    },
    timeoutMs,
  );

describe('CloudNativePG DatabaseRole beside managed.roles (issue 38 evidence)', () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    const versions = inject('realNode').versions;
    note('versions', {
      kubelet: versions.kubelet,
      cnpg: versions.cnpg,
      postgresImage: inject('realNode').postgresImage,
    });
    for (const [name, username, password] of [
      ['app-owner-password', 'app_owner', APP_OWNER_PASSWORD],
      ['team-a-password', 'team_a', TEAM_A_PASSWORD],
    ] as const) {
      await e2e.core.createNamespacedSecret({
        namespace: NS,
        body: {
          metadata: { name, labels: { 'cnpg.io/reload': 'true' } },
          type: 'kubernetes.io/basic-auth',
          stringData: { username, password },
        },
      });
    }
    await e2e.custom.createNamespacedCustomObject({
      ...CNPG,
      namespace: NS,
      plural: 'clusters',
      body: {
        apiVersion: 'postgresql.cnpg.io/v1',
        kind: 'Cluster',
        metadata: { name: CLUSTER, namespace: NS },
        spec: {
          instances: 1,
          imageName: inject('realNode').postgresImage,
          storage: { size: '1Gi' },
          enableSuperuserAccess: true,
          smartShutdownTimeout: 5,
          managed: {
            roles: [
              { name: 'app_owner', ensure: 'present', login: true, passwordSecret: { name: 'app-owner-password' } },
            ],
          },
        },
      },
    });
    const healthyAt = Date.now();
    await waitFor(
      `CNPG Cluster ${NS}/${CLUSTER} healthy`,
      async () => {
        const cluster = (await e2e.custom.getNamespacedCustomObject({
          ...CNPG,
          namespace: NS,
          plural: 'clusters',
          name: CLUSTER,
        })) as { status?: { phase?: string; readyInstances?: number } };
        return cluster.status?.phase === 'Cluster in healthy state' && cluster.status.readyInstances === 1
          ? true
          : undefined;
      },
      480_000,
    );
    admin = await connect(e2e, {
      host: HOST,
      port: 5432,
      user: await secretValue(e2e, NS, `${CLUSTER}-superuser`, 'username'),
      password: await secretValue(e2e, NS, `${CLUSTER}-superuser`, 'password'),
    });
    const version = await serverVersion(admin);
    recordResult({ cluster: `${NS}/${CLUSTER} (CNPG only)`, ready: true, serverVersion: version });
    await waitFor('app_owner made by managed.roles', async () => ((await pgRole('app_owner')) ? true : undefined));
    note('cluster', {
      healthySeconds: seconds(healthyAt),
      serverVersion: version,
      appOwner: await pgRole('app_owner'),
    });
  });

  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    note('totalSeconds', seconds(started));
    // The evidence is taken: the Cluster's Pods need not weigh on the files that run after this one.
    await e2e?.custom
      .deleteNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'clusters', name: CLUSTER })
      .catch(() => undefined);
    await e2e?.close();
  });

  it('(a) applies a DatabaseRole with login and a password: the role exists and its password works', async () => {
    const created = Date.now();
    await createRoleObject('team-a', {
      cluster: { name: CLUSTER },
      name: 'team_a',
      ensure: 'present',
      login: true,
      passwordSecret: { name: 'team-a-password' },
    });
    const applied = await waitFor('team-a applied', async () => {
      const object = await getRoleObject('team-a');
      return object?.status?.applied === true ? object : undefined;
    });
    const appliedSeconds = seconds(created);
    const role = await pgRole('team_a');
    const loggedIn = await login('team_a', TEAM_A_PASSWORD);
    note('a', {
      appliedSeconds,
      object: excerpt(applied),
      pgRole: role,
      login: loggedIn,
      events: await eventsAbout('team-a'),
    });
    expect(role).toMatchObject({ rolname: 'team_a', rolcanlogin: true, has_password: true });
    expect(loggedIn).toBe('ok: team_a');
    expect(applied.status?.observedGeneration).toBe(applied.metadata.generation);
  });

  it('(b) a second DatabaseRole naming team_a: what it is told, and whether the first role is touched', async () => {
    const before = await pgRole('team_a');
    const created = Date.now();
    // Other attributes than the first, so that a takeover would show in pg_roles.
    await createRoleObject('team-a-again', {
      cluster: { name: CLUSTER },
      name: 'team_a',
      ensure: 'present',
      login: true,
      createdb: true,
      connectionLimit: 3,
    });
    const duplicate = await untilStatusSays('team-a-again');
    const saidSeconds = seconds(created);
    // Give a takeover time to happen before looking at the first role.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const later = await getRoleObject('team-a-again');
    const first = await getRoleObject('team-a');
    const after = await pgRole('team_a');
    note('b', {
      saidSeconds,
      duplicate: excerpt(duplicate),
      duplicate15sLater: excerpt(later),
      duplicateEvents: await eventsAbout('team-a-again'),
      first: excerpt(first),
      pgRoleBefore: before,
      pgRoleAfter: after,
      firstStillLogsIn: await login('team_a', TEAM_A_PASSWORD),
    });
    // Observed on 1.30.1: refused at once, in the status only (no Event), never observed (no observedGeneration).
    expect(later?.status?.applied).toBe(false);
    expect(later?.status?.message).toBe('"team_a" is already managed by object "team-a"');
    expect(later?.status?.observedGeneration).toBeUndefined();
    expect(await eventsAbout('team-a-again')).toEqual([]);
    expect(first?.status?.applied).toBe(true);
    expect(after).toEqual(before);
  });

  it('(c) a DatabaseRole naming app_owner, which managed.roles holds', async () => {
    const before = await pgRole('app_owner');
    const created = Date.now();
    await createRoleObject('app-owner', {
      cluster: { name: CLUSTER },
      name: 'app_owner',
      ensure: 'present',
      login: true,
      createdb: true,
    });
    const said = await untilStatusSays('app-owner');
    const saidSeconds = seconds(created);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const later = await getRoleObject('app-owner');
    const after = await pgRole('app_owner');
    note('c', {
      saidSeconds,
      object: excerpt(said),
      object15sLater: excerpt(later),
      events: await eventsAbout('app-owner'),
      pgRoleBefore: before,
      pgRoleAfter: after,
      managedRoleStillLogsIn: await login('app_owner', APP_OWNER_PASSWORD),
    });
    // Observed on 1.30.1: managed.roles wins; the object is refused in its status, gets no finalizer, no Event.
    expect(later?.status?.applied).toBe(false);
    expect(later?.status?.message).toBe('database role is already managed by the CNPG cluster');
    expect(later?.metadata.finalizers ?? []).toEqual([]);
    expect(await eventsAbout('app-owner')).toEqual([]);
    expect(after).toEqual(before);
  });

  it('(e) observedGeneration follows a spec change, and how soon', async () => {
    const object = await getRoleObject('team-a');
    const generation = object?.metadata.generation ?? 0;
    const patched = Date.now();
    await e2e.custom.patchNamespacedCustomObject(
      { ...CNPG, namespace: NS, plural: 'databaseroles', name: 'team-a', body: { spec: { connectionLimit: 10 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const observed = await waitFor('team-a observed at its new generation', async () => {
      const now = await getRoleObject('team-a');
      return (now?.metadata.generation ?? 0) > generation &&
        now?.status?.observedGeneration === now?.metadata.generation
        ? now
        : undefined;
    });
    const observedSeconds = seconds(patched);
    const role = await pgRole('team_a');
    note('e', { generationBefore: generation, observedSeconds, object: excerpt(observed), pgRole: role });
    expect(observed.status?.applied).toBe(true);
    expect(role?.rolconnlimit).toBe(10);
  });

  it('(d) deleting under retain keeps the role; under delete, a role that owns a database', async () => {
    const deleted = Date.now();
    await e2e.custom.deleteNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'databaseroles', name: 'team-a' });
    await waitFor('team-a gone', async () => ((await getRoleObject('team-a')) === undefined ? true : undefined));
    const goneSeconds = seconds(deleted);
    const kept = await pgRole('team_a');
    // The duplicate was refused while the first held the name; CNPG retries it (every 30 s): does it take over?
    const takeover = await waitFor(
      'team-a-again applied once the first is gone',
      async () => {
        const object = await getRoleObject('team-a-again');
        return object?.status?.applied === true ? object : undefined;
      },
      75_000,
    ).catch(() => undefined);
    const duplicate = takeover ?? (await getRoleObject('team-a-again'));
    note('d.retain', {
      goneSeconds,
      pgRoleRightAfter: kept,
      duplicateTookOverSeconds: takeover ? seconds(deleted) : null,
      duplicateAfterTheFirstWent: excerpt(duplicate),
      duplicateEvents: await eventsAbout('team-a-again'),
      pgRoleAfterTheDuplicate: await pgRole('team_a'),
    });
    expect(kept?.rolname).toBe('team_a');
    // Observed on 1.30.1: the refused duplicate is retried (every 30 s) and, once the holder is gone, takes the
    // role over silently, applying its own attributes to it.
    expect(takeover?.status?.applied).toBe(true);
    expect(await pgRole('team_a')).toMatchObject({ rolcreatedb: true, rolconnlimit: 3 });

    // Under delete: the role owns a database, so PostgreSQL refuses DROP ROLE.
    const created = Date.now();
    await createRoleObject('db-owner', {
      cluster: { name: CLUSTER },
      name: 'db_owner',
      ensure: 'present',
      login: false,
      databaseRoleReclaimPolicy: 'delete',
    });
    await waitFor('db-owner applied', async () =>
      (await getRoleObject('db-owner'))?.status?.applied ? true : undefined,
    );
    const appliedSeconds = seconds(created);
    await query(admin, 'CREATE DATABASE owned_by_db_owner OWNER db_owner');
    const deleting = Date.now();
    await e2e.custom.deleteNamespacedCustomObject({
      ...CNPG,
      namespace: NS,
      plural: 'databaseroles',
      name: 'db-owner',
    });
    const stuck = await waitFor('db-owner to say something after its deletion', async () => {
      const object = await getRoleObject('db-owner');
      if (!object) return 'gone';
      return object.status?.applied === false || object.status?.message ? object : undefined;
    });
    const saidSeconds = seconds(deleting);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const later = await getRoleObject('db-owner');
    const role = await pgRole('db_owner');
    const database = await query(admin, "SELECT datname FROM pg_database WHERE datname = 'owned_by_db_owner'");
    note('d.delete', {
      appliedSeconds,
      saidSeconds,
      object: excerpt(stuck === 'gone' ? undefined : stuck),
      object15sLater: excerpt(later),
      events: await eventsAbout('db-owner'),
      pgRole: role ?? null,
      databaseStillThere: database.length === 1,
    });
    expect(database.length).toBe(1);
    expect(role?.rolname).toBe('db_owner');
    // PostgreSQL refused the DROP: the object stays, held by CNPG's finalizer, saying so.
    expect(later?.metadata.deletionTimestamp).toBeDefined();
    expect(later?.status?.applied).toBe(false);
    expect(later?.status?.message).toContain('SQLSTATE 2BP01');

    // Released once the database has another owner: the role is dropped and the object goes.
    await query(admin, 'ALTER DATABASE owned_by_db_owner OWNER TO app_owner');
    const released = Date.now();
    await waitFor('db-owner gone once it owns nothing', async () =>
      (await getRoleObject('db-owner')) === undefined ? true : undefined,
    );
    const droppedSeconds = seconds(released);
    const dropped = await pgRole('db_owner');
    note('d.delete.released', { droppedSeconds, pgRole: dropped ?? null });
    expect(dropped).toBeUndefined();
    recordLine(
      `DatabaseRole evidence (CloudNativePG ${inject('realNode').versions.cnpg}): applied in ` +
        `${(observations.a as { appliedSeconds: number }).appliedSeconds} s; duplicate refused, then took over ` +
        `${(observations['d.retain'] as { duplicateTookOverSeconds: number }).duplicateTookOverSeconds} s after ` +
        'the holder went; managed.roles wins; retain keeps the role; a delete blocked by an owned database waits ' +
        `in Terminating; details in ${join(nodeBaseDir(), 'database-role-evidence.json')}`,
    );
  });
});
