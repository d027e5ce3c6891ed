/**
 * The resilient informer against a real kube-apiserver. A TCP proxy between the informer and the API
 * server injects the network faults client-node 1.4.0's own informer dies of: connections reset in the
 * middle of a watch, connections refused for a while, and a connection that stays open but goes silent.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigMap, KubeObject } from '../../src/operator/domain/objects.ts';
import { ADOPT_ANNOTATION } from '../../src/operator/domain/vocabulary.ts';
import { DatabaseSecretIndex, databasesFor } from '../../src/operator/driver/database-mapping.ts';
import { clustersFor } from '../../src/operator/driver/mapping.ts';
import { allSources, type SourceEvent, type WatchSources } from '../../src/operator/driver/sources.ts';
import { HttpStatusError, Informer, type InformerOptions } from '../../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../../src/operator/kubernetes/resources.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  postgresClusterClassCrd,
  postgresClusterCrd,
  postgresDatabaseCrd,
} from '../../src/tools/generate/crd-manifests.ts';

/** A TCP proxy to the API server whose connections the test can reset, refuse or freeze. */
class FaultyProxy {
  private readonly server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly frozen = new Set<[Socket, Socket]>();
  refusing = false;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = tcpConnect(target.port, target.host);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  get connections(): number {
    return this.pairs.size;
  }

  /** Resets every open connection, as a load balancer or a node restart would. */
  resetAll(): void {
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Existing connections stay open but carry nothing more: a half-dead watch that reports no error. */
  freezeAll(): void {
    for (const pair of this.pairs) {
      const [client, upstream] = pair;
      upstream.unpipe(client);
      client.unpipe(upstream);
      this.frozen.add(pair);
    }
    this.pairs.clear();
  }

  close(): Promise<void> {
    this.resetAll();
    for (const [client, upstream] of this.frozen) {
      client.destroy();
      upstream.destroy();
    }
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let controlPlane: ControlPlane | undefined;
let proxy: FaultyProxy;
let proxied: KubeConfig;
const informers: Array<{ stop(): Promise<void> }> = [];

const cp = () => {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane;
};

/** The admin kubeconfig, pointed at the proxy instead of the API server. */
function throughProxy(kc: KubeConfig, port: number): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return copy;
}

beforeAll(async () => {
  controlPlane = await startControlPlane();
  const url = new URL(controlPlane.url);
  proxy = new FaultyProxy({ host: url.hostname, port: Number(url.port) });
  await proxy.listen();
  proxied = throughProxy(controlPlane.kubeConfig, proxy.port);
});

afterEach(async () => {
  proxy.refusing = false;
  await Promise.all(informers.splice(0).map((i) => i.stop()));
});

afterAll(async () => {
  await proxy?.close();
  await controlPlane?.stop();
});

const suffix = Date.now().toString(36);
let namespaces = 0;
async function namespace(): Promise<string> {
  const name = `inf-${suffix}-${++namespaces}`;
  await cp()
    .kubeConfig.makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } });
  return name;
}

const quick = { backoffBaseMs: 100, backoffMaxMs: 400 };

function configMapInformer(ns: string, options: Partial<InformerOptions<ConfigMap>> = {}, kc = proxied) {
  const informer = new Informer<ConfigMap>(kc, {
    resource: RESOURCES.configMaps,
    namespace: ns,
    ...quick,
    ...options,
  });
  const events: SourceEvent<ConfigMap>[] = [];
  informer.on((e) => events.push(e));
  informers.push(informer);
  return { informer, events };
}

const summary = (events: SourceEvent[]) =>
  events.map((e) => `${e.type}:${e.object.metadata.name}${e.old ? `<-${e.old.metadata.resourceVersion}` : ''}`);

const poll = { timeout: 30_000, interval: 50 };

