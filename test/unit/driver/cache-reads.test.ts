/**
 * A pass reads its world from the watches' caches (src/operator/driver/cache-reads.ts): no read request
 * for what they hold, one GET per new version of what they keep as metadata only (a Secret's key names,
 * a ConfigMap's data), a fresh read of a cluster being deleted, and status writes conditional on the
 * version the pass read, so that a pass decided on a stale view conflicts instead of overwriting.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { PortError } from '../../../src/operator/core/errors.ts';
import type { Ports } from '../../../src/operator/core/ports.ts';
import type { ObjectRef } from '../../../src/operator/domain/objects.ts';
import { FINALIZER } from '../../../src/operator/domain/vocabulary.ts';
import { readingFromCaches } from '../../../src/operator/driver/cache-reads.ts';
import { OWN_WRITE_MAX_AGE_MS } from '../../../src/operator/driver/own-writes.ts';
import {
  allSources,
  type ObjectSource,
  type SourceEvent,
  type WatchSources,
} from '../../../src/operator/driver/sources.ts';
import { MemoryApiServer, type StoredObject } from '../../../src/tools/memory/api-server.ts';
import { memoryPorts } from '../../../src/tools/memory/ports.ts';
import { memoryWatchSources } from '../../../src/tools/memory/watch-sources.ts';
import { override } from '../../contract/support/faulty-ports.ts';

const clock = { now: () => 0 };
const NS = 'ns';
const ref = (kind: string, name: string, apiVersion = 'v1'): ObjectRef => ({ apiVersion, kind, namespace: NS, name });
const object = (kind: string, name: string, extra: Record<string, unknown> = {}): StoredObject =>
  ({ apiVersion: 'v1', kind, metadata: { name, namespace: NS }, ...extra }) as StoredObject;

/**
 * The memory ports with every read counted: what the API would be asked. `watched` may change what the
 * watches show (one that lags).
 */
function world(watched: (sources: WatchSources) => WatchSources = (sources) => sources) {
  const api = new MemoryApiServer();
  const fresh = memoryPorts(api, clock);
  const reads: string[] = [];
  const count =
    <T>(what: string, get: (r: ObjectRef) => Promise<T>) =>
    (r: ObjectRef) => {
      reads.push(`${what} ${r.name}`);
      return get(r);
    };
  const counted: Ports = {
    ...fresh,
    clusters: {
      ...fresh.clusters,
      get: (key) => {
        reads.push(`PostgresCluster ${key.name}`);
        return fresh.clusters.get(key);
      },
    },
    classes: {
      ...fresh.classes,
      get: (name) => {
        reads.push(`PostgresClusterClass ${name}`);
        return fresh.classes.get(name);
      },
    },
    secrets: override(fresh.secrets, { get: count('Secret', (r) => fresh.secrets.get(r)) }),
    configMaps: override(fresh.configMaps, {
      get: count('ConfigMap', (r) => fresh.configMaps.get(r)),
    }),
  };
  const sources = memoryWatchSources(api, clock);
  for (const source of allSources(sources)) source.start();
  return { api, reads, ports: readingFromCaches(counted, watched(sources)) };
}

const cluster = (extra: Record<string, unknown> = {}) =>
  object('PostgresCluster', 'db', { apiVersion: 'pgfsm.io/v1alpha1', spec: { instances: 1 }, ...extra });

