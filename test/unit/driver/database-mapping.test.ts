/**
 * Mapping a Secret's watch event to the PostgresDatabases (and the PostgresClusters) it concerns
 * (src/operator/driver/database-mapping.ts, mapping.ts): by label, by controller reference and by name, so that a
 * Secret handed over with `pgfsm.io/adopt=true` — no owner, perhaps no label — wakes its database at once instead
 * of at the next resync (issue 37, point 2), and wakes the cluster that reads it as its role's password Secret.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../../src/operator/api/schema.ts';
import { DATABASE_LABEL } from '../../../src/operator/domain/database/vocabulary.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { ADOPT_ANNOTATION } from '../../../src/operator/domain/vocabulary.ts';
import { Controller } from '../../../src/operator/driver/controller.ts';
import { DatabaseSecretIndex, databasesFor, scanningDatabases } from '../../../src/operator/driver/database-mapping.ts';
import { clustersFor, type MappingLookups } from '../../../src/operator/driver/mapping.ts';
import { allSources, type SourceEvent } from '../../../src/operator/driver/sources.ts';
import { MemoryApiServer, type StoredObject } from '../../../src/tools/memory/api-server.ts';
import { memoryWatchSources } from '../../../src/tools/memory/watch-sources.ts';

const database = (namespace: string, name: string, spec: Record<string, unknown>): PostgresDatabase =>
  ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresDatabase',
    metadata: { namespace, name, uid: `uid-${name}`, generation: 1, resourceVersion: '1' },
    spec,
  }) as unknown as PostgresDatabase;

const databases = [
  // Two teams whose Secret names collide: shopx's app_ro and shopx-app's ro both want `shopx-app-ro`.
  database('team-a', 'shopx', { cluster: 'orders', name: 'shop', owner: 'app', users: [{ name: 'app_ro' }] }),
  database('team-a', 'shopx-app', { cluster: 'billing', name: 'other', owner: 'owner', users: [{ name: 'ro' }] }),
  database('team-b', 'shopx', { cluster: 'orders', name: 'shop', owner: 'app' }),
  // Stored with validation off: names nothing, and throws nothing.
  database('team-a', 'broken', 'x' as unknown as Record<string, unknown>),
  database('team-a', 'odd', { cluster: 'orders', owner: 7, users: [null, { name: 3 }] }),
];
const listed = (namespace: string) => databases.filter((d) => d.metadata.namespace === namespace);

const secret = (name: string, metadata: Partial<KubeObject['metadata']> = {}, namespace = 'team-a'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace, name, uid: `uid-${name}`, resourceVersion: '5', ...metadata },
});

/** The index fed every database's add event, as the controller feeds it. */
function indexed() {
  const index = new DatabaseSecretIndex();
  for (const d of databases) index.update({ type: 'add', object: d });
  return index;
}

const names = (keys: { namespace: string; name: string }[]) => keys.map((k) => `${k.namespace}/${k.name}`).sort();
const scanned = (event: SourceEvent) => names(databasesFor(event, listed));
const throughIndex = (event: SourceEvent) => {
  const index = indexed();
  return names(databasesFor(event, listed, (ns, name) => index.using(ns, name)));
};

