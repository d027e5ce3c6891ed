/**
 * Least privilege, checked against the code rather than by reading it: every verb deploy/rbac grants is
 * used by some code path of the operator, and every request that code makes is granted.
 *
 * The ports are composed as the operator composes them (readingFromCaches over kubernetesPorts: a pass
 * reads from the informers' caches and sends only what the caches cannot give; the PostgresDatabase's ports,
 * kubernetesDatabasePorts, over those), with the informers, the event sink and the lease elector, against a fake API server that records each request and translates it
 * into the RBAC attributes the real server would authorize (group, resource[/subresource], verb). The table
 * below names, for each granted verb, the call that needs it; each row's call must make that request. A
 * verb granted without a row, a row without a grant, or a request no grant covers fails the test. The
 * real-API-server tests run the operator with the ServiceAccount of deploy/rbac (and of the namespaced
 * overlay), so a missing verb also fails there, as a 403.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { PostgresCluster, PostgresClusterClass, PostgresDatabase } from '../../src/operator/api/schema.ts';
import type { DatabasePorts } from '../../src/operator/core/database/ports.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { cnpgDatabaseRef, desiredCnpgDatabase } from '../../src/operator/domain/database/cnpg-database.ts';
import type { ConnectionSecretTemplate } from '../../src/operator/domain/database/effects.ts';
import { databaseLabels, ownerReferenceToDatabase } from '../../src/operator/domain/database/vocabulary.ts';
import type { CnpgCluster, ConfigMap, ObjectRef, Pooler } from '../../src/operator/domain/objects.ts';
import { childNames, ownerReferenceTo } from '../../src/operator/domain/vocabulary.ts';
import { readingFromCaches } from '../../src/operator/driver/cache-reads.ts';
import { fencedDatabasePorts, fencedPorts } from '../../src/operator/driver/fenced-ports.ts';
import { allSources, type WatchSources } from '../../src/operator/driver/sources.ts';
import { kubernetesDatabasePorts, kubernetesPorts } from '../../src/operator/kubernetes/index.ts';
import { LeaseElector } from '../../src/operator/kubernetes/leader.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { PrivilegeError, type PrivilegePlan } from '../../src/operator/postgres/privileges.ts';

const DEPLOY = fileURLToPath(new URL('../../deploy/rbac/', import.meta.url));

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** `group resource verb`, the unit RBAC authorizes (`''` is the core group). */
const key = (group: string, resource: string, verb: string) => `${group || 'core'} ${resource} ${verb}`;

const rulesOf = (file: string, kind: string): Rule[] =>
  parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8'))
    .map((d) => d.toJS() as { kind: string; rules: Rule[] })
    .filter((o) => o.kind === kind)
    .flatMap((o) => o.rules);

const granted = (rules: Rule[]) =>
  rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => key(g, res, v)))));

// ---- the fake API server ----------------------------------------------------------------------------

interface Recorded {
  method: string;
  path: string;
  keys: string[];
  /** What the client asked the answer to be: a metadata-only list or watch names PartialObjectMetadata. */
  accept: string;
}

/**
 * The RBAC attributes of a request, as the API server derives them: a GET of a collection is `list`, or
 * `watch` with `watch=true`; PATCH is `patch`, and a server-side apply also needs `create` (it creates
 * what is missing, and the server authorizes that as a create).
 */
function attributesOf(method: string, url: URL, contentType: string): string[] {
  const parts = url.pathname.split('/').filter(Boolean);
  const [root, ...rest] = parts;
  const group = root === 'api' ? '' : (rest.shift() ?? '');
  rest.shift(); // version
  if (rest[0] === 'namespaces' && rest.length >= 3) rest.splice(0, 2);
  const [resource = '', name, subresource] = rest;
  const full = subresource ? `${resource}/${subresource}` : resource;
  const verbs: string[] = [];
  if (method === 'GET')
    verbs.push(name ? 'get' : ['1', 'true'].includes(url.searchParams.get('watch') ?? '') ? 'watch' : 'list');
  if (method === 'POST') verbs.push('create');
  if (method === 'PUT') verbs.push('update');
  if (method === 'DELETE') verbs.push(name ? 'delete' : 'deletecollection');
  if (method === 'PATCH') verbs.push('patch', ...(contentType.startsWith('application/apply-patch') ? ['create'] : []));
  return verbs.map((v) => key(group, full, v));
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => resolve(body));
  });

let server: Server;
let kc: KubeConfig;
const recorded: Recorded[] = [];
/** Objects written, by path, so that a read after a write (the lease) sees it. */
const stored = new Map<string, Record<string, unknown>>();

