/**
 * A child the pass saw absent is written by one request that creates it only if it still does not exist
 * (src/operator/kubernetes/children.ts, `applyAs`; objects.ts, ONLY_IF_ABSENT): no GET first (issue 10),
 * and an object the view missed is never applied over nor adopted (issue 9, item 3). On the real API
 * server with CloudNativePG's webhooks, through a counting proxy with the operator's ServiceAccount, the
 * ports composed as the operator composes them (the informers' caches over the Kubernetes adapters):
 * - absent: one server-side apply, answered 201, whose fields the applier owns from the start;
 * - present but not in the view: the same request fails with 409 (a conflict: the pass runs again) and
 *   changes nothing;
 * - fields pgfsm stops setting are removed by its next apply, for both field managers of the CNPG Cluster
 *   (a create by POST would have left them, owned by its `Update` entry).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, type PostgresCluster } from '../../src/operator/api/schema.ts';
import { PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import {
  CNPG_API_VERSION,
  type CnpgCluster,
  type ConfigMap,
  type KubeObject,
  type ObjectRef,
  type Pooler,
  refOf,
} from '../../src/operator/domain/objects.ts';
import { childLabels, ownerReferenceTo } from '../../src/operator/domain/vocabulary.ts';
import { readingFromCaches } from '../../src/operator/driver/cache-reads.ts';
import { allSources, type WatchSources } from '../../src/operator/driver/sources.ts';
import { kubernetesPorts } from '../../src/operator/kubernetes/index.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { GROUP, NS, setUpWorld, type World, waitFor } from './support/e2e.ts';
import { type ProxiedApi, proxyTo, tokenOf } from './support/proxy.ts';

let cp: ControlPlane;
let world: World;
let dir: string;
let api: ProxiedApi;
let sources: WatchSources;
let ports: Ports;

beforeAll(async () => {
  cp = await startControlPlane();
  // The CNPG simulator leaves this namespace alone: nothing but the test writes the children.
  world = await setUpWorld(cp, { simulatorIgnores: [NS] });
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-create-only-'));
  api = await proxyTo(cp, dir);
  const kc = api.kubeConfig(tokenOf(world.operatorKc));
  sources = createWatchSources(kc);
  for (const source of allSources(sources)) source.start();
  await waitFor('the informers to sync', async () => allSources(sources).every((s) => s.synced));
  ports = readingFromCaches(kubernetesPorts(kc, { reportingInstance: 'create-only-test' }), sources);
});

afterAll(async () => {
  if (sources) await Promise.all(allSources(sources).map((s) => s.stop()));
  api?.proxy.close();
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cnpg = { group: 'postgresql.cnpg.io', version: 'v1' };
const PLURAL: Record<string, string> = { ConfigMap: 'configmaps', Cluster: 'clusters', Pooler: 'poolers' };
const pathOf = (ref: ObjectRef) =>
  `${ref.kind === 'ConfigMap' ? '/api/v1' : '/apis/postgresql.cnpg.io/v1'}/namespaces/${ref.namespace}/${PLURAL[ref.kind]}/${ref.name}`;

/** A live PostgresCluster to own the children (the garbage collector removes children of a missing one). */
async function owner(name: string): Promise<PostgresCluster> {
  const body = { apiVersion: API_VERSION, kind: 'PostgresCluster', metadata: { name }, spec: { class: 'standard' } };
  // The create answers the object as stored, uid included.
  return (await world.custom.createNamespacedCustomObject({
    ...GROUP,
    namespace: NS,
    plural: 'postgresclusters',
    body,
  })) as PostgresCluster;
}

const configMap = (by: PostgresCluster, name: string, data: Record<string, string>): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: NS, labels: childLabels(by.metadata.name), ownerReferences: [ownerReferenceTo(by)] },
  data,
});

const cnpgCluster = (by: PostgresCluster, name: string, spec: Partial<CnpgCluster['spec']>): CnpgCluster => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Cluster',
  metadata: { name, namespace: NS, labels: childLabels(by.metadata.name), ownerReferences: [ownerReferenceTo(by)] },
  spec: { instances: 1, storage: { size: '1Gi' }, ...spec },
});

const rolesOnly = (name: string, roles: NonNullable<CnpgCluster['spec']['managed']>['roles']): CnpgCluster => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Cluster',
  metadata: { name, namespace: NS },
  spec: { managed: { roles } },
});

