/**
 * The PostgresDatabase's Kubernetes adapters (src/operator/kubernetes: postgres-database.ts,
 * database-children.ts, privileges.ts, database-ports.ts) against a real kube-apiserver with the pgfsm CRDs
 * and CloudNativePG's real CRDs and webhooks: the PostgresDatabase's conditional writes, the CNPG Database's
 * two field managers, the connection Secrets (a password generated once and kept, never seen outside the
 * adapter; create-only when absent), and the superuser credentials the grants read.
 */
import { type AddressInfo, createServer } from 'node:net';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  GROUP,
  type PostgresDatabase,
  type PostgresDatabaseStatus,
  VERSION,
} from '../../src/operator/api/schema.ts';
import type { DatabasePorts } from '../../src/operator/core/database/ports.ts';
import { type ErrorClass, PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import type { ConnectionSecretTemplate } from '../../src/operator/domain/database/effects.ts';
import type { CnpgDatabase } from '../../src/operator/domain/database/observation.ts';
import {
  databaseLabels,
  ownerReferenceToDatabase,
  PRIVILEGES_ANNOTATION,
} from '../../src/operator/domain/database/vocabulary.ts';
import { CNPG_API_VERSION, type ObjectRef } from '../../src/operator/domain/objects.ts';
import { ADOPT_ANNOTATION, FINALIZER } from '../../src/operator/domain/vocabulary.ts';
import { secretViewOfAnswer } from '../../src/operator/driver/database-cache-reads.ts';
import { KubernetesConnectionSecretPort } from '../../src/operator/kubernetes/database-children.ts';
import { kubernetesDatabasePorts, kubernetesPorts, readWriteService } from '../../src/operator/kubernetes/index.ts';
import { KubernetesPrivilegesPort } from '../../src/operator/kubernetes/privileges.ts';
import { RestClient, type RestRequest } from '../../src/operator/kubernetes/rest.ts';
import { PrivilegeError, type PrivilegePlan } from '../../src/operator/postgres/privileges.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { installCrds, PGFSM_CRDS } from '../../src/tools/install/manifests.ts';
import { ManualClock } from '../../src/tools/memory/ports.ts';

let controlPlane: ControlPlane | undefined;
let clusterPorts: Ports;
let ports: DatabasePorts;
const namespace = `database-adapters-${Date.now().toString(36)}`;
const emptyNamespace = `${namespace}-empty`;

function cp(): ControlPlane {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane;
}
const core = () => cp().kubeConfig.makeApiClient(CoreV1Api);
const custom = () => cp().kubeConfig.makeApiClient(CustomObjectsApi);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Sets one value of a Secret, as another writer would. */
const setSecretValue = (name: string, key: string, value: string) =>
  core().patchNamespacedSecret(
    { namespace, name, body: { data: { [key]: Buffer.from(value).toString('base64') } } },
    mergePatch,
  );

beforeAll(async () => {
  controlPlane = await startControlPlane();
  // CNPG's real CRDs and webhooks come with the control plane.
  await installCrds(controlPlane.kubeConfig, PGFSM_CRDS);
  for (const name of [namespace, emptyNamespace]) await core().createNamespace({ body: { metadata: { name } } });
  clusterPorts = kubernetesPorts(controlPlane.kubeConfig, {
    clock: new ManualClock(Date.parse('2026-12-01T12:00:00Z')),
  });
  ports = kubernetesDatabasePorts(controlPlane.kubeConfig, clusterPorts);
});

afterAll(async () => {
  await controlPlane?.stop();
});

const databases = { group: GROUP, version: VERSION, plural: 'postgresdatabases' };
const cnpgDatabases = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'databases' };

async function createPostgresDatabase(name: string, spec: Partial<PostgresDatabase['spec']> = {}) {
  await custom().createNamespacedCustomObject({
    ...databases,
    namespace,
    body: {
      apiVersion: API_VERSION,
      kind: 'PostgresDatabase',
      metadata: { name },
      spec: { cluster: 'pg', name: name.replaceAll('-', '_'), owner: `${name.replaceAll('-', '_')}_owner`, ...spec },
    },
  });
  const database = await ports.databases.get({ namespace, name });
  if (!database) throw new Error(`PostgresDatabase ${name} was not created`);
  return database;
}

/** The class and message of the error a call fails with. */
async function failure(call: Promise<unknown>): Promise<{ errorClass: ErrorClass; message: string; error: PortError }> {
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(PortError);
    const e = error as PortError;
    return { errorClass: e.errorClass, message: e.message, error: e };
  }
  throw new Error('the call succeeded');
}