function startFakeApi(): Promise<void> {
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    recorded.push({
      method,
      path: url.pathname,
      keys: attributesOf(method, url, req.headers['content-type'] ?? ''),
      accept: req.headers.accept ?? '',
    });
    const send = (status: number, object: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(object));
    };
    const segments = url.pathname.split('/').filter(Boolean);
    const isLease = url.pathname.includes('/leases');
    if (method === 'GET' && url.searchParams.has('watch')) {
      // A watch that stays open and quiet until the test ends.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      return;
    }
    const plural = segments.at(-2) ?? '';
    const listed = recorded.at(-1)?.keys.find((k) => k.endsWith(' list'));
    if (listed) {
      const items = SEED[listed.split(' ')[1] ?? ''] ?? [];
      send(200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
      return;
    }
    if (method === 'GET') {
      const known = stored.get(url.pathname);
      if (known) send(200, known);
      else if (isLease)
        send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound' });
      else
        send(200, {
          apiVersion: 'v1',
          kind: 'Object',
          metadata: {
            name: segments.at(-1),
            namespace: 'ns',
            resourceVersion: '7',
            uid: `uid-${plural}`,
            ownerReferences: [OWNER_OF[`${plural}/${segments.at(-1)}`] ?? owner],
          },
          data: { key: 'dmFsdWU=' },
        });
      return;
    }
    if (method === 'DELETE') {
      send(200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
      return;
    }
    const object = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    const metadata = { ...(object.metadata as object), resourceVersion: String(recorded.length) };
    const written = { ...object, metadata };
    const name = (object.metadata as { name?: string } | undefined)?.name;
    stored.set(method === 'POST' && name ? `${url.pathname}/${name}` : url.pathname, written);
    send(method === 'POST' ? 201 : 200, written);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

/** The request keys made while `action` ran. */
async function requestsOf(action: () => Promise<unknown>): Promise<string[]> {
  const from = recorded.length;
  await action();
  return recorded.slice(from).flatMap((r) => r.keys);
}

// ---- the calls ------------------------------------------------------------------------------------

const NS = 'ns';
const cluster: PostgresCluster = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { name: 'orders', namespace: NS, uid: 'uid-orders', resourceVersion: '3' },
  spec: { class: 'standard' },
} as PostgresCluster;
const owner = ownerReferenceTo(cluster);
const clusterClass: PostgresClusterClass = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresClusterClass',
  metadata: { name: 'standard', uid: 'uid-standard', resourceVersion: '1' },
  spec: {},
} as PostgresClusterClass;
const ref = (apiVersion: string, kind: string, name: string): ObjectRef => ({ apiVersion, kind, namespace: NS, name });
const cnpg = {
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Cluster',
  metadata: { name: 'orders', namespace: NS, ownerReferences: [owner] },
  spec: { instances: 1 },
} as unknown as CnpgCluster;
const pooler = {
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Pooler',
  metadata: { name: 'orders-pooler-rw', namespace: NS, ownerReferences: [owner] },
  spec: { cluster: { name: 'orders' } },
} as unknown as Pooler;
const configMap = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'orders-endpoints', namespace: NS, ownerReferences: [owner] },
  data: { A: 'b' },
} as ConfigMap;
/** The backup kinds (issue 36): one object of each, written and read as the cluster's pass does. */
const BACKUP_KINDS = {
  objectStores: { group: 'barmancloud.cnpg.io', plural: 'objectstores', kind: 'ObjectStore', name: 'orders-backups' },
  scheduledBackups: {
    group: 'postgresql.cnpg.io',
    plural: 'scheduledbackups',
    kind: 'ScheduledBackup',
    name: 'orders-scheduled',
  },
  backups: { group: 'postgresql.cnpg.io', plural: 'backups', kind: 'Backup', name: 'orders-backup-0123456789ab' },
} as const;
type BackupKind = keyof typeof BACKUP_KINDS;
const backupRef = (k: BackupKind) => ref(`${BACKUP_KINDS[k].group}/v1`, BACKUP_KINDS[k].kind, BACKUP_KINDS[k].name);
const backupObject = (k: BackupKind) => ({
  apiVersion: `${BACKUP_KINDS[k].group}/v1`,
  kind: BACKUP_KINDS[k].kind,
  metadata: { name: BACKUP_KINDS[k].name, namespace: NS, ownerReferences: [owner] },
  spec: {},
});
const backupPort = (p: Ports, k: BackupKind) => {
  if (!p.backupObjects) throw new Error('no backup ports');
  return p.backupObjects[k] as NonNullable<Ports['backupObjects']>['objectStores'];
};
const secretRef = ref('v1', 'Secret', 'orders-superuser');
const database = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresDatabase',
  metadata: { name: 'orders-app', namespace: NS, uid: 'uid-orders-app', resourceVersion: '3' },
  spec: { cluster: 'orders', name: 'app', owner: 'app_owner', users: [{ name: 'app_reader', access: 'readOnly' }] },
} as PostgresDatabase;
const databaseKey = { namespace: NS, name: 'orders-app' };
const databaseOwner = ownerReferenceToDatabase(database);
const cnpgDatabase = desiredCnpgDatabase(database);
const cnpgDatabaseAt = cnpgDatabaseRef(database);
const connectionSecret: ConnectionSecretTemplate = {
  ref: ref('v1', 'Secret', 'orders-app-app-owner'),
  username: 'app_owner',
  host: 'orders-rw.ns',
  port: '5432',
  dbname: 'app',
  labels: databaseLabels(database),
  owner: databaseOwner,
};
const plan: PrivilegePlan = {
  database: 'app',
  owner: 'app_owner',
  schemas: [],
  users: [{ name: 'app_reader', access: 'readOnly' }],
};
/** The objects the fake API answers as the database's children (any other is the cluster's). */
const OWNER_OF: Record<string, typeof owner> = {
  [`databases/${cnpgDatabaseAt.name}`]: databaseOwner,
  [`secrets/${connectionSecret.ref.name}`]: databaseOwner,
};
const meta = (name: string, extra: object = {}) => ({
  name,
  namespace: NS,
  uid: `uid-${name}`,
  resourceVersion: '1',
  ownerReferences: [owner],
  ...extra,
});