const pooler = (by: PostgresCluster, name: string): Pooler => ({
  apiVersion: CNPG_API_VERSION,
  kind: 'Pooler',
  metadata: { name, namespace: NS, ownerReferences: [ownerReferenceTo(by)] },
  spec: { cluster: { name: by.metadata.name }, type: 'rw', instances: 1, pgbouncer: { poolMode: 'transaction' } },
});

/** The object as stored, read by the admin (not through the proxy), with its managedFields. */
async function stored(ref: ObjectRef): Promise<Record<string, unknown> & { metadata: Record<string, unknown> }> {
  const raw =
    ref.kind === 'ConfigMap'
      ? await world.core.readNamespacedConfigMap({ namespace: ref.namespace, name: ref.name })
      : await world.custom.getNamespacedCustomObject({
          ...cnpg,
          plural: PLURAL[ref.kind] ?? '',
          namespace: ref.namespace,
          name: ref.name,
        });
  return JSON.parse(JSON.stringify(raw));
}

const managers = async (ref: ObjectRef) =>
  ((await stored(ref)).metadata.managedFields as { manager: string; operation: string }[])
    .map((f) => `${f.manager}/${f.operation}`)
    .sort();

/** The requests `write` sent for the object at `ref` (its own URL, not a list or watch), with their answers. */
async function requestsFor(ref: ObjectRef, write: () => Promise<unknown>) {
  const from = api.proxy.log.length;
  let error: unknown;
  await write().catch((e: unknown) => {
    error = e;
  });
  const path = pathOf(ref);
  const requests = api.proxy.log
    .slice(from)
    .filter((r) => r.path.split('?')[0] === path)
    .map((r) => `${r.method} ${r.outcome}`);
  return { requests, error };
}

/** Until the pass's view (the caches) holds the object at the version it is stored at. */
async function inView(port: { get(ref: ObjectRef): Promise<KubeObject | undefined> }, ref: ObjectRef) {
  const version = (await stored(ref)).metadata.resourceVersion;
  await waitFor(`${ref.kind} ${ref.name} at ${String(version)} in the caches`, async () =>
    (await port.get(ref))?.metadata.resourceVersion === version ? true : undefined,
  );
}

describe('a child the pass saw absent', () => {
  it('is created by one server-side apply, with no read before it, its fields owned by the applier', async () => {
    const by = await owner('fresh');
    const children: Array<[KubeObject, () => Promise<unknown>, () => Promise<unknown>]> = [
      [
        configMap(by, 'fresh-endpoints', { host: 'fresh-rw' }),
        () => ports.configMaps.get(ref('ConfigMap', 'fresh-endpoints')),
        () => ports.configMaps.apply(configMap(by, 'fresh-endpoints', { host: 'fresh-rw' })),
      ],
      [
        cnpgCluster(by, 'fresh', {}),
        () => ports.cnpgClusters.get(ref('Cluster', 'fresh')),
        () => ports.cnpgClusters.apply(cnpgCluster(by, 'fresh', {}), 'cluster'),
      ],
      [
        pooler(by, 'fresh-pooler-rw'),
        () => ports.poolers.get(ref('Pooler', 'fresh-pooler-rw')),
        () => ports.poolers.apply(pooler(by, 'fresh-pooler-rw')),
      ],
    ];
    for (const [child, observe, write] of children) {
      const at = refOf(child);
      // The pass sees it absent (from the caches: no request either).
      const seen = await requestsFor(at, observe);
      expect(seen.requests, child.kind).toEqual([]);
      const { requests, error } = await requestsFor(at, write);
      expect(error, child.kind).toBeUndefined();
      expect(requests, child.kind).toEqual(['PATCH 201']);
      expect(await managers(at), child.kind).toEqual(['pgfsm/Apply']);
      expect((await stored(at)).metadata.ownerReferences, child.kind).toEqual([ownerReferenceTo(by)]);
    }
  });
});

