/**
 * Class deletion protection (issue 30): the decision (domain/class-protection.ts) and the driver's pass
 * (driver/class-protection.ts) over the in-memory API and its watches, a lagging watch included.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterClass } from '../../src/operator/api/schema.ts';
import {
  CLASS_DELETION_EVENT_REASON,
  CLASS_FINALIZER,
  type ClassUser,
  classDeletionMessage,
  classProtection,
  classUsers,
} from '../../src/operator/domain/class-protection.ts';
import { ClassProtection, classesFor } from '../../src/operator/driver/class-protection.ts';
import { allSources, type WatchSources } from '../../src/operator/driver/sources.ts';
import { MemoryApiServer, type StoredObject } from '../../src/tools/memory/api-server.ts';
import { MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { memoryWatchSources } from '../../src/tools/memory/watch-sources.ts';

const classNamed = (name: string, metadata: Partial<PostgresClusterClass['metadata']> = {}): PostgresClusterClass => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresClusterClass',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '5', ...metadata },
  spec: { provisioner: 'postgresql.cnpg.io' } as PostgresClusterClass['spec'],
});
const clusterNamed = (namespace: string, name: string, className = 'standard', extra: object = {}) => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { name, namespace, uid: `uid-${namespace}-${name}`, ...extra },
  spec: { class: className },
});
const user = (namespace: string, name: string): ClassUser => ({ namespace, name, uid: `uid-${namespace}-${name}` });

describe('classUsers', () => {
  it('the clusters naming the class and not being deleted, sorted; anything malformed is skipped', () => {
    const clusters = [
      clusterNamed('b', 'two'),
      clusterNamed('a', 'one'),
      clusterNamed('a', 'other-class', 'premium'),
      clusterNamed('a', 'going', 'standard', { deletionTimestamp: '2026-01-01T00:00:00Z' }),
      { metadata: { name: 'no-spec', namespace: 'a' } },
      null,
      'nonsense',
      { spec: { class: 'standard' } },
    ];
    expect(classUsers('standard', clusters)).toEqual([user('a', 'one'), user('b', 'two')]);
    expect(classUsers('standard', clusters, 1)).toHaveLength(1);
  });
});

describe('classProtection', () => {
  const withFinalizer = (metadata: Partial<PostgresClusterClass['metadata']> = {}) =>
    classNamed('standard', { finalizers: ['someone/else', CLASS_FINALIZER], ...metadata });
  const users = [user('a', 'one')];
  const deleting = { deletionTimestamp: '2026-01-01T00:00:00Z' };

  it.each([
    ['used, without the finalizer: add it', classNamed('standard'), users, { action: 'add', waiting: false }],
    ['used, with it: keep', withFinalizer(), users, { action: 'keep', waiting: false }],
    ['unused, with it: remove it', withFinalizer(), [], { action: 'remove', waiting: false }],
    ['unused, without it: keep', classNamed('standard'), [], { action: 'keep', waiting: false }],
    [
      'being deleted while used: keep, and its users wait',
      withFinalizer(deleting),
      users,
      { action: 'keep', waiting: true },
    ],
    ['being deleted, no user left: remove it', withFinalizer(deleting), [], { action: 'remove', waiting: false }],
    // The API server takes no new finalizer on an object being deleted: it goes, as before.
    [
      'being deleted without it: nothing to hold it',
      classNamed('standard', deleting),
      users,
      { action: 'keep', waiting: false },
    ],
    ['gone: keep', undefined, users, { action: 'keep', waiting: false }],
  ] as const)('%s', (_, clusterClass, users, expected) => {
    expect(classProtection(clusterClass, users)).toEqual(expected);
  });
});

describe('classDeletionMessage', () => {
  it("names the class, the namespace's own users, and only counts the others", () => {
    const message = classDeletionMessage('standard', [user('a', 'one'), user('a', 'two'), user('b', 'secret')], 'a');
    expect(message).toBe(
      'PostgresClusterClass standard is being deleted; it stays until no PostgresCluster uses it: one, two in a ' +
        'and 1 in other namespaces. This cluster keeps running with it',
    );
    expect(message).not.toContain('secret');
  });

  it('names at most five', () => {
    const many = Array.from({ length: 7 }, (_, i) => user('a', `c${i}`));
    expect(classDeletionMessage('standard', many, 'a')).toContain('c0, c1, c2, c3, c4 and 2 more in a');
  });
});

describe('classesFor', () => {
  const cluster = clusterNamed('a', 'one') as never;
  it('a class wakes itself, except its deletion (it is gone)', () => {
    const c = classNamed('standard') as never;
    expect(classesFor({ type: 'add', object: c })).toEqual(['standard']);
    expect(classesFor({ type: 'update', object: c, old: c })).toEqual(['standard']);
    expect(classesFor({ type: 'delete', object: c })).toEqual([]);
  });

  it('a cluster wakes its class when it appears, goes, or starts its deletion; not on its status', () => {
    expect(classesFor({ type: 'add', object: cluster })).toEqual(['standard']);
    expect(classesFor({ type: 'delete', object: cluster })).toEqual(['standard']);
    const going = clusterNamed('a', 'one', 'standard', { deletionTimestamp: '2026-01-01T00:00:00Z' }) as never;
    expect(classesFor({ type: 'update', object: going, old: cluster })).toEqual(['standard']);
    const status = { ...clusterNamed('a', 'one'), status: { state: 'Ready' } } as never;
    expect(classesFor({ type: 'update', object: status, old: cluster })).toEqual([]);
  });

  it('other kinds, and a cluster naming no class, wake none', () => {
    expect(classesFor({ type: 'add', object: { kind: 'Secret', metadata: { name: 's' } } as never })).toEqual([]);
    expect(classesFor({ type: 'add', object: { kind: 'PostgresCluster', metadata: { name: 'x' } } as never })).toEqual(
      [],
    );
  });
});

/** The in-memory API with a class and `clusters`, the watches started, and the class protection over them. */
function world(watched: (sources: WatchSources) => WatchSources = (s) => s) {
  const clock = { now: () => Date.parse('2026-11-30T12:00:00Z') };
  const api = new MemoryApiServer(clock.now);
  const events = new MemoryEventSink(clock);
  const sources = memoryWatchSources(api, clock);
  for (const source of allSources(sources)) source.start();
  const ports = memoryPorts(api, clock, events);
  const protection = new ClassProtection({ sources: watched(sources), ports });
  api.create(classNamed('standard', { resourceVersion: undefined, uid: undefined }) as unknown as StoredObject);
  const stored = () => api.get<PostgresClusterClass>({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
  const addCluster = (namespace: string, name: string) =>
    api.create(clusterNamed(namespace, name, 'standard', { uid: undefined }) as unknown as StoredObject);
  return { api, events, protection, stored, addCluster };
}

describe('the class protection pass', () => {
  it('protects a class in use: deleting it leaves it Terminating, its users are told once, it goes with its last user', async () => {
    const { api, events, protection, stored, addCluster } = world();
    addCluster('a', 'one');
    addCluster('b', 'two');

    const first = await protection.pass('standard');
    expect(first).toMatchObject({ found: true, writes: 1 });
    expect(first.error).toBeUndefined();
    expect(stored()?.metadata.finalizers).toEqual([CLASS_FINALIZER]);
    // Exactly once: the next pass reads the class as its own write left it, and writes nothing.
    expect((await protection.pass('standard')).writes).toBe(0);

    api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    expect(stored()?.metadata.deletionTimestamp).toBeDefined();
    const waiting = await protection.pass('standard');
    expect(waiting.writes).toBe(0);
    expect(waiting.events.map((e) => e.reason)).toEqual([CLASS_DELETION_EVENT_REASON, CLASS_DELETION_EVENT_REASON]);
    expect(events.events.map((e) => `${e.type} ${e.regarding.namespace}/${e.regarding.name}`)).toEqual([
      'Warning a/one',
      'Warning b/two',
    ]);
    expect(events.events[0]?.message).toContain('PostgresClusterClass standard is being deleted');
    // Quiet: told once.
    expect((await protection.pass('standard')).events).toEqual([]);
    expect(events.events).toHaveLength(2);

    api.delete({ kind: 'PostgresCluster', namespace: 'a', name: 'one' });
    expect((await protection.pass('standard')).writes).toBe(0);
    expect(stored()).toBeDefined();

    api.delete({ kind: 'PostgresCluster', namespace: 'b', name: 'two' });
    expect((await protection.pass('standard')).writes).toBe(1);
    expect(stored()).toBeUndefined();
    expect((await protection.pass('standard')).found).toBe(false);
  });

  it("keeps someone else's finalizer", async () => {
    const { api, protection, stored, addCluster } = world();
    const live = stored();
    if (!live) throw new Error('no class');
    api.put({ ...live, metadata: { ...live.metadata, finalizers: ['someone/else'] } } as unknown as StoredObject);
    addCluster('a', 'one');
    await protection.pass('standard');
    expect(stored()?.metadata.finalizers).toEqual(['someone/else', CLASS_FINALIZER]);
    api.delete({ kind: 'PostgresCluster', namespace: 'a', name: 'one' });
    await protection.pass('standard');
    expect(stored()?.metadata.finalizers).toEqual(['someone/else']);
  });

  it('re-checks the API before removing: a cluster the watch has not delivered yet keeps the finalizer', async () => {
    let hidden = false;
    const { api, protection, stored, addCluster } = world((sources) => ({
      ...sources,
      clusters: Object.assign(Object.create(sources.clusters), {
        list: (ns?: string) => (hidden ? [] : sources.clusters.list(ns)),
      }),
    }));
    addCluster('a', 'one');
    await protection.pass('standard');
    api.delete({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' });
    hidden = true;
    const pass = await protection.pass('standard');
    expect(pass).toMatchObject({ writes: 0 });
    expect(pass.error).toBeUndefined();
    expect(stored()?.metadata.finalizers).toEqual([CLASS_FINALIZER]);
  });

  it('a stale class conflicts rather than writing over a newer one, and the next pass succeeds', async () => {
    let stale: PostgresClusterClass | undefined;
    const { api, protection, stored, addCluster } = world((sources) => ({
      ...sources,
      classes: Object.assign(Object.create(sources.classes), {
        get: (ns: string, name: string) => stale ?? sources.classes.get(ns, name),
      }),
    }));
    stale = stored();
    const live = stored();
    if (!live) throw new Error('no class');
    api.put({ ...live, metadata: { ...live.metadata, finalizers: ['someone/else'] } } as unknown as StoredObject);
    addCluster('a', 'one');
    const conflicted = await protection.pass('standard');
    expect(conflicted.requeue.kind).toBe('immediate');
    expect(stored()?.metadata.finalizers).toEqual(['someone/else']);
    stale = undefined;
    await protection.pass('standard');
    expect(stored()?.metadata.finalizers).toEqual(['someone/else', CLASS_FINALIZER]);
  });
});