/** What the lists return, by resource: one object of each kind the pass reads, so the caches hold them. */
const SEED: Record<string, object[]> = {
  // Being deleted: the one cluster a pass reads afresh rather than from the cache.
  postgresclusters: [{ ...cluster, metadata: { ...cluster.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }],
  postgresclusterclasses: [{ metadata: { name: 'standard', uid: 'uid-standard', resourceVersion: '1' }, spec: {} }],
  clusters: [{ metadata: meta('orders'), spec: {} }],
  poolers: [{ metadata: meta('orders-pooler-rw'), spec: {} }],
  secrets: [{ metadata: meta('orders-superuser') }],
  configmaps: [{ metadata: meta('orders-endpoints') }],
  // Being deleted too: a PostgresDatabase is read afresh then, as its cluster is.
  postgresdatabases: [{ ...database, metadata: { ...database.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }],
  databases: [{ metadata: meta(cnpgDatabaseAt.name, { ownerReferences: [databaseOwner] }), spec: {} }],
  deployments: [
    {
      metadata: meta('orders-pooler-rw', {
        ownerReferences: [{ apiVersion: 'postgresql.cnpg.io/v1', kind: 'Pooler', name: 'orders-pooler-rw', uid: 'p' }],
      }),
      status: { readyReplicas: 1 },
    },
  ],
};

/** The ports as the operator composes them, over started and synced informers. */
let ports: Ports;
let sources: WatchSources;
/** The PostgresDatabase's ports over `ports`; their grants connect to {@link closedPort}. */
let databasePorts: DatabasePorts;
/**
 * A loopback port nothing listens on: the privileges port reads the superuser Secret from the fake API, then
 * fails to connect there (a PrivilegeError), so its one request to the API is exercised and nothing else.
 */
let closedPort: number;
const hostOf = async () => ({ host: '127.0.0.1', port: closedPort });

/** The superuser Secret the grants read (the rows above may have overwritten it with a patch, or deleted it). */
const SUPERUSER_SECRET_PATH = `/api/v1/namespaces/${NS}/secrets/${childNames('orders').secret}`;

/** Grants (or a read of the roles) over the closed port: one GET of the superuser Secret, then a PrivilegeError. */
async function overClosedPort(call: () => Promise<unknown>): Promise<void> {
  stored.set(SUPERUSER_SECRET_PATH, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: childNames('orders').secret, namespace: NS, resourceVersion: '5', ownerReferences: [owner] },
    data: { username: 'cG9zdGdyZXM=', password: 'c2VjcmV0' },
  });
  const made = await requestsOf(() => expect(call()).rejects.toBeInstanceOf(PrivilegeError));
  expect(made).toEqual(['core secrets get']);
}