describe('Informer on a real API server', () => {
  it('lists, is synced, and reports add, update (with the old object) and delete', async () => {
    const ns = await namespace();
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'before' }, data: { a: '1' } } });
    const { informer, events } = configMapInformer(ns);
    expect(informer.synced).toBe(false);
    expect(informer.fresh()).toBe(false);
    informer.start();
    await expect.poll(() => informer.synced, poll).toBe(true);
    expect(informer.fresh()).toBe(true);
    expect(informer.get(ns, 'before')?.data).toEqual({ a: '1' });
    // Items of a list carry no kind; the cache fills it in.
    expect(informer.get(ns, 'before')).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
    expect(summary(events)).toContain('add:before');

    const created = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'live' }, data: { a: '1' } },
    });
    await expect.poll(() => informer.get(ns, 'live')?.data, poll).toEqual({ a: '1' });
    await core.replaceNamespacedConfigMap({
      name: 'live',
      namespace: ns,
      body: { metadata: { name: 'live', resourceVersion: created.metadata?.resourceVersion }, data: { a: '2' } },
    });
    await expect.poll(() => informer.get(ns, 'live')?.data, poll).toEqual({ a: '2' });
    const update = events.find((e) => e.type === 'update' && e.object.metadata.name === 'live');
    expect(update?.old?.data).toEqual({ a: '1' });
    expect(update?.object.data).toEqual({ a: '2' });

    await core.deleteNamespacedConfigMap({ name: 'live', namespace: ns });
    await expect.poll(() => informer.get(ns, 'live'), poll).toBeUndefined();
    expect(events.at(-1)).toMatchObject({ type: 'delete', object: { metadata: { name: 'live' } } });
    expect(informer.list(ns).map((c) => c.metadata.name)).toEqual(['before']);
    expect(informer.stats.failures).toBe(0);
  });

  it('recovers from reset connections and a refused period, and relists what it missed', async () => {
    const ns = await namespace();
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'doomed' } } });
    const { informer, events } = configMapInformer(ns);
    informer.start();
    await expect.poll(() => informer.synced, poll).toBe(true);
    expect(informer.stats.lists).toBe(1);
    await expect.poll(() => informer.stats.watches, poll).toBe(1);

    // The network goes away: open connections are reset and new ones refused.
    proxy.refusing = true;
    proxy.resetAll();
    await expect.poll(() => informer.stats.failures, poll).toBeGreaterThanOrEqual(2);
    // Meanwhile the world changes.
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'while-down' } } });
    await core.deleteNamespacedConfigMap({ name: 'doomed', namespace: ns });

    proxy.refusing = false;
    await expect.poll(() => informer.get(ns, 'while-down')?.metadata.name, poll).toBe('while-down');
    await expect.poll(() => informer.get(ns, 'doomed'), poll).toBeUndefined();
    expect(informer.stats.lists).toBeGreaterThanOrEqual(2);
    // The deletion it could not watch is still reported, from the relist.
    expect(summary(events)).toEqual(expect.arrayContaining(['add:doomed', 'add:while-down', 'delete:doomed']));
    expect(informer.fresh()).toBe(true);

    // And it keeps watching afterwards.
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after' } } });
    await expect.poll(() => informer.get(ns, 'after')?.metadata.name, poll).toBe('after');
  });

  it('backs off between failed attempts instead of hammering the server', async () => {
    const ns = await namespace();
    proxy.refusing = true;
    const { informer } = configMapInformer(ns, { backoffBaseMs: 200, backoffMaxMs: 800 });
    informer.start();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    // 0.2 + 0.4 + 0.8 + 0.8… s with ±20 % jitter: at most six attempts in 3 s, not thousands.
    expect(informer.stats.failures).toBeGreaterThanOrEqual(3);
    expect(informer.stats.failures).toBeLessThanOrEqual(7);
    expect(informer.synced).toBe(false);
    proxy.refusing = false;
    await expect.poll(() => informer.synced, poll).toBe(true);
  });

  it('reconnects when the watch goes silent, and is not fresh while it is', async () => {
    const ns = await namespace();
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    const { informer } = configMapInformer(ns, { silentAfterMs: 2_000 });
    informer.start();
    await expect.poll(() => informer.stats.watches, poll).toBeGreaterThanOrEqual(1);
    // Keep the open watch connected but deaf; new connections still work.
    proxy.freezeAll();
    const frozenAt = Date.now();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'unheard' } } });
    await expect.poll(() => informer.stats.silentRestarts, poll).toBeGreaterThanOrEqual(1);
    expect(Date.now() - frozenAt).toBeGreaterThanOrEqual(1_500);
    await expect.poll(() => informer.get(ns, 'unheard')?.metadata.name, poll).toBe('unheard');
    expect(informer.fresh()).toBe(true);

    // Cut off for longer than the silence limit, it stops being fresh (readiness fails), and recovers.
    proxy.refusing = true;
    proxy.resetAll();
    await expect.poll(() => informer.fresh(), poll).toBe(false);
    expect(informer.synced).toBe(true);
    proxy.refusing = false;
    await expect.poll(() => informer.fresh(), poll).toBe(true);
  });

  it('filters by label server-side; an object losing its label is a delete', async () => {
    const ns = await namespace();
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    const labels = { 'app.kubernetes.io/managed-by': 'pgfsm' };
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'ours', labels } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'theirs' } } });
    const { informer, events } = configMapInformer(ns, { labelSelector: 'app.kubernetes.io/managed-by=pgfsm' });
    informer.start();
    await expect.poll(() => informer.synced, poll).toBe(true);
    expect(informer.list().map((c) => c.metadata.name)).toEqual(['ours']);
    await core.patchNamespacedConfigMap(
      { name: 'ours', namespace: ns, body: [{ op: 'remove', path: '/metadata/labels' }] },
      undefined,
    );
    await expect.poll(() => informer.get(ns, 'ours'), poll).toBeUndefined();
    expect(summary(events)).toEqual(['add:ours', 'delete:ours']);
  });

  it('metadata-only: Secret values never reach the cache, yet changes still arrive', async () => {
    const ns = await namespace();
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'role-password' }, stringData: { username: 'app', password: 'hunter2' } },
    });
    // No transform: what is cached is exactly what the server sent.
    const informer = new Informer<KubeObject>(proxied, {
      resource: RESOURCES.secrets,
      namespace: ns,
      metadataOnly: true,
      ...quick,
    });
    informers.push(informer);
    const seen: SourceEvent[] = [];
    informer.on((e) => seen.push(e));
    informer.start();
    await expect.poll(() => informer.synced, poll).toBe(true);
    const cached = informer.get(ns, 'role-password');
    expect(cached).toMatchObject({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'role-password' } });
    expect(JSON.stringify(cached)).not.toContain('aHVudGVyMg'); // base64 of hunter2
    expect(Object.keys(cached ?? {}).sort()).toEqual(['apiVersion', 'kind', 'metadata']);

    await core.patchNamespacedSecret(
      { name: 'role-password', namespace: ns, body: [{ op: 'add', path: '/data/password', value: 'bmV3' }] },
      undefined,
    );
    await expect.poll(() => seen.filter((e) => e.type === 'update').length, poll).toBe(1);
    expect(JSON.stringify(seen)).not.toContain('bmV3');
  });

  it('reports a resource the server does not know as an error and keeps retrying', async () => {
    const warnings: string[] = [];
    const log = { debug: () => {}, warn: (fields: object) => warnings.push(JSON.stringify(fields)) };
    const logged = new Informer<KubeObject>(proxied, {
      resource: { apiVersion: 'nowhere.example.com/v1', kind: 'Ghost', plural: 'ghosts', namespaced: true },
      ...quick,
      log,
    });
    informers.push(logged);
    logged.start();
    await expect.poll(() => logged.stats.failures, poll).toBeGreaterThanOrEqual(2);
    expect(logged.synced).toBe(false);
    expect(warnings[0]).toContain('404');
    expect(new HttpStatusError(404, 'x').status).toBe(404);
  });
});