const ref = (kind: string, name: string, apiVersion = CNPG_API_VERSION): ObjectRef => ({
  apiVersion,
  kind,
  namespace,
  name,
});
const secretRef = (name: string) => ref('Secret', name, 'v1');

const condition = (type: string, status: 'True' | 'False', reason: string) => ({
  type,
  status,
  reason,
  message: `${type} is ${status}`,
  lastTransitionTime: '2026-12-01T12:00:00Z',
  observedGeneration: 1,
});

const decode = (value: string | undefined) => Buffer.from(value ?? '', 'base64').toString();
const readSecret = (name: string) => core().readNamespacedSecret({ namespace, name });
const valuesOf = (secret: V1Secret) =>
  Object.fromEntries(Object.entries(secret.data ?? {}).map(([key, value]) => [key, decode(value)]));
const managersOf = (object: unknown) =>
  ((object as { metadata: { managedFields?: { manager: string; operation: string }[] } }).metadata.managedFields ?? [])
    .map((f) => `${f.manager}/${f.operation}`)
    .sort();

describe('PostgresDatabasePort', () => {
  it('get returns the database without managedFields, and undefined when it does not exist', async () => {
    const database = await createPostgresDatabase('get-me');
    expect(database).toMatchObject({
      apiVersion: API_VERSION,
      kind: 'PostgresDatabase',
      metadata: { name: 'get-me', namespace },
      // The schema's default.
      spec: { cluster: 'pg', name: 'get_me', owner: 'get_me_owner', deletionPolicy: 'Retain' },
    });
    expect(database.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(database.metadata).not.toHaveProperty('managedFields');
    expect(await ports.databases.get({ namespace, name: 'no-such-database' })).toBeUndefined();
  });

  it('list returns every PostgresDatabase of the namespace, typed, and none for an empty namespace', async () => {
    await createPostgresDatabase('listed-a');
    await createPostgresDatabase('listed-b');
    const listed = await ports.databases.list(namespace);
    const names = listed.map((d) => d.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['listed-a', 'listed-b']));
    for (const database of listed) {
      expect(database.apiVersion).toBe(API_VERSION);
      expect(database.kind).toBe('PostgresDatabase');
      expect(database.metadata.namespace).toBe(namespace);
      expect(database.metadata).not.toHaveProperty('managedFields');
    }
    expect(listed.find((d) => d.metadata.name === 'listed-a')).toEqual(
      await ports.databases.get({ namespace, name: 'listed-a' }),
    );
    expect(await ports.databases.list(emptyNamespace)).toEqual([]);
    // The cluster ports read them too (a cluster pushes the roles of its namespace's databases).
    expect((await clusterPorts.databases.list(namespace)).map((d) => d.metadata.name).sort()).toEqual(names.sort());
  });

  it('addFinalizer/removeFinalizer write with the resourceVersion the core saw: a stale one is a conflict', async () => {
    const fresh = await createPostgresDatabase('finalizers');
    const version = await ports.databases.addFinalizer(fresh, FINALIZER);
    const withFinalizer = await ports.databases.get({ namespace, name: 'finalizers' });
    expect(withFinalizer?.metadata.finalizers).toEqual([FINALIZER]);
    expect(version).toBe(withFinalizer?.metadata.resourceVersion);

    expect((await failure(ports.databases.addFinalizer(fresh, 'example.com/other'))).errorClass).toBe('conflict');
    const stale = {
      ...withFinalizer,
      metadata: { ...withFinalizer?.metadata, resourceVersion: fresh.metadata.resourceVersion },
    } as PostgresDatabase;
    expect((await failure(ports.databases.removeFinalizer(stale, FINALIZER))).errorClass).toBe('conflict');
    expect((await ports.databases.get({ namespace, name: 'finalizers' }))?.metadata.finalizers).toEqual([FINALIZER]);

    // Adding one that is already there writes nothing.
    expect(await ports.databases.addFinalizer(withFinalizer as PostgresDatabase, FINALIZER)).toBeUndefined();
    await ports.databases.removeFinalizer(withFinalizer as PostgresDatabase, FINALIZER);
    expect((await ports.databases.get({ namespace, name: 'finalizers' }))?.metadata.finalizers ?? []).toEqual([]);

    // A database that is gone needs no finalizer change.
    await custom().deleteNamespacedCustomObject({ ...databases, namespace, name: 'finalizers' });
    await ports.databases.removeFinalizer(withFinalizer as PostgresDatabase, FINALIZER);
  });

  it('writeStatus persists the status, drops keys no longer set, and is conditional on the resourceVersion', async () => {
    const database = await createPostgresDatabase('status');
    const first: PostgresDatabaseStatus = {
      observedGeneration: 1,
      phase: 'Provisioning',
      state: 'provisioning',
      conditions: [condition('Ready', 'False', 'SecretsPending')],
      endpoint: { host: 'pg-rw.ns.svc', port: '5432', pooled: false },
    };
    const written = await ports.databases.writeStatus(database, first);
    expect(written?.status).toEqual(first);
    const afterFirst = await ports.databases.get({ namespace, name: 'status' });
    expect(afterFirst?.status).toEqual(first);
    expect(afterFirst?.metadata.generation).toBe(database.metadata.generation);

    const second: PostgresDatabaseStatus = {
      observedGeneration: 1,
      phase: 'Ready',
      state: 'ready',
      conditions: [condition('Ready', 'True', 'AllComponentsReady')],
    };
    // `database` is stale now: its status write conflicts and changes nothing.
    expect((await failure(ports.databases.writeStatus(database, second))).errorClass).toBe('conflict');
    expect((await ports.databases.get({ namespace, name: 'status' }))?.status).toEqual(first);

    await ports.databases.writeStatus(afterFirst as PostgresDatabase, second);
    expect((await ports.databases.get({ namespace, name: 'status' }))?.status).toEqual(second);
  });
});