/** Starts every informer (all namespaces), waits until each has listed and watched, stops them. */
async function runInformers(): Promise<void> {
  const sources = allSources(createWatchSources(kc));
  const from = recorded.length;
  for (const s of sources) s.start();
  const watched = () => new Set(recorded.slice(from).flatMap((r) => r.keys.filter((k) => k.endsWith(' watch')))).size;
  const deadline = Date.now() + 10_000;
  while (watched() < sources.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await Promise.all(sources.map((s) => s.stop()));
}

/** A first campaign (no Lease yet: read, create) and a renewal (read, update). */
async function runLease(): Promise<void> {
  for (const path of stored.keys()) if (path.includes('/leases')) stored.delete(path);
  const elector = new LeaseElector(kc, {
    namespace: 'pgfsm-system',
    name: 'pgfsm-leader',
    identity: 'me',
    leaseDurationMs: 600,
    renewDeadlineMs: 400,
    retryPeriodMs: 50,
  });
  let led = false;
  elector.start({ onStartedLeading: () => (led = true), onStoppedLeading: () => {} });
  const deadline = Date.now() + 10_000;
  const renewed = () => recorded.some((r) => r.method === 'PUT' && r.path.includes('/leases/'));
  while (!(led && renewed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await elector.stop();
}

type Call = () => Promise<unknown>;

/** Every granted verb, and the adapter call that needs it. */
const USES: Record<string, { by: string; call: Call } | { admission: string; holds: () => boolean }> = {
  'pgfsm.io postgresclusters get': {
    by: 'PostgresClusterPort.get of a cluster being deleted (read afresh, not from the cache)',
    call: () => ports.clusters.get({ namespace: NS, name: 'orders' }),
  },
  'pgfsm.io postgresclusters list': { by: 'Informer (clusters)', call: runInformers },
  'pgfsm.io postgresclusters watch': { by: 'Informer (clusters)', call: runInformers },
  'pgfsm.io postgresclusters patch': {
    by: 'PostgresClusterPort.addFinalizer',
    call: () => ports.clusters.addFinalizer(cluster, 'pgfsm.io/finalizer'),
  },
  'pgfsm.io postgresclusters/status patch': {
    by: 'PostgresClusterPort.writeStatus',
    call: () => ports.clusters.writeStatus(cluster, { state: 'Pending' } as never),
  },
  'pgfsm.io postgresclusters/finalizers update': {
    admission:
      'owner references with blockOwnerDeletion (ownerReferenceTo) need it where OwnerReferencesPermissionEnforcement runs',
    holds: () => owner.blockOwnerDeletion === true,
  },
  'pgfsm.io postgresdatabases get': {
    by: 'PostgresDatabasePort.get of a database being deleted (read afresh, not from the cache)',
    call: () => ports.databases.get(databaseKey),
  },
  'pgfsm.io postgresdatabases list': { by: 'Informer (databases)', call: runInformers },
  'pgfsm.io postgresdatabases watch': { by: 'Informer (databases)', call: runInformers },
  'pgfsm.io postgresdatabases patch': {
    by: 'PostgresDatabasePort.addFinalizer',
    call: () => ports.databases.addFinalizer(database, 'pgfsm.io/finalizer'),
  },
  'pgfsm.io postgresdatabases/status patch': {
    by: 'PostgresDatabasePort.writeStatus',
    call: () => ports.databases.writeStatus(database, { phase: 'Pending' } as never),
  },
  'pgfsm.io postgresdatabases/finalizers update': {
    admission:
      'owner references with blockOwnerDeletion (ownerReferenceToDatabase, on the CNPG Database and the ' +
      'connection Secrets) need it where OwnerReferencesPermissionEnforcement runs',
    holds: () => databaseOwner.blockOwnerDeletion === true,
  },
  'pgfsm.io postgresclusterclasses get': {
    by: 'ClassPort.get from the API: a class the cache does not hold, read before it is reported missing',
    call: () => ports.classes.get('not-cached'),
  },
  'pgfsm.io postgresclusterclasses patch': {
    by: 'ClassPort.addFinalizer / removeFinalizer (the class protection: merge patch of the finalizer)',
    call: () => ports.classes.addFinalizer(clusterClass, 'pgfsm.io/class-in-use'),
  },
  'pgfsm.io postgresclusterclasses list': { by: 'Informer (classes)', call: runInformers },
  'pgfsm.io postgresclusterclasses watch': { by: 'Informer (classes)', call: runInformers },
  'postgresql.cnpg.io clusters get': {
    by: 'CnpgClusterPort.setOwner / releaseOwner (read the owners they patch conditionally)',
    call: () => ports.cnpgClusters.releaseOwner(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders'), owner.uid),
  },
  'postgresql.cnpg.io clusters create': {
    by: 'CnpgClusterPort.apply (server-side apply creates)',
    call: () => ports.cnpgClusters.apply(cnpg, 'cluster'),
  },
  'postgresql.cnpg.io clusters patch': {
    by: 'CnpgClusterPort.setOwner / releaseOwner (merge patch; apply patches too)',
    call: () => ports.cnpgClusters.releaseOwner(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders'), owner.uid),
  },
  'postgresql.cnpg.io clusters delete': {
    by: 'CnpgClusterPort.delete',
    call: () => ports.cnpgClusters.delete(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders')),
  },
  'postgresql.cnpg.io clusters list': { by: 'Informer (cnpgClusters)', call: runInformers },
  'postgresql.cnpg.io clusters watch': { by: 'Informer (cnpgClusters)', call: runInformers },
  'postgresql.cnpg.io databases get': {
    by: 'CnpgDatabasePort.get (and apply / recordPrivileges, which read the live Database first)',
    call: () => databasePorts.cnpgDatabases.get(cnpgDatabaseAt),
  },
  'postgresql.cnpg.io databases create': {
    by: 'CnpgDatabasePort.apply (server-side apply creates)',
    call: () => databasePorts.cnpgDatabases.apply(cnpgDatabase),
  },
  'postgresql.cnpg.io databases patch': {
    by: 'CnpgDatabasePort.recordPrivileges (apply under its own field manager; apply patches too)',
    call: () => databasePorts.cnpgDatabases.recordPrivileges(cnpgDatabaseAt, 'digest'),
  },
  'postgresql.cnpg.io databases delete': {
    by: 'CnpgDatabasePort.delete (its PostgresDatabase deleted)',
    call: () => databasePorts.cnpgDatabases.delete(cnpgDatabaseAt),
  },
  'postgresql.cnpg.io databases list': { by: 'Informer (cnpgDatabases)', call: runInformers },
  'postgresql.cnpg.io databases watch': { by: 'Informer (cnpgDatabases)', call: runInformers },
  'postgresql.cnpg.io poolers get': {
    by: 'PoolerPort.get from the API (Ports.direct): the read-back of an apply whose answer was lost',
    call: () => (ports.direct ?? ports).poolers.get(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw')),
  },
  'postgresql.cnpg.io poolers create': {
    by: 'PoolerPort.apply (server-side apply creates)',
    call: () => ports.poolers.apply(pooler),
  },
  'postgresql.cnpg.io poolers patch': { by: 'PoolerPort.apply', call: () => ports.poolers.apply(pooler) },
  'postgresql.cnpg.io poolers delete': {
    by: 'PoolerPort.delete (pooler switched off, or Delete policy)',
    call: () => ports.poolers.delete(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw')),
  },
  'postgresql.cnpg.io poolers list': { by: 'Informer (poolers)', call: runInformers },
  'postgresql.cnpg.io poolers watch': { by: 'Informer (poolers)', call: runInformers },
  ...backupUses(),
  'core secrets get': { by: 'SecretPort.get (key names)', call: () => ports.secrets.get(secretRef) },
  'core secrets create': {
    by: 'SecretPort.create (the superuser Secret, once)',
    call: () => ports.secrets.create({ ref: secretRef, username: 'postgres', labels: {}, owner }),
  },
  'core secrets patch': {
    by: 'SecretPort.setOwner / releaseOwner (merge patch)',
    call: () => ports.secrets.releaseOwner(secretRef, owner.uid),
  },
  'core secrets delete': { by: 'SecretPort.delete (Delete policy)', call: () => ports.secrets.delete(secretRef) },
  'core secrets list': { by: 'Informer (secrets, metadata only)', call: runInformers },
  'core secrets watch': { by: 'Informer (secrets, metadata only)', call: runInformers },
  'core configmaps get': {
    by: 'ConfigMapPort.get',
    call: () => ports.configMaps.get(ref('v1', 'ConfigMap', 'orders-endpoints')),
  },
  'core configmaps create': {
    by: 'ConfigMapPort.apply (server-side apply creates)',
    call: () => ports.configMaps.apply(configMap),
  },
  'core configmaps patch': { by: 'ConfigMapPort.apply', call: () => ports.configMaps.apply(configMap) },
  'core configmaps delete': {
    by: 'ConfigMapPort.delete (Delete policy)',
    call: () => ports.configMaps.delete(ref('v1', 'ConfigMap', 'orders-endpoints')),
  },
  'core configmaps list': { by: 'Informer (configMaps)', call: runInformers },
  'core configmaps watch': { by: 'Informer (configMaps)', call: runInformers },
  'apps deployments list': { by: 'Informer (deployments)', call: runInformers },
  'apps deployments watch': { by: 'Informer (deployments)', call: runInformers },
  'events.k8s.io events create': {
    by: 'EventSink.emit (first occurrence)',
    call: () => ports.events.emit(cluster, { type: 'Normal', reason: 'First', action: 'Test', message: 'one' }),
  },
  'events.k8s.io events patch': {
    by: 'EventSink.emit (a repeat bumps the series)',
    call: async () => {
      const event = { type: 'Normal', reason: 'Repeated', action: 'Test', message: 'twice' } as const;
      await ports.events.emit(cluster, event);
      await ports.events.emit(cluster, event);
    },
  },
  'coordination.k8s.io leases get': { by: 'LeaseElector (read)', call: runLease },
  'coordination.k8s.io leases create': { by: 'LeaseElector (first campaign)', call: runLease },
  'coordination.k8s.io leases update': { by: 'LeaseElector (renew)', call: runLease },
};

/** The four verbs of each backup kind: read from the API (not watched yet), applied, owners patched, deleted. */
function backupUses(): Record<string, { by: string; call: Call }> {
  return Object.fromEntries(
    (Object.keys(BACKUP_KINDS) as BackupKind[]).flatMap((k) => {
      const { group, plural } = BACKUP_KINDS[k];
      const at = `${group} ${plural}`;
      return [
        [
          `${at} get`,
          { by: `backupObjects.${k}.get (from the API)`, call: () => backupPort(ports, k).get(backupRef(k)) },
        ],
        [`${at} create`, { by: `backupObjects.${k}.apply (server-side apply creates)`, call: () => apply(ports, k) }],
        [`${at} patch`, { by: `backupObjects.${k}.apply`, call: () => apply(ports, k) }],
        [
          `${at} delete`,
          { by: `backupObjects.${k}.delete (Delete policy)`, call: () => backupPort(ports, k).delete(backupRef(k)) },
        ],
      ];
    }),
  );
}

const apply = (p: Ports, k: BackupKind) =>
  backupPort(p, k).apply(backupObject(k) as unknown as Parameters<ReturnType<typeof backupPort>['apply']>[0]);

/** A row of {@link EVERY_PORT_CALL} per method of each backup port. */
function everyBackupCall(): Record<string, (p: Ports) => Promise<unknown>> {
  return Object.fromEntries(
    (Object.keys(BACKUP_KINDS) as BackupKind[]).flatMap((k) => [
      [`backupObjects.${k}.get`, (p: Ports) => backupPort(p, k).get(backupRef(k))],
      [`backupObjects.${k}.apply`, (p: Ports) => apply(p, k)],
      [
        `backupObjects.${k}.setOwner`,
        // The cluster's own reference: the fake API keeps what is set, and the apply of the next layer refuses an
        // object another controller holds.
        (p: Ports) => backupPort(p, k).setOwner(backupRef(k), owner),
      ],
      [`backupObjects.${k}.releaseOwner`, (p: Ports) => backupPort(p, k).releaseOwner(backupRef(k), owner.uid)],
      [`backupObjects.${k}.delete`, (p: Ports) => backupPort(p, k).delete(backupRef(k))],
    ]),
  );
}

/**
 * A call of every method of every port, on ports composed as the operator composes them (the writes fenced,
 * the reads from the caches, and `direct`: the reads of the API itself, after a write whose answer was lost).
 * The table is checked against the methods the composed ports have, so that a port or a method added later
 * fails here until it is called, and what it requests is then checked against the roles.
 */
const EVERY_PORT_CALL: Record<string, (p: Ports) => Promise<unknown>> = {
  'clusters.get': (p) => p.clusters.get({ namespace: NS, name: 'orders' }),
  'clusters.addFinalizer': (p) => p.clusters.addFinalizer(cluster, 'pgfsm.io/finalizer'),
  'clusters.removeFinalizer': (p) =>
    p.clusters.removeFinalizer(
      { ...cluster, metadata: { ...cluster.metadata, finalizers: ['pgfsm.io/finalizer'] } },
      'pgfsm.io/finalizer',
    ),
  'clusters.writeStatus': (p) => p.clusters.writeStatus(cluster, { state: 'Pending' } as never),
  'classes.get': (p) => p.classes.get('not-cached'),
  'classes.addFinalizer': (p) => p.classes.addFinalizer(clusterClass, 'pgfsm.io/class-in-use'),
  'classes.removeFinalizer': (p) =>
    p.classes.removeFinalizer(
      { ...clusterClass, metadata: { ...clusterClass.metadata, finalizers: ['pgfsm.io/class-in-use'] } },
      'pgfsm.io/class-in-use',
    ),
  // The re-check before a removal: a list of the clusters from the API (granted for the informer).
  'classes.usersOf': (p) => p.classes.usersOf('standard'),
  'secrets.get': (p) => p.secrets.get(secretRef),
  'secrets.create': (p) => p.secrets.create({ ref: secretRef, username: 'postgres', labels: {}, owner }),
  'secrets.setOwner': (p) => p.secrets.setOwner(secretRef, { ...owner, uid: 'uid-another' }),
  'secrets.releaseOwner': (p) => p.secrets.releaseOwner(secretRef, owner.uid),
  'secrets.delete': (p) => p.secrets.delete(secretRef),
  'cnpgClusters.get': (p) => p.cnpgClusters.get(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders')),
  'cnpgClusters.apply': async (p) => {
    await p.cnpgClusters.apply(cnpg, 'cluster');
    await p.cnpgClusters.apply(cnpg, 'managedRoles');
  },
  'cnpgClusters.setOwner': (p) =>
    p.cnpgClusters.setOwner(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders'), { ...owner, uid: 'uid-another' }),
  'cnpgClusters.releaseOwner': (p) =>
    p.cnpgClusters.releaseOwner(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders'), owner.uid),
  'cnpgClusters.delete': (p) => p.cnpgClusters.delete(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders')),
  'poolers.get': (p) => p.poolers.get(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw')),
  'poolers.view': (p) => p.poolers.view(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw')),
  'poolers.apply': (p) => p.poolers.apply(pooler),
  'poolers.setOwner': (p) =>
    p.poolers.setOwner(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw'), { ...owner, uid: 'uid-another' }),
  'poolers.releaseOwner': (p) =>
    p.poolers.releaseOwner(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw'), owner.uid),
  'poolers.delete': (p) => p.poolers.delete(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw')),
  'configMaps.get': (p) => p.configMaps.get(ref('v1', 'ConfigMap', 'orders-endpoints')),
  'configMaps.apply': (p) => p.configMaps.apply(configMap),
  'configMaps.setOwner': (p) =>
    p.configMaps.setOwner(ref('v1', 'ConfigMap', 'orders-endpoints'), { ...owner, uid: 'uid-another' }),
  'configMaps.releaseOwner': (p) => p.configMaps.releaseOwner(ref('v1', 'ConfigMap', 'orders-endpoints'), owner.uid),
  'configMaps.delete': (p) => p.configMaps.delete(ref('v1', 'ConfigMap', 'orders-endpoints')),
  'databases.get': (p) => p.databases.get(databaseKey),
  'databases.list': (p) => p.databases.list(NS),
  'databases.addFinalizer': (p) => p.databases.addFinalizer(database, 'pgfsm.io/finalizer'),
  'databases.removeFinalizer': (p) =>
    p.databases.removeFinalizer(
      { ...database, metadata: { ...database.metadata, finalizers: ['pgfsm.io/finalizer'] } },
      'pgfsm.io/finalizer',
    ),
  'databases.writeStatus': (p) => p.databases.writeStatus(database, { phase: 'Pending' } as never),
  'events.emit': (p) => p.events.emit(cluster, { type: 'Normal', reason: 'Every', action: 'Test', message: 'call' }),
  ...everyBackupCall(),
};

/** The ports the PostgresDatabase's pass shares with the cluster's (DatabasePorts picks them from `Ports`). */
const SHARED_PORTS = ['clusters', 'cnpgClusters', 'configMaps', 'databases', 'events'] as const;
type SharedPorts = Pick<Ports, (typeof SHARED_PORTS)[number]>;
const isShared = (method: string) => (SHARED_PORTS as readonly string[]).includes(method.split('.')[0] ?? '');

/**
 * A call of every method of the PostgresDatabase's ports, composed as the operator composes them: the shared
 * ports' rows of {@link EVERY_PORT_CALL}, and its own four. The grants connect to a closed loopback port, so
 * the privileges port makes its one API request (the superuser Secret) and fails there.
 */
const EVERY_DATABASE_PORT_CALL: Record<string, (p: DatabasePorts) => Promise<unknown>> = {
  ...(Object.fromEntries(Object.entries(EVERY_PORT_CALL).filter(([method]) => isShared(method))) as Record<
    string,
    (p: SharedPorts) => Promise<unknown>
  >),
  'cnpgDatabases.get': (p) => p.cnpgDatabases.get(cnpgDatabaseAt),
  'cnpgDatabases.apply': (p) => p.cnpgDatabases.apply(cnpgDatabase),
  'cnpgDatabases.recordPrivileges': (p) => p.cnpgDatabases.recordPrivileges(cnpgDatabaseAt, 'digest'),
  'cnpgDatabases.delete': (p) => p.cnpgDatabases.delete(cnpgDatabaseAt),
  'connectionSecrets.get': (p) => p.connectionSecrets.get(connectionSecret.ref),
  'connectionSecrets.apply': (p) => p.connectionSecrets.apply(connectionSecret),
  'connectionSecrets.releaseOwner': (p) => p.connectionSecrets.releaseOwner(connectionSecret.ref, databaseOwner.uid),
  'connectionSecrets.delete': (p) => p.connectionSecrets.delete(connectionSecret.ref),
  'privileges.grant': (p) => overClosedPort(() => p.privileges.grant({ namespace: NS, name: 'orders' }, plan)),
  'privileges.existingRoles': (p) =>
    overClosedPort(() => p.privileges.existingRoles({ namespace: NS, name: 'orders' }, ['app'])),
  'privileges.inspect': (p) => overClosedPort(() => p.privileges.inspect({ namespace: NS, name: 'orders' }, plan)),
};

/**
 * Methods of `direct` the operator never calls, and why (each reason is checked). `direct` is what the core
 * reads the API itself with, and only after a write whose answer was lost, with `get` (core/execute.ts).
 */
const NEVER_CALLED_DIRECT: Record<string, { why: string; holds: () => boolean }> = {
  'poolers.view': {
    why:
      "a pooler's readiness is read from the Deployments' cache (no get is granted on Deployments); only " +
      '`pgfsm explain` reads it from the API, with the kubeconfig of whoever runs it',
    holds: () =>
      !readFileSync(new URL('../../src/operator/core/execute.ts', import.meta.url), 'utf8').includes('.view('),
  },
};

/** `port.method` for every function a composed port has, its prototypes' included (the read wrappers' are). */
function methodsOf(ports: Ports | DatabasePorts): string[] {
  return Object.entries(ports).flatMap(([name, port]) => {
    if (name === 'direct' || name === 'clock') return [];
    // A group of ports (the backup kinds): each of its ports' methods, under the group's name.
    if (name === 'backupObjects') {
      return Object.entries(port as object).flatMap(([kind, inner]) =>
        methodsOf({ [kind]: inner } as unknown as Ports).map((m) => `${name}.${m}`),
      );
    }
    const methods = new Set<string>();
    for (let o: object | null = port; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const key of Object.getOwnPropertyNames(o))
        if (key !== 'constructor' && typeof (port as Record<string, unknown>)[key] === 'function') methods.add(key);
    }
    return [...methods].map((method) => `${name}.${method}`);
  });
}

beforeAll(async () => {
  await startFakeApi();
  const { port } = server.address() as AddressInfo;
  kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain HTTP unless TLS verification is off (there is no TLS to verify).
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'pgfsm', token: 'test' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'pgfsm' }],
    currentContext: 'fake',
  });
  sources = createWatchSources(kc);
  for (const source of allSources(sources)) source.start();
  const deadline = Date.now() + 10_000;
  while (!allSources(sources).every((s) => s.synced) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  ports = readingFromCaches(kubernetesPorts(kc, { reportingInstance: 'test' }), sources);
  closedPort = await new Promise<number>((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  databasePorts = kubernetesDatabasePorts(kc, ports, { hostOf });
});

afterAll(async () => {
  await Promise.all(allSources(sources).map((s) => s.stop()));
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('deploy/rbac grants exactly what the adapters request', () => {
  const clusterRole = granted(rulesOf('cluster-role.yaml', 'ClusterRole'));
  const leaderRole = granted(rulesOf('leader-election.yaml', 'Role'));
  const grants = [...clusterRole, ...leaderRole];

  it('every granted verb has a row naming the call that uses it, and every row is granted', () => {
    expect(new Set(grants).size, 'a verb is granted twice').toBe(grants.length);
    expect([...grants].sort()).toEqual(Object.keys(USES).sort());
  });

  it.each(Object.entries(USES))('%s: used by its call', async (granted, use) => {
    if ('admission' in use) {
      // Authorized by admission, not requested: the grant stands only while its reason holds.
      expect(use.holds(), use.admission).toBe(true);
      return;
    }
    const made = await requestsOf(use.call);
    expect(made, use.by).toContain(granted);
  });

  it('reads the caches hold make no request (so no get is granted for Deployments, nor used for a cached class)', async () => {
    // Ports of their own: the rows above deleted the pooler through `ports`, whose own writes read it as gone
    // until a watch delivers the deletion, which this fake API never sends.
    const cached = readingFromCaches(kubernetesPorts(kc, { reportingInstance: 'test' }), sources);
    const reads = await requestsOf(async () => {
      expect(await cached.classes.get('standard')).toBeDefined();
      const view = await cached.poolers.view(ref('postgresql.cnpg.io/v1', 'Pooler', 'orders-pooler-rw'));
      expect(view?.readyReplicas).toBe(1);
      expect(await cached.cnpgClusters.get(ref('postgresql.cnpg.io/v1', 'Cluster', 'orders'))).toBeDefined();
      expect((await cached.databases.list(NS)).map((d) => d.metadata.name)).toEqual(['orders-app']);
    });
    expect(reads).toEqual([]);
  });

  it('every method of every port, as the operator composes them, requests nothing the roles do not grant', async () => {
    const leader = { identity: 'test', isLeader: () => true };
    const composed = readingFromCaches(
      fencedPorts(kubernetesPorts(kc, { reportingInstance: 'test' }), leader),
      sources,
    );
    const direct = composed.direct ?? composed;
    expect(methodsOf(composed).sort()).toEqual(Object.keys(EVERY_PORT_CALL).sort());
    expect(methodsOf(direct).sort()).toEqual(Object.keys(EVERY_PORT_CALL).sort());
    const ungranted: string[] = [];
    for (const [ports, layer] of [
      [composed, ''],
      [direct, 'direct.'],
    ] as const) {
      for (const [method, call] of Object.entries(EVERY_PORT_CALL)) {
        const never = layer === 'direct.' ? NEVER_CALLED_DIRECT[method] : undefined;
        if (never) {
          expect(never.holds(), `direct.${method}: ${never.why}`).toBe(true);
          continue;
        }
        const made = await requestsOf(() => call(ports));
        ungranted.push(...made.filter((k) => !grants.includes(k)).map((k) => `${layer}${method}: ${k}`));
      }
    }
    expect(ungranted).toEqual([]);
  });

  it('every method of every database port, as the operator composes them, requests nothing the roles do not grant', async () => {
    const leader = { identity: 'test', isLeader: () => true };
    const clusterPorts = readingFromCaches(
      fencedPorts(kubernetesPorts(kc, { reportingInstance: 'test' }), leader),
      sources,
    );
    const composed = fencedDatabasePorts(kubernetesDatabasePorts(kc, clusterPorts, { hostOf }), clusterPorts, leader);
    expect(methodsOf(composed).sort()).toEqual(Object.keys(EVERY_DATABASE_PORT_CALL).sort());
    const ungranted: string[] = [];
    for (const [method, call] of Object.entries(EVERY_DATABASE_PORT_CALL)) {
      const made = await requestsOf(() => call(composed));
      ungranted.push(...made.filter((k) => !grants.includes(k)).map((k) => `${method}: ${k}`));
    }
    expect(ungranted).toEqual([]);
  });

  it('lists and watches Secrets and ConfigMaps as metadata only: no value travels, though the grant would allow it', () => {
    const collections = recorded.filter((r) => r.keys.some((k) => /^core (secrets|configmaps) (list|watch)$/.test(k)));
    expect(new Set(collections.flatMap((r) => r.keys))).toEqual(
      new Set(['core secrets list', 'core secrets watch', 'core configmaps list', 'core configmaps watch']),
    );
    for (const request of collections) expect(request.accept, request.path).toMatch(/;as=PartialObjectMetadata/);
  });

  it('every request the calls made is granted (none is missing from the roles)', () => {
    const made = new Set(recorded.flatMap((r) => r.keys));
    expect(made.size).toBeGreaterThan(20);
    const missing = [...made].filter((k) => !grants.includes(k));
    expect(missing).toEqual([]);
  });
});
