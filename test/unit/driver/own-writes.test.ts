/**
 * A pass reads its own writes (src/operator/driver/own-writes.ts): each answer is served over a cache that
 * has not delivered it yet, each deletion hides what it deleted, until the watch catches up; and only so long.
 */
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { OwnWrites } from '../../../src/operator/driver/own-writes.ts';
import type { ObjectSource, SourceEvent } from '../../../src/operator/driver/sources.ts';

/** A watch cache whose events the test delivers by hand. */
function watchCache() {
  const objects = new Map<string, KubeObject>();
  const listeners: Array<(event: SourceEvent) => void> = [];
  const source = {
    get: (_namespace: string, name: string) => objects.get(name),
    on: (listener: (event: SourceEvent) => void) => {
      listeners.push(listener);
      return () => {};
    },
  } as unknown as ObjectSource;
  const deliver = (type: SourceEvent['type'], object: KubeObject) => {
    if (type === 'delete') objects.delete(object.metadata.name);
    else objects.set(object.metadata.name, object);
    for (const listener of listeners) listener({ type, object });
  };
  return { source, deliver };
}

const version = (name: string, resourceVersion: string, uid = `uid-${name}`): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns', uid, resourceVersion },
});

describe('own writes', () => {
  it('serve an answer until the watch delivers its version or a later one', () => {
    const { source, deliver } = watchCache();
    const own = new OwnWrites(source);
    deliver('add', version('a', '10'));
    own.written(version('a', '12'));
    expect(own.get('ns', 'a')?.metadata.resourceVersion).toBe('12');
    // An older event (the watch still catching up) changes nothing.
    deliver('update', version('a', '11'));
    expect(own.get('ns', 'a')?.metadata.resourceVersion).toBe('12');
    deliver('update', version('a', '13'));
    expect(own.get('ns', 'a')?.metadata.resourceVersion).toBe('13');
    expect(own.size).toBe(0);
  });

  it('keep nothing when the watch was quicker than the answer, or the version cannot be compared', () => {
    const { source, deliver } = watchCache();
    const own = new OwnWrites(source);
    deliver('add', version('a', '12'));
    own.written(version('a', '12'));
    own.written(version('b', 'not-a-number'));
    expect(own.size).toBe(0);
  });

  it('hide a deleted object until the watch delivers its deletion, and show a new one of that name', () => {
    const { source, deliver } = watchCache();
    const own = new OwnWrites(source);
    deliver('add', version('a', '10', 'first'));
    own.deleted('ns', 'a');
    expect(own.get('ns', 'a')).toBeUndefined();
    // A late update of the deleted object does not bring it back.
    deliver('update', version('a', '11', 'first'));
    expect(own.get('ns', 'a')).toBeUndefined();
    deliver('delete', version('a', '12', 'first'));
    expect(own.size).toBe(0);
    deliver('add', version('a', '13', 'second'));
    expect(own.get('ns', 'a')?.metadata.uid).toBe('second');
  });

  it('serve a re-creation over the late deletion of the object before it', () => {
    const { source, deliver } = watchCache();
    const own = new OwnWrites(source);
    deliver('add', version('a', '10', 'first'));
    own.deleted('ns', 'a');
    own.written(version('a', '20', 'second'));
    expect(own.get('ns', 'a')?.metadata.uid).toBe('second');
    // The watch delivers the first object's deletion, then the second's creation.
    deliver('delete', version('a', '15', 'first'));
    expect(own.get('ns', 'a')?.metadata.uid).toBe('second');
    deliver('add', version('a', '20', 'second'));
    expect(own.size).toBe(0);
  });

  it('keep nothing for a deletion the watch already delivered', () => {
    const { source } = watchCache();
    const own = new OwnWrites(source);
    own.deleted('ns', 'gone');
    expect(own.size).toBe(0);
  });

  it('are bounded in age and in number', () => {
    const { source } = watchCache();
    let now = 0;
    const own = new OwnWrites(source, { maxAgeMs: 1_000, maxEntries: 2, now: () => now });
    own.written(version('a', '1'));
    own.written(version('b', '2'));
    own.written(version('c', '3'));
    expect(own.size).toBe(2);
    expect(own.get('ns', 'a')).toBeUndefined();
    expect(own.get('ns', 'c')).toBeDefined();
    now = 1_000;
    expect(own.get('ns', 'c')).toBeUndefined();
  });
});