describe('watch sources', () => {
  it('sync every kind the operator watches, and their events map to clusters', async () => {
    const admin = cp().kubeConfig;
    const ext = admin.makeApiClient(ApiextensionsV1Api);
    // CloudNativePG's real CRDs (Cluster, Pooler, …) come with the control plane.
    for (const crd of [postgresClusterCrd(), postgresClusterClassCrd(), postgresDatabaseCrd()]) {
      await ext.createCustomResourceDefinition({ body: crd as never });
    }
    const ns = await namespace();
    const custom = admin.makeApiClient(CustomObjectsApi);
    // The CRDs serve once established; creating objects before that fails with 404.
    await expect
      .poll(
        async () =>
          custom
            .createNamespacedCustomObject({
              group: 'pgfsm.io',
              version: 'v1alpha1',
              namespace: ns,
              plural: 'postgresclusters',
              body: {
                apiVersion: 'pgfsm.io/v1alpha1',
                kind: 'PostgresCluster',
                metadata: { name: 'orders' },
                spec: { class: 'standard' },
              },
            })
            .then(
              () => true,
              () => false,
            ),
        poll,
      )
      .toBe(true);

    const sources: WatchSources = createWatchSources(proxied, {
      namespace: ns,
      timing: { ...quick, silentAfterMs: 60_000 },
    });
    informers.push(...allSources(sources));
    for (const s of allSources(sources)) s.start();
    await expect.poll(() => allSources(sources).every((s) => s.synced && s.fresh()), poll).toBe(true);
    expect(sources.clusters.get(ns, 'orders')?.spec.class).toBe('standard');
    // Cluster-scoped classes are watched cluster-wide even with a namespace.
    expect(sources.classes.resource).toBe('postgresclusterclasses');
    expect(sources.secrets.resource).toBe(`secrets in ${ns}`);

    const woken: string[] = [];
    const lookups = {
      clusters: (n?: string) => sources.clusters.list(n),
      pooler: (n: string, name: string) => sources.poolers.get(n, name),
    };
    for (const s of allSources(sources)) {
      s.on((e) => woken.push(...clustersFor(e, lookups).map((k) => `${e.object.kind}->${k.name}`)));
    }
    const core = admin.makeApiClient(CoreV1Api);
    // A role password Secret: the user's, unlabelled. Its cluster names it.
    await custom.patchNamespacedCustomObject(
      {
        group: 'pgfsm.io',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'postgresclusters',
        name: 'orders',
        body: [
          { op: 'add', path: '/spec/managedRoles', value: [{ name: 'app', passwordSecretRef: { name: 'app-pw' } }] },
        ],
      },
      undefined,
    );
    await expect.poll(() => woken, poll).toContain('PostgresCluster->orders');
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'app-pw' }, stringData: { password: 'x' } },
    });
    await expect.poll(() => woken, poll).toContain('Secret->orders');
    expect(JSON.stringify(sources.secrets.list(ns))).not.toContain('password');
    // A status written by someone else (same generation) maps to its cluster: the controller lets only the
    // echoes of the operator's own status writes go (driver/controller.ts, echoes.ts; status-repair tests).
    const before = woken.length;
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: 'pgfsm.io',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'postgresclusters',
        name: 'orders',
        body: [{ op: 'add', path: '/status', value: { state: 'Pending', phase: 'Pending' } }],
      },
      undefined,
    );
    await expect.poll(() => sources.clusters.get(ns, 'orders')?.status?.state, poll).toBe('Pending');
    expect(woken.slice(before)).toEqual(['PostgresCluster->orders']);
    // A label edit, which no pass reads, maps to nothing.
    await custom.patchNamespacedCustomObject(
      {
        group: 'pgfsm.io',
        version: 'v1alpha1',
        namespace: ns,
        plural: 'postgresclusters',
        name: 'orders',
        body: [{ op: 'add', path: '/metadata/labels', value: { team: 'a' } }],
      },
      undefined,
    );
    await expect.poll(() => sources.clusters.get(ns, 'orders')?.metadata.labels?.team, poll).toBe('a');
    expect(woken.slice(before)).toEqual(['PostgresCluster->orders']);

    // A Secret planted under the name a PostgresDatabase's owner role will use (no owner, no label), then handed
    // over with `kubectl annotate … pgfsm.io/adopt=true`: the annotation alone wakes the database (issue 37).
    const databases: string[] = [];
    const databaseSecrets = new DatabaseSecretIndex();
    sources.databases.on((e) => databaseSecrets.update(e));
    sources.secrets.on((e) =>
      databases.push(
        ...databasesFor(e, (n) => sources.databases.list(n), databaseSecrets.using.bind(databaseSecrets)).map(
          (k) => k.name,
        ),
      ),
    );
    await custom.createNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'postgresdatabases',
      body: {
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresDatabase',
        metadata: { name: 'shop' },
        spec: { cluster: 'orders', name: 'shop', owner: 'shop_owner' },
      },
    });
    await expect.poll(() => sources.databases.get(ns, 'shop')?.spec.owner, poll).toBe('shop_owner');
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'shop-shop-owner' } } });
    await expect.poll(() => databases, poll).toEqual(['shop']);
    await core.patchNamespacedSecret({
      namespace: ns,
      name: 'shop-shop-owner',
      body: [{ op: 'add', path: '/metadata/annotations', value: { [ADOPT_ANNOTATION]: 'true' } }],
    });
    await expect.poll(() => databases, poll).toEqual(['shop', 'shop']);
  });
});