describe('a child that exists but was not in the view', () => {
  it('makes the write fail as a conflict, by the write itself, and leaves the object as it was', async () => {
    const ours = await owner('late');
    const theirs = await owner('early');
    // The pass sees all three absent; then they appear, each held by someone else in its own way.
    expect(await ports.configMaps.get(ref('ConfigMap', 'late-endpoints'))).toBeUndefined();
    expect(await ports.cnpgClusters.get(ref('Cluster', 'late'))).toBeUndefined();
    expect(await ports.poolers.get(ref('Pooler', 'late-pooler-rw'))).toBeUndefined();
    // Nobody's: a ConfigMap a person made, without the adoption marker.
    await world.core.createNamespacedConfigMap({
      namespace: NS,
      body: { metadata: { name: 'late-endpoints' }, data: { host: 'theirs' } },
    });
    // Another PostgresCluster's CNPG Cluster, applied by pgfsm itself (same field manager).
    await kubernetesPorts(world.admin).cnpgClusters.apply(cnpgCluster(theirs, 'late', { instances: 3 }), 'cluster');
    // An orphaned Pooler.
    await world.custom.createNamespacedCustomObject({
      ...cnpg,
      plural: 'poolers',
      namespace: NS,
      body: { ...pooler(theirs, 'late-pooler-rw'), metadata: { name: 'late-pooler-rw', namespace: NS } },
    });

    const writes: Array<[ObjectRef, () => Promise<unknown>]> = [
      [
        ref('ConfigMap', 'late-endpoints'),
        () => ports.configMaps.apply(configMap(ours, 'late-endpoints', { host: 'late-rw' })),
      ],
      [ref('Cluster', 'late'), () => ports.cnpgClusters.apply(cnpgCluster(ours, 'late', { instances: 1 }), 'cluster')],
      [ref('Pooler', 'late-pooler-rw'), () => ports.poolers.apply(pooler(ours, 'late-pooler-rw'))],
    ];
    for (const [at, write] of writes) {
      const before = await stored(at);
      const { requests, error } = await requestsFor(at, write);
      expect(requests, at.kind).toEqual(['PATCH 409']);
      expect(error, at.kind).toBeInstanceOf(PortError);
      expect((error as PortError).errorClass, at.kind).toBe('conflict');
      expect((error as PortError).message, at.kind).toContain('(only if absent): HTTP 409 Conflict');
      const after = await stored(at);
      expect(after.metadata.resourceVersion, at.kind).toBe(before.metadata.resourceVersion);
      expect(after.metadata.ownerReferences, at.kind).toEqual(before.metadata.ownerReferences);
      expect(after.data ?? after.spec, at.kind).toEqual(before.data ?? before.spec);
    }
  });
});

describe('fields pgfsm stops setting', () => {
  it('are removed by its next apply, for the ConfigMap and for both field managers of the CNPG Cluster', async () => {
    const by = await owner('shrinking');
    const endpoints = ref('ConfigMap', 'shrinking-endpoints');
    await ports.configMaps.apply(configMap(by, endpoints.name, { host: 'a', poolerHost: 'b' }));
    await inView(ports.configMaps, endpoints);
    await ports.configMaps.apply(configMap(by, endpoints.name, { host: 'a' }));
    expect((await stored(endpoints)).data).toEqual({ host: 'a' });

    const target = ref('Cluster', 'shrinking');
    const parameters = { max_connections: '100', work_mem: '4MB' };
    const image = 'ghcr.io/cloudnative-pg/postgresql:17';
    await ports.cnpgClusters.apply(
      cnpgCluster(by, 'shrinking', { imageName: image, postgresql: { parameters } }),
      'cluster',
    );
    await inView(ports.cnpgClusters, target);
    await ports.cnpgClusters.apply(rolesOnly('shrinking', [{ name: 'app' }, { name: 'report' }]), 'managedRoles');
    expect(await managers(target)).toEqual(['pgfsm-roles/Apply', 'pgfsm/Apply']);

    await inView(ports.cnpgClusters, target);
    await ports.cnpgClusters.apply(
      cnpgCluster(by, 'shrinking', { postgresql: { parameters: { max_connections: '100' } } }),
      'cluster',
    );
    const spec = (await stored(target)).spec as CnpgCluster['spec'];
    expect(spec.postgresql?.parameters).not.toHaveProperty('work_mem');
    // CNPG's webhook defaults the image: what remains is its default, not ours.
    expect(spec.imageName).not.toBe(image);
    expect(spec.managed?.roles?.map((r) => r.name)).toEqual(['app', 'report']);

    await inView(ports.cnpgClusters, target);
    await ports.cnpgClusters.apply(rolesOnly('shrinking', [{ name: 'app' }]), 'managedRoles');
    const after = (await stored(target)).spec as CnpgCluster['spec'];
    expect(after.managed?.roles?.map((r) => r.name)).toEqual(['app']);
    expect(after.postgresql?.parameters).toMatchObject({ max_connections: '100' });
  });
});

function ref(kind: string, name: string): ObjectRef {
  return { apiVersion: kind === 'ConfigMap' ? 'v1' : CNPG_API_VERSION, kind, namespace: NS, name };
}
