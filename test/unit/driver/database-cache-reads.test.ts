/**
 * A PostgresDatabase's writes are known to its cluster's pass the moment they are made
 * (src/operator/driver/database-cache-reads.ts): the connection Secrets the database's pass writes are the
 * password Secrets the cluster's pass reads, and the cluster read them from a Secrets' watch that had not caught
 * up, pushing the same roles twice (issue 37, point 5).
 */
import { describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../../src/operator/api/schema.ts';
import type { ConnectionSecretTemplate } from '../../../src/operator/domain/database/effects.ts';
import type { ObjectRef } from '../../../src/operator/domain/objects.ts';
import { ADOPT_ANNOTATION, FINALIZER } from '../../../src/operator/domain/vocabulary.ts';
import { cacheReadingPorts } from '../../../src/operator/driver/cache-reads.ts';
import { secretViewOfAnswer } from '../../../src/operator/driver/database-cache-reads.ts';
import { allSources } from '../../../src/operator/driver/sources.ts';
import { MemoryApiServer, type StoredObject } from '../../../src/tools/memory/api-server.ts';
import { memoryPorts } from '../../../src/tools/memory/ports.ts';
import { memoryWatchSources } from '../../../src/tools/memory/watch-sources.ts';
import { simulatedDatabasePorts } from '../../../src/tools/simulation/database-ports.ts';
import { override } from '../../contract/support/faulty-ports.ts';

const NS = 'ns';
const clock = { now: () => 0 };
const secretRef: ObjectRef = { apiVersion: 'v1', kind: 'Secret', namespace: NS, name: 'shop-app' };
const owner = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresDatabase',
  name: 'shop',
  uid: 'db-uid',
  controller: true,
};
const template: ConnectionSecretTemplate = {
  ref: secretRef,
  username: 'app',
  host: 'db-rw',
  port: '5432',
  dbname: 'shop',
  labels: { 'pgfsm.io/database': 'shop' },
  owner,
};

/**
 * The ports as `pgfsm run` composes them, over watches that deliver nothing until `deliver()`: a lag as long as
 * the test wants. `reads` counts what the cluster's Secret reads ask of the API.
 */
function world() {
  const api = new MemoryApiServer();
  const held: Array<() => void> = [];
  const lag = { timers: { setTimeout: (fn: () => void) => held.push(fn) }, delayMs: () => 1 };
  const sources = memoryWatchSources(api, clock, lag);
  for (const source of allSources(sources)) source.start();
  const fresh = memoryPorts(api, clock);
  const reads: string[] = [];
  const counted = {
    ...fresh,
    secrets: override(fresh.secrets, {
      get: (r) => {
        reads.push(r.name);
        return fresh.secrets.get(r);
      },
    }),
  };
  const { ports, databasePorts } = cacheReadingPorts(counted, sources, simulatedDatabasePorts(api, fresh));
  if (!databasePorts) throw new Error('no database ports');
  const deliver = () => {
    for (const observe of held.splice(0)) observe();
  };
  return { api, ports, databasePorts, reads, deliver };
}

describe("a database's connection Secret, read by its cluster's pass before the watch delivers it", () => {
  it('reads as the apply answered it (key names only), with no read of the API', async () => {
    const { ports, databasePorts, reads, deliver } = world();
    expect(await ports.secrets.get(secretRef)).toBeUndefined();
    await databasePorts.connectionSecrets.apply(template);
    const seen = await ports.secrets.get(secretRef);
    expect(seen?.keys).toEqual(expect.arrayContaining(['password', 'uri', 'username']));
    expect(seen).not.toHaveProperty('values');
    expect(reads).toEqual([]);
    deliver();
    expect((await ports.secrets.get(secretRef))?.metadata.resourceVersion).toBe(seen?.metadata.resourceVersion);
  });

  it('reads as released (no owner, handed over) and then as deleted, each before the watch says so', async () => {
    const { ports, databasePorts, deliver } = world();
    await databasePorts.connectionSecrets.apply(template);
    deliver();
    await databasePorts.connectionSecrets.releaseOwner(secretRef, owner.uid);
    const released = await ports.secrets.get(secretRef);
    expect(released?.metadata.ownerReferences).toEqual([]);
    expect(released?.metadata.annotations?.[ADOPT_ANNOTATION]).toBe('true');
    deliver();
    await databasePorts.connectionSecrets.delete(secretRef);
    expect(await ports.secrets.get(secretRef)).toBeUndefined();
    deliver();
    expect(await ports.secrets.get(secretRef)).toBeUndefined();
  });

  it('reads as the database’s own read of the API found it: that read may be newer than the cache', async () => {
    const { api, ports, databasePorts, reads } = world();
    api.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'shop-app', namespace: NS },
      data: { username: 'YXBw' },
    } as StoredObject);
    expect(await databasePorts.connectionSecrets.get(secretRef)).toBeDefined();
    expect((await ports.secrets.get(secretRef))?.keys).toEqual(['username']);
    expect(reads).toEqual([]);
  });
});

describe("a database's finalizer, as the cluster's and the database's next passes read it", () => {
  it('reads as written until the watch delivers it', async () => {
    const { api, ports, databasePorts, deliver } = world();
    api.create({
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresDatabase',
      metadata: { name: 'shop', namespace: NS },
      spec: { cluster: 'db', name: 'shop', owner: 'app' },
    } as StoredObject);
    deliver();
    const database = (await databasePorts.databases.get({ namespace: NS, name: 'shop' })) as PostgresDatabase;
    const version = await databasePorts.databases.addFinalizer(database, FINALIZER);
    const next = await ports.databases.get({ namespace: NS, name: 'shop' });
    expect(next?.metadata.finalizers).toEqual([FINALIZER]);
    expect(next?.metadata.resourceVersion).toBe(version);
    expect((await ports.databases.list(NS))[0]?.metadata.finalizers).toEqual([FINALIZER]);
  });
});

describe('an answer is kept only when it is a Secret as stored', () => {
  it('ignores nothing, another kind, or a Secret without a version; drops the values it may carry', () => {
    expect(secretViewOfAnswer(undefined)).toBeUndefined();
    expect(secretViewOfAnswer({ kind: 'ConfigMap', metadata: { name: 'x', resourceVersion: '2' }, keys: [] })).toBe(
      undefined,
    );
    expect(secretViewOfAnswer({ kind: 'Secret', metadata: { name: 'x' }, keys: [] })).toBeUndefined();
    const view = secretViewOfAnswer({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'x', resourceVersion: '2' },
      keys: ['username'],
      values: { username: 'app' },
    });
    expect(view).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'x', resourceVersion: '2' },
      keys: ['username'],
    });
  });
});