describe('CnpgDatabasePort', () => {
  const cnpgDatabase = (owner: PostgresDatabase, spec: Partial<CnpgDatabase['spec']> = {}): CnpgDatabase => ({
    apiVersion: CNPG_API_VERSION,
    kind: 'Database',
    metadata: {
      name: owner.metadata.name,
      namespace,
      labels: databaseLabels(owner),
      ownerReferences: [ownerReferenceToDatabase(owner)],
    },
    spec: {
      // A Cluster that does not exist: CNPG's webhook does not look.
      cluster: { name: 'pg' },
      name: owner.spec.name,
      owner: owner.spec.owner,
      ensure: 'present',
      databaseReclaimPolicy: 'retain',
      ...spec,
    },
  });
  const raw = async (name: string) =>
    (await custom().getNamespacedCustomObject({ ...cnpgDatabases, namespace, name })) as CnpgDatabase;

  it('applies the spec and records the privileges as two field managers that never drop each other', async () => {
    const owner = await createPostgresDatabase('shop');
    const target = ref('Database', 'shop');
    expect(await ports.cnpgDatabases.get(target)).toBeUndefined();

    await ports.cnpgDatabases.apply(cnpgDatabase(owner));
    const applied = await ports.cnpgDatabases.get(target);
    expect(applied).toMatchObject({
      apiVersion: CNPG_API_VERSION,
      kind: 'Database',
      metadata: { name: 'shop', namespace, labels: databaseLabels(owner), generation: 1 },
      spec: { cluster: { name: 'pg' }, name: 'shop', owner: 'shop_owner', ensure: 'present' },
    });
    expect(applied?.metadata.ownerReferences).toEqual([ownerReferenceToDatabase(owner)]);
    expect(applied?.metadata).not.toHaveProperty('managedFields');

    await ports.cnpgDatabases.recordPrivileges(target, 'digest-1');
    const recorded = await ports.cnpgDatabases.get(target);
    expect(recorded?.metadata.annotations).toEqual({ [PRIVILEGES_ANNOTATION]: 'digest-1' });
    expect(recorded?.spec).toEqual(applied?.spec);
    expect(managersOf(await raw('shop'))).toEqual(['pgfsm-privileges/Apply', 'pgfsm/Apply']);

    // Applying the spec again (changed, and without the annotation) keeps the annotation.
    await ports.cnpgDatabases.apply(cnpgDatabase(owner, { extensions: [{ name: 'pgcrypto', ensure: 'present' }] }));
    const reapplied = await ports.cnpgDatabases.get(target);
    expect(reapplied?.spec.extensions).toEqual([{ name: 'pgcrypto', ensure: 'present' }]);
    expect(reapplied?.metadata.annotations).toEqual({ [PRIVILEGES_ANNOTATION]: 'digest-1' });
    expect(reapplied?.metadata.generation).toBe(2);

    // Handing back the object as read (annotation included) does not take the annotation over.
    await ports.cnpgDatabases.apply(reapplied as CnpgDatabase);
    expect(managersOf(await raw('shop'))).toEqual(['pgfsm-privileges/Apply', 'pgfsm/Apply']);

    // And a new digest keeps the spec.
    await ports.cnpgDatabases.recordPrivileges(target, 'digest-2');
    const again = await ports.cnpgDatabases.get(target);
    expect(again?.metadata.annotations).toEqual({ [PRIVILEGES_ANNOTATION]: 'digest-2' });
    expect(again?.spec).toEqual(reapplied?.spec);

    // A spec field left out of the next apply is removed; the annotation stays.
    await ports.cnpgDatabases.apply(cnpgDatabase(owner));
    const dropped = await ports.cnpgDatabases.get(target);
    expect(dropped?.spec.extensions ?? []).toEqual([]);
    expect(dropped?.metadata.annotations).toEqual({ [PRIVILEGES_ANNOTATION]: 'digest-2' });

    await ports.cnpgDatabases.delete(target);
    expect(await ports.cnpgDatabases.get(target)).toBeUndefined();
    await ports.cnpgDatabases.delete(target);
  });

  it('recordPrivileges does not create a Database that does not exist', async () => {
    const missing = ref('Database', 'no-such-database');
    expect((await failure(ports.cnpgDatabases.recordPrivileges(missing, 'digest'))).errorClass).toBe('notFound');
    expect(await ports.cnpgDatabases.get(missing)).toBeUndefined();
  });

  it('refuses to apply over a Database controlled by another PostgresDatabase', async () => {
    const mine = await createPostgresDatabase('mine');
    const theirs = await createPostgresDatabase('theirs');
    await ports.cnpgDatabases.apply({
      ...cnpgDatabase(theirs),
      metadata: { ...cnpgDatabase(theirs).metadata, name: 'mine' },
    });
    const refused = await failure(ports.cnpgDatabases.apply(cnpgDatabase(mine)));
    expect(refused.errorClass).toBe('conflict');
    expect((await ports.cnpgDatabases.get(ref('Database', 'mine')))?.metadata.ownerReferences).toEqual([
      ownerReferenceToDatabase(theirs),
    ]);
  });
});