describe('a Secret event wakes the PostgresDatabases it concerns', () => {
  it('an unowned, unlabelled Secret under a role Secret’s name: every database whose role it would be', () => {
    const planted = { type: 'add' as const, object: secret('shopx-app') };
    expect(scanned(planted)).toEqual(['team-a/shopx']);
    // `_` is `-` in the name: the collision of issue 37 wakes both teams' databases.
    expect(scanned({ type: 'add', object: secret('shopx-app-ro') })).toEqual(['team-a/shopx', 'team-a/shopx-app']);
  });

  it('the hand-over itself (`kubectl annotate … pgfsm.io/adopt=true`) wakes the database at once', () => {
    const before = secret('shopx-app');
    const annotated = secret('shopx-app', { resourceVersion: '6', annotations: { [ADOPT_ANNOTATION]: 'true' } });
    expect(scanned({ type: 'update', object: annotated, old: before })).toEqual(['team-a/shopx']);
  });

  it('its label and its controlling PostgresDatabase wake those too, whatever its name', () => {
    const labelled = secret('anything', { labels: { [DATABASE_LABEL]: 'shopx' } });
    expect(scanned({ type: 'add', object: labelled })).toEqual(['team-a/shopx']);
    const owned = secret('else', {
      ownerReferences: [
        { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresDatabase', name: 'x', uid: 'u', controller: true },
      ],
    });
    expect(scanned({ type: 'delete', object: owned })).toEqual(['team-a/x']);
  });

  it('a Secret of another namespace, or of no role’s name, wakes nothing', () => {
    expect(scanned({ type: 'add', object: secret('shopx-app-ro', {}, 'team-c') })).toEqual([]);
    expect(scanned({ type: 'add', object: secret('tls-cert') })).toEqual([]);
    expect(scanned({ type: 'add', object: secret('odd-7') })).toEqual([]);
  });

  it('the controller’s index maps as the scan does, and follows databases that change or go', () => {
    for (const name of ['shopx-app', 'shopx-app-ro', 'shopx-app-owner', 'shopx-app-app', 'tls', 'broken-x']) {
      for (const namespace of ['team-a', 'team-b']) {
        const event = { type: 'add' as const, object: secret(name, {}, namespace) };
        expect(throughIndex(event), `${namespace}/${name}`).toEqual(scanned(event));
      }
    }
    const index = indexed();
    const shopx = databases[0] as PostgresDatabase;
    const renamed = database('team-a', 'shopx', { cluster: 'orders', name: 'shop', owner: 'app', users: [] });
    index.update({ type: 'update', object: renamed, old: shopx });
    expect(names(index.using('team-a', 'shopx-app-ro'))).toEqual(['team-a/shopx-app']);
    index.update({ type: 'delete', object: renamed });
    expect(index.using('team-a', 'shopx-app')).toEqual([]);
  });

  it('scanningDatabases finds nothing in an empty namespace', () => {
    expect(scanningDatabases(listed)('team-z', 'shopx-app')).toEqual([]);
  });
});

describe('a Secret event wakes the PostgresCluster that reads it as a role’s password Secret', () => {
  const index = indexed();
  const lookups: MappingLookups = {
    clusters: () => [],
    pooler: () => undefined,
    database: (namespace, name) =>
      databases.find((d) => d.metadata.namespace === namespace && d.metadata.name === name),
    databasesUsingSecret: (namespace, name) => index.using(namespace, name),
  };
  const clusters = (object: KubeObject) => names(clustersFor({ type: 'add', object }, lookups));

  it('by name, label or controller: the cluster each such database names', () => {
    expect(clusters(secret('shopx-app'))).toEqual(['team-a/orders']);
    expect(clusters(secret('shopx-app-ro'))).toEqual(['team-a/billing', 'team-a/orders']);
    expect(clusters(secret('x', { labels: { [DATABASE_LABEL]: 'shopx-app' } }))).toEqual(['team-a/billing']);
    expect(clusters(secret('tls-cert'))).toEqual([]);
  });
});

describe('through the controller, as `pgfsm run` maps its watch events', () => {
  it('annotating a planted Secret with pgfsm.io/adopt=true wakes the database waiting for it, and its cluster', async () => {
    const api = new MemoryApiServer();
    const sources = memoryWatchSources(api, { now: () => 0 });
    const passes: string[] = [];
    const outcome = (kind: string) => async (key: { namespace: string; name: string }) => {
      passes.push(`${kind} ${key.name}`);
      return { key, found: true, requeue: { kind: 'none' as const }, statusWritten: false, writes: 0, events: [] };
    };
    const controller = new Controller({
      sources,
      reconcile: outcome('cluster'),
      reconcileDatabase: outcome('database'),
      workers: 1,
      logger: pino({ level: 'silent' }),
      resyncPeriodMs: 0,
    });
    controller.watch();
    for (const source of allSources(sources)) source.start();
    controller.startWorkers();
    api.create(databases[0] as unknown as StoredObject);
    api.create({ ...secret('shopx-app'), data: { password: 'cGxhbnRlZA==' } } as StoredObject);
    await controller.queue.whenIdle();
    passes.length = 0;
    const planted = api.get<StoredObject>({ kind: 'Secret', namespace: 'team-a', name: 'shopx-app' }) as StoredObject;
    api.update({ ...planted, metadata: { ...planted.metadata, annotations: { [ADOPT_ANNOTATION]: 'true' } } });
    await controller.queue.whenIdle();
    expect(passes.sort()).toEqual(['cluster orders', 'database shopx']);
    await controller.shutDown();
  });
});