describe('reads from the caches', () => {
  it('serve the cluster, its children and the poolers’ readiness without asking the API', async () => {
    const { api, reads, ports } = world();
    api.create(cluster());
    api.create(object('Cluster', 'db', { apiVersion: 'postgresql.cnpg.io/v1', spec: {} }));
    const pooler = api.create(object('Pooler', 'db-pooler-rw', { apiVersion: 'postgresql.cnpg.io/v1', spec: {} }));
    api.create({
      ...object('Deployment', 'db-pooler-rw', { apiVersion: 'apps/v1', status: { readyReplicas: 2 } }),
      metadata: {
        name: 'db-pooler-rw',
        namespace: NS,
        labels: { 'cnpg.io/poolerName': 'db-pooler-rw' },
        ownerReferences: [
          { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Pooler', name: 'db-pooler-rw', uid: pooler.metadata.uid ?? '' },
        ],
      },
    } as StoredObject);
    expect((await ports.clusters.get({ namespace: NS, name: 'db' }))?.spec).toEqual({ instances: 1 });
    expect(await ports.cnpgClusters.get(ref('Cluster', 'db', 'postgresql.cnpg.io/v1'))).toBeDefined();
    expect((await ports.poolers.view(ref('Pooler', 'db-pooler-rw')))?.readyReplicas).toBe(2);
    expect(await ports.poolers.view(ref('Pooler', 'db-pooler-ro'))).toBeUndefined();
    expect(await ports.configMaps.get(ref('ConfigMap', 'db-endpoints'))).toBeUndefined();
    expect(await ports.secrets.get(ref('Secret', 'db-superuser'))).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('hand out copies: a caller changing what it read cannot change the cache', async () => {
    const { api, ports } = world();
    api.create(cluster());
    const read = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    read.spec.instances = 5;
    expect((await ports.clusters.get({ namespace: NS, name: 'db' }))?.spec.instances).toBe(1);
  });

  it('read a Secret’s key names and a ConfigMap’s data once per resourceVersion', async () => {
    const { api, reads, ports } = world();
    api.create(object('Secret', 's', { data: { password: 'cA==' } }));
    api.create(object('ConfigMap', 'db-endpoints', { data: { host: 'a' } }));
    expect((await ports.secrets.get(ref('Secret', 's')))?.keys).toEqual(['password']);
    expect((await ports.secrets.get(ref('Secret', 's')))?.keys).toEqual(['password']);
    expect((await ports.configMaps.get(ref('ConfigMap', 'db-endpoints')))?.data).toEqual({ host: 'a' });
    expect((await ports.configMaps.get(ref('ConfigMap', 'db-endpoints')))?.data).toEqual({ host: 'a' });
    expect(reads).toEqual(['Secret s', 'ConfigMap db-endpoints']);
    const live = api.get({ kind: 'ConfigMap', namespace: NS, name: 'db-endpoints' }) as StoredObject;
    api.put({ ...live, data: { host: 'b' } } as StoredObject);
    expect((await ports.configMaps.get(ref('ConfigMap', 'db-endpoints')))?.data).toEqual({ host: 'b' });
    expect(reads).toEqual(['Secret s', 'ConfigMap db-endpoints', 'ConfigMap db-endpoints']);
    api.delete({ kind: 'Secret', namespace: NS, name: 's' });
    expect(await ports.secrets.get(ref('Secret', 's'))).toBeUndefined();
    expect(reads).toHaveLength(3);
  });

  it('remember what a create or an apply answered: no read for the version the write led to', async () => {
    const { reads, ports } = world();
    const owner = { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', name: 'db', uid: 'u', controller: true };
    await ports.secrets.create({ ref: ref('Secret', 'db-superuser'), username: 'postgres', labels: {}, owner });
    expect((await ports.secrets.get(ref('Secret', 'db-superuser')))?.keys).toEqual(['password', 'username']);
    await ports.configMaps.apply(object('ConfigMap', 'db-endpoints', { data: { host: 'a' } }) as never);
    expect((await ports.configMaps.get(ref('ConfigMap', 'db-endpoints')))?.data).toEqual({ host: 'a' });
    expect(reads).toEqual([]);
  });

  it('read a class the cache does not show afresh: a class applied just before its cluster may not be there yet', async () => {
    const standard = {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresClusterClass',
      metadata: { name: 'standard' },
      spec: { instances: 3 },
    } as StoredObject;
    // The classes' watch lags: it shows nothing yet.
    const lagging = world((sources) => ({ ...sources, classes: { ...sources.classes, get: () => undefined } }));
    lagging.api.create(standard);
    expect((await lagging.ports.classes.get('standard'))?.spec).toEqual({ instances: 3 });
    expect(await lagging.ports.classes.get('absent')).toBeUndefined();
    expect(lagging.reads).toEqual(['PostgresClusterClass standard', 'PostgresClusterClass absent']);
    // Once the cache holds it, no read.
    const { api, reads, ports } = world();
    api.create(standard);
    expect((await ports.classes.get('standard'))?.spec).toEqual({ instances: 3 });
    expect(reads).toEqual([]);
  });

  it('read a cluster being deleted afresh: its deletion policy must be the current one', async () => {
    const { api, reads, ports } = world();
    api.create(cluster({ metadata: { name: 'db', namespace: NS, finalizers: ['pgfsm.io/cleanup'] } }));
    await ports.clusters.get({ namespace: NS, name: 'db' });
    expect(reads).toEqual([]);
    api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'db' });
    expect((await ports.clusters.get({ namespace: NS, name: 'db' }))?.metadata.deletionTimestamp).toBeDefined();
    expect(reads).toEqual(['PostgresCluster db']);
  });
});

describe('status writes', () => {
  it('conflict when the cluster moved on since the pass read it; a finalizer write answers the version it led to', async () => {
    const { api, ports } = world();
    api.create(cluster());
    const read = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    const moved = await ports.clusters.addFinalizer(read, 'pgfsm.io/cleanup');
    expect(moved).not.toBe(read.metadata.resourceVersion);
    // Written against the version the pass's own finalizer write led to, the status goes through.
    const after = { ...read, metadata: { ...read.metadata, resourceVersion: moved } };
    await ports.clusters.writeStatus(after, { state: 'Pending' } as PostgresCluster['status'] & object);
    expect(api.get<PostgresCluster>({ kind: 'PostgresCluster', namespace: NS, name: 'db' })?.status).toEqual({
      state: 'Pending',
    });
    // Against the version read before those writes, it conflicts: it must not overwrite them.
    for (const stale of [read, after]) {
      const error = await ports.clusters
        .writeStatus(stale, { state: 'Provisioning.Secret' } as PostgresCluster['status'] & object)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PortError);
      expect((error as PortError).errorClass).toBe('conflict');
    }
  });
});

describe('applies', () => {
  it('carry the version the pass saw, and none for one it saw absent or a second apply in the pass', async () => {
    const { api } = world();
    const applied: unknown[] = [];
    // The same caches over ports that record what each apply was handed.
    const base = memoryPorts(api, clock);
    const sources = memoryWatchSources(api, clock);
    for (const source of allSources(sources)) source.start();
    const ports = readingFromCaches(
      {
        ...base,
        configMaps: override(base.configMaps, {
          apply: async (_object, seen) => {
            applied.push(seen);
            return undefined;
          },
        }),
      },
      sources,
    );
    const live = api.create(object('ConfigMap', 'db-endpoints', { data: { host: 'a' } }));
    const desired = object('ConfigMap', 'db-endpoints', { data: { host: 'b' } }) as never;
    await ports.configMaps.get(ref('ConfigMap', 'db-endpoints'));
    await ports.configMaps.apply(desired);
    await ports.configMaps.apply(desired);
    await ports.configMaps.get(ref('ConfigMap', 'other'));
    await ports.configMaps.apply(object('ConfigMap', 'other') as never);
    // A sighting goes with its object: one deleted after the pass saw it is handed none (created only if absent).
    await ports.configMaps.get(ref('ConfigMap', 'db-endpoints'));
    api.delete({ kind: 'ConfigMap', namespace: NS, name: 'db-endpoints' });
    await ports.configMaps.apply(desired);
    expect(applied).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ resourceVersion: live.metadata.resourceVersion }),
      }),
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('a pass after a status write its watch has not delivered yet', () => {
  /** The clusters' source held back: it shows what it was last told, as a watch that lags. */
  function lagging() {
    const { api, ports: _unused, ...rest } = world();
    const sources = memoryWatchSources(api, clock);
    for (const source of allSources(sources)) source.start();
    let held: PostgresCluster | undefined;
    const listeners: Array<(event: { type: 'add' | 'update' | 'delete'; object: PostgresCluster }) => void> = [];
    const clusters = {
      ...sources.clusters,
      get: () => held,
      on: (listener: (typeof listeners)[number]) => {
        listeners.push(listener);
        return () => {};
      },
    };
    const ports = readingFromCaches(memoryPorts(api, clock), { ...sources, clusters });
    const deliver = () => {
      held = api.get<PostgresCluster>({ kind: 'PostgresCluster', namespace: NS, name: 'db' });
      for (const listener of listeners) if (held) listener({ type: 'update', object: held });
    };
    return { api, ports, deliver, ...rest };
  }

  it('reads the cluster as that write left it, and the cache again once it has caught up', async () => {
    const { api, ports, deliver } = lagging();
    api.create(cluster());
    deliver();
    const before = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    await ports.clusters.writeStatus(before, { state: 'Provisioning.Secret' } as PostgresCluster['status'] & object);
    // The watch has not delivered the write: the next pass still starts from it, not from the version before.
    const next = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    expect(next.status?.state).toBe('Provisioning.Secret');
    expect(next.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
    // So its own status write is not refused as a conflict.
    await ports.clusters.writeStatus(next, { state: 'Provisioning.Cluster' } as PostgresCluster['status'] & object);
    // Someone else changes the object; once the cache shows it, the cache is what a pass reads.
    const stored = api.get<StoredObject>({ kind: 'PostgresCluster', namespace: NS, name: 'db' }) as StoredObject;
    api.update({ ...stored, metadata: { ...stored.metadata, labels: { team: 'a' } } });
    deliver();
    const caughtUp = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    expect(caughtUp.metadata.labels).toEqual({ team: 'a' });
    expect(caughtUp.status?.state).toBe('Provisioning.Cluster');
  });

  it('reads the finalizer it added, so that the next pass does not go back to Pending on a cache behind it', async () => {
    const { api, ports, deliver } = lagging();
    api.create(cluster({ status: { state: 'Pending' } }));
    deliver();
    const before = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    const version = await ports.clusters.addFinalizer(before, FINALIZER);
    expect(version).toBeDefined();
    // The watch has not delivered the write: the next pass reads the cluster at that version, the rest as read.
    const next = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    expect(next.metadata.finalizers).toEqual([FINALIZER]);
    expect(next.metadata.resourceVersion).toBe(version);
    expect(next.status?.state).toBe('Pending');
    // Exactly the stored object: a status write conditional on its version goes through.
    await ports.clusters.writeStatus(next, { state: 'Provisioning.Secret' } as PostgresCluster['status'] & object);
    // Taken away again, once the watch has delivered it: the next read shows it gone.
    deliver();
    const withStatus = (await ports.clusters.get({ namespace: NS, name: 'db' })) as PostgresCluster;
    await ports.clusters.removeFinalizer(withStatus, FINALIZER);
    expect((await ports.clusters.get({ namespace: NS, name: 'db' }))?.metadata.finalizers).toEqual([]);
  });
});

describe('a pass after a child write its watch has not delivered yet', () => {
  /** The ConfigMaps' source held back: it shows only what `deliver` last told it, as a watch that lags. */
  function laggingConfigMaps() {
    const api = new MemoryApiServer();
    const sources = memoryWatchSources(api, clock);
    for (const source of allSources(sources)) source.start();
    const shown = new Map<string, StoredObject>();
    const listeners: Array<(event: SourceEvent) => void> = [];
    const configMaps: ObjectSource = {
      ...sources.configMaps,
      get: (_namespace, name) => shown.get(name),
      list: () => [...shown.values()],
      on: (listener) => {
        listeners.push(listener);
        return () => {};
      },
    };
    const reads: string[] = [];
    const fresh = memoryPorts(api, clock);
    const counted: Ports = {
      ...fresh,
      configMaps: override(fresh.configMaps, {
        get: (r) => {
          reads.push(r.name);
          return fresh.configMaps.get(r);
        },
      }),
    };
    const ports = readingFromCaches(counted, { ...sources, configMaps });
    const deliver = (name: string) => {
      const stored = api.get<StoredObject>({ kind: 'ConfigMap', namespace: NS, name });
      const before = shown.get(name);
      if (!stored) {
        if (!before) return;
        shown.delete(name);
        for (const listener of listeners) listener({ type: 'delete', object: before });
        return;
      }
      shown.set(name, stored);
      for (const listener of listeners) listener({ type: before ? 'update' : 'add', object: stored, old: before });
    };
    return { api, ports, deliver, reads };
  }
  const endpoints = object('ConfigMap', 'db-endpoints', { data: { host: 'db-rw' } });
  const configMap = ref('ConfigMap', 'db-endpoints');

  it('reads the child it created as the answer left it, with no read of the API, then the cache', async () => {
    const { ports, deliver, reads } = laggingConfigMaps();
    expect(await ports.configMaps.get(configMap)).toBeUndefined();
    // The pass saw it absent: its apply creates it.
    await ports.configMaps.apply(endpoints as never);
    // The next pass, before the watch has delivered the create, reads it as created.
    expect((await ports.configMaps.get(configMap))?.data).toEqual({ host: 'db-rw' });
    expect(reads).toEqual([]);
    deliver('db-endpoints');
    expect((await ports.configMaps.get(configMap))?.data).toEqual({ host: 'db-rw' });
  });

  it('reads the update it made, not the version before, and applies conditional on it', async () => {
    const { api, ports, deliver } = laggingConfigMaps();
    api.create(endpoints);
    deliver('db-endpoints');
    await ports.configMaps.get(configMap);
    const answer = await ports.configMaps.apply({ ...endpoints, data: { host: 'db-ro' } } as never);
    const read = await ports.configMaps.get(configMap);
    expect(read?.data).toEqual({ host: 'db-ro' });
    expect(read?.metadata.resourceVersion).toBe(answer?.metadata.resourceVersion);
    // Someone else's later change, once the watch delivers it, is what the pass reads.
    api.update({ ...(api.get<StoredObject>(configMap) as StoredObject), data: { host: 'theirs' } });
    deliver('db-endpoints');
    expect((await ports.configMaps.get(configMap))?.data).toEqual({ host: 'theirs' });
  });

  it('reads a child it deleted as absent until the watch delivers the deletion', async () => {
    const { api, ports, deliver } = laggingConfigMaps();
    api.create(endpoints);
    deliver('db-endpoints');
    expect(await ports.configMaps.get(configMap)).toBeDefined();
    await ports.configMaps.delete(configMap);
    // The cache still holds it: the next pass must not delete it (and announce it) again.
    expect(await ports.configMaps.get(configMap)).toBeUndefined();
    deliver('db-endpoints');
    expect(await ports.configMaps.get(configMap)).toBeUndefined();
    // A new object of that name is read as soon as the watch shows it.
    api.create(endpoints);
    deliver('db-endpoints');
    expect(await ports.configMaps.get(configMap)).toBeDefined();
  });

  it('reads one the read-back after a lost answer found: that write may have created it', async () => {
    const { api, ports, deliver } = laggingConfigMaps();
    // The create landed but its answer was lost: the core reads it back from the API (Ports.direct).
    api.create(endpoints);
    expect(await ports.direct?.configMaps.get(configMap)).toBeDefined();
    expect((await ports.configMaps.get(configMap))?.data).toEqual({ host: 'db-rw' });
    deliver('db-endpoints');
    expect(await ports.configMaps.get(configMap)).toBeDefined();
    // A read-back that finds nothing remembers nothing.
    expect(await ports.direct?.configMaps.get(ref('ConfigMap', 'none'))).toBeUndefined();
    expect(await ports.configMaps.get(ref('ConfigMap', 'none'))).toBeUndefined();
  });

  it('serves an own write for a while only: a watch that never delivers it leaves the cache in charge', async () => {
    const { ports } = laggingConfigMaps();
    await ports.configMaps.get(configMap);
    await ports.configMaps.apply(endpoints as never);
    expect(await ports.configMaps.get(configMap)).toBeDefined();
    const now = performance.now();
    vi.spyOn(performance, 'now').mockReturnValue(now + OWN_WRITE_MAX_AGE_MS);
    expect(await ports.configMaps.get(configMap)).toBeUndefined();
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });
});