describe('ConnectionSecretPort', () => {
  const template = (owner: PostgresDatabase, name: string, host = 'pg-rw.shop.svc'): ConnectionSecretTemplate => ({
    ref: secretRef(name),
    username: owner.spec.owner,
    host,
    port: '5432',
    dbname: owner.spec.name,
    labels: databaseLabels(owner),
    owner: ownerReferenceToDatabase(owner),
  });

  it('creates a basic-auth Secret with a generated password, keeps it on every apply, and never shows it', async () => {
    const owner = await createPostgresDatabase('app');
    const name = 'app-owner-connection';
    const answer = await ports.connectionSecrets.apply(template(owner, name));

    const created = await readSecret(name);
    // The answer is the Secret as stored, as a view: what the cluster's pass reads before its watch delivers it.
    expect(secretViewOfAnswer(answer)?.metadata.resourceVersion).toBe(created.metadata?.resourceVersion);
    expect(secretViewOfAnswer(answer)?.keys).toEqual([
      'dbname',
      'host',
      'jdbc-uri',
      'password',
      'pgpass',
      'port',
      'uri',
      'username',
    ]);
    expect(answer).not.toHaveProperty('data');
    expect(created.type).toBe('kubernetes.io/basic-auth');
    expect(created.metadata?.labels).toEqual({ ...databaseLabels(owner), 'cnpg.io/reload': 'true' });
    expect(created.metadata?.ownerReferences).toEqual([ownerReferenceToDatabase(owner)]);
    expect(managersOf(created)).toEqual(['pgfsm/Apply']);
    const values = valuesOf(created);
    const password = values.password ?? '';
    expect(password).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(values).toEqual({
      username: 'app_owner',
      password,
      host: 'pg-rw.shop.svc',
      port: '5432',
      dbname: 'app',
      uri: `postgresql://app_owner:${password}@pg-rw.shop.svc:5432/app`,
      'jdbc-uri': `jdbc:postgresql://pg-rw.shop.svc:5432/app?user=app_owner&password=${password}`,
      pgpass: `pg-rw.shop.svc:5432:app:app_owner:${password}\n`,
    });

    const view = await ports.connectionSecrets.get(secretRef(name));
    expect(view).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, ownerReferences: [ownerReferenceToDatabase(owner)] },
      keys: ['dbname', 'host', 'jdbc-uri', 'password', 'pgpass', 'port', 'uri', 'username'],
      values: { username: 'app_owner', host: 'pg-rw.shop.svc', port: '5432', dbname: 'app' },
    });
    expect(Object.keys(view?.values ?? {}).sort()).toEqual(['dbname', 'host', 'port', 'username']);
    expect(view?.metadata).not.toHaveProperty('managedFields');
    expect(view).not.toHaveProperty('data');
    const serialized = JSON.stringify([view, answer]);
    expect(serialized).not.toContain(password);
    expect(serialized).not.toContain(created.data?.password);

    // Another host: the password stays, every key built from the host follows.
    await ports.connectionSecrets.apply(template(owner, name, 'pg-pooler-rw.shop.svc'));
    const moved = valuesOf(await readSecret(name));
    expect(moved.password).toBe(password);
    expect(moved.host).toBe('pg-pooler-rw.shop.svc');
    expect(moved.uri).toBe(`postgresql://app_owner:${password}@pg-pooler-rw.shop.svc:5432/app`);
    expect(moved.pgpass).toBe(`pg-pooler-rw.shop.svc:5432:app:app_owner:${password}\n`);
    expect((await ports.connectionSecrets.get(secretRef(name)))?.values.host).toBe('pg-pooler-rw.shop.svc');

    expect(await ports.connectionSecrets.get(secretRef('no-such-secret'))).toBeUndefined();
  });

  it('releaseOwner removes our owner reference and hands the Secret over; delete removes it', async () => {
    const owner = await createPostgresDatabase('released');
    const name = 'released-owner-connection';
    await ports.connectionSecrets.apply(template(owner, name));
    const password = valuesOf(await readSecret(name)).password;

    const answer = await ports.connectionSecrets.releaseOwner(secretRef(name), owner.metadata.uid ?? '');
    const released = await readSecret(name);
    expect(secretViewOfAnswer(answer)?.metadata.resourceVersion).toBe(released.metadata?.resourceVersion);
    expect(released.metadata?.ownerReferences ?? []).toEqual([]);
    expect(released.metadata?.annotations).toEqual({ [ADOPT_ANNOTATION]: 'true' });
    expect(valuesOf(released).password).toBe(password);
    // Nothing of ours left: releasing again writes nothing; a Secret that is gone needs no release.
    await ports.connectionSecrets.releaseOwner(secretRef(name), owner.metadata.uid ?? '');
    await ports.connectionSecrets.releaseOwner(secretRef('no-such-secret'), owner.metadata.uid ?? '');

    await ports.connectionSecrets.delete(secretRef(name));
    expect(await ports.connectionSecrets.get(secretRef(name))).toBeUndefined();
    await ports.connectionSecrets.delete(secretRef(name));
  });

  it('keeps the password and the type of an orphaned Opaque Secret, and the keys another manager owns', async () => {
    const owner = await createPostgresDatabase('opaque');
    const name = 'opaque-owner-connection';
    await core().createNamespacedSecret({
      namespace,
      body: {
        metadata: { name },
        type: 'Opaque',
        stringData: { username: 'opaque_owner', password: 'made:by\\hand@', note: 'keep me' },
      },
    });
    await ports.connectionSecrets.apply(template(owner, name));
    const adopted = await readSecret(name);
    expect(adopted.type).toBe('Opaque');
    expect(adopted.metadata?.ownerReferences).toEqual([ownerReferenceToDatabase(owner)]);
    const values = valuesOf(adopted);
    expect(values.password).toBe('made:by\\hand@');
    expect(values.note).toBe('keep me');
    expect(values.uri).toBe('postgresql://opaque_owner:made%3Aby%5Chand%40@pg-rw.shop.svc:5432/opaque');
    expect(values.pgpass).toBe('pg-rw.shop.svc:5432:opaque:opaque_owner:made\\:by\\\\hand@\n');
  });

  it('never writes over a Secret controlled by someone else, nor one that appeared after the read', async () => {
    const owner = await createPostgresDatabase('contested');
    const other = await createPostgresDatabase('other');

    // Controlled by another PostgresDatabase: refused.
    await ports.connectionSecrets.apply(template(other, 'controlled-connection'));
    const controlled = await readSecret('controlled-connection');
    expect((await failure(ports.connectionSecrets.apply(template(owner, 'controlled-connection')))).errorClass).toBe(
      'conflict',
    );
    expect(await readSecret('controlled-connection')).toEqual(controlled);

    // Absent when read, created by someone else before the write: the create-only apply is a conflict.
    let between: (() => Promise<unknown>) | undefined;
    class Racing extends RestClient {
      override async request<T = unknown>(req: RestRequest): Promise<T> {
        // Once, before the write (the port reads first).
        if (req.method === 'PATCH' && between) {
          const run = between;
          between = undefined;
          await run();
        }
        return super.request<T>(req);
      }
    }
    const racing = new KubernetesConnectionSecretPort(new Racing(cp().kubeConfig));
    between = () =>
      core().createNamespacedSecret({
        namespace,
        body: { metadata: { name: 'raced-connection' }, stringData: { password: 'theirs' } },
      });
    const raced = await failure(racing.apply(template(owner, 'raced-connection')));
    expect(raced.errorClass).toBe('conflict');
    expect(raced.message).toContain('only if absent');
    const theirs = await readSecret('raced-connection');
    expect(valuesOf(theirs)).toEqual({ password: 'theirs' });
    expect(theirs.metadata?.ownerReferences).toBeUndefined();

    // Changed between the read and the write (a new password): a conflict, the old password is not put back.
    await ports.connectionSecrets.apply(template(owner, 'rotated-connection'));
    between = () => setSecretValue('rotated-connection', 'password', 'rotated');
    expect((await failure(racing.apply(template(owner, 'rotated-connection', 'elsewhere')))).errorClass).toBe(
      'conflict',
    );
    const rotated = valuesOf(await readSecret('rotated-connection'));
    expect(rotated.password).toBe('rotated');
    expect(rotated.host).toBe('pg-rw.shop.svc');
  });

  it('says nothing of the values in its errors', async () => {
    const owner = await createPostgresDatabase('quiet');
    const name = 'quiet-owner-connection';
    await core().createNamespacedSecret({
      namespace,
      body: { metadata: { name }, type: 'kubernetes.io/basic-auth', stringData: { password: 'Sup3r-S3cret' } },
    });
    // A label value the API server refuses: the refusal may quote the request, so none of it is kept.
    const refused = await failure(
      ports.connectionSecrets.apply({ ...template(owner, name), labels: { 'bad label': 'x' } }),
    );
    expect(refused.errorClass).toBe('rejected');
    expect(refused.error.refusal).toBeUndefined();
    expect(JSON.stringify({ ...refused.error, message: refused.message })).not.toContain('Sup3r-S3cret');
    expect(refused.message).not.toContain(Buffer.from('Sup3r-S3cret').toString('base64'));
  });
});

describe('PrivilegesPort', () => {
  const plan: PrivilegePlan = { database: 'app', owner: 'app_owner', schemas: [], users: [] };

  /** A loopback port nothing listens on: the connection is refused at once. */
  async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  it('reads the superuser Secret of the cluster, and names it when it is missing or has no password', async () => {
    const asked: unknown[] = [];
    const port = await closedPort();
    const privileges = new KubernetesPrivilegesPort(new RestClient(cp().kubeConfig), {
      hostOf: async (cluster) => {
        asked.push(cluster);
        return { host: '127.0.0.1', port };
      },
    });
    const cluster = { namespace, name: 'grants' };

    const missing = await failure(privileges.grant(cluster, plan));
    expect(missing.errorClass).toBe('notFound');
    expect(missing.message).toContain(`Secret ${namespace}/grants-superuser`);

    await core().createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'grants-superuser' },
        type: 'kubernetes.io/basic-auth',
        stringData: { username: 'postgres' },
      },
    });
    const empty = await failure(privileges.grant(cluster, plan));
    expect(empty.message).toContain(`Secret ${namespace}/grants-superuser has no password`);
    expect(asked).toEqual([]);

    await setSecretValue('grants-superuser', 'password', 'Sup3r-S3cret');
    const refused = await privileges.grant(cluster, plan).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(PrivilegeError);
    expect(String((refused as Error).message)).not.toContain('Sup3r-S3cret');
    expect(asked).toEqual([cluster]);
  });

  it("connects by default to CloudNativePG's read-write Service", async () => {
    expect(await readWriteService({ namespace: 'shop', name: 'pg' })).toEqual({ host: 'pg-rw.shop.svc', port: 5432 });
  });
});
