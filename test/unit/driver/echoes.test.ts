/**
 * The echoes of a pass's own followed writes (src/operator/driver/echoes.ts): which events they keep from
 * waking a cluster, and that nothing else is kept from it. The controller's use of them is in
 * controller.test.ts; what a pass follows, in test/contract/follow-writes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { Echoes } from '../../../src/operator/driver/echoes.ts';
import type { SourceEvent } from '../../../src/operator/driver/sources.ts';

const configMap = (resourceVersion: string, name = 'a-endpoints') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: 'db', name, resourceVersion },
});
const added = (resourceVersion: string, name?: string): SourceEvent => ({
  type: 'add',
  object: configMap(resourceVersion, name),
});
const followed = (resourceVersion: string, name = 'a-endpoints') => [
  { kind: 'ConfigMap', namespace: 'db', name, resourceVersion },
];

describe('Echoes', () => {
  it('holds the events of a running pass and wakes it after only for what it did not follow', () => {
    const echoes = new Echoes();
    echoes.started('db/a');
    expect(echoes.wakes('db/a', added('7'))).toBe(false);
    expect(echoes.ended('db/a', followed('7'))).toBe(false);

    echoes.started('db/a');
    expect(echoes.wakes('db/a', added('8'))).toBe(false);
    expect(echoes.ended('db/a', followed('9'))).toBe(true);

    // Someone else's version first, then the echo: the first still wakes it.
    echoes.started('db/a');
    echoes.wakes('db/a', added('10'));
    echoes.wakes('db/a', added('11'));
    expect(echoes.ended('db/a', followed('11'))).toBe(true);
  });

  it('never takes a delete for an echo, nor an event for another object or cluster', () => {
    const echoes = new Echoes();
    echoes.started('db/a');
    expect(echoes.ended('db/a', followed('7'))).toBe(false);
    expect(echoes.wakes('db/b', added('7'))).toBe(true);
    expect(echoes.wakes('db/a', added('7', 'a-other'))).toBe(true);
    expect(echoes.wakes('db/a', { type: 'delete', object: configMap('7') })).toBe(true);
    // The delete was the object's next event: the version followed is past, even should it come again.
    expect(echoes.wakes('db/a', added('7'))).toBe(true);
    expect(echoes.awaiting).toBe(0);
  });

  it('awaits every version passes wrote of one object, in order, until the event of one before the next pass', () => {
    const echoes = new Echoes();
    // Two passes, the second before the first's echo came (it read its own write): both versions are awaited.
    for (const version of ['5', '6']) {
      echoes.started('db/a');
      expect(echoes.ended('db/a', followed(version))).toBe(false);
    }
    expect(echoes.wakes('db/a', added('5'))).toBe(false);
    expect(echoes.wakes('db/a', added('6'))).toBe(false);
    expect(echoes.awaiting).toBe(0);

    // One pass writing the object twice: its events, held while it ran, are both its own.
    echoes.started('db/a');
    echoes.wakes('db/a', added('7'));
    echoes.wakes('db/a', added('8'));
    expect(echoes.ended('db/a', [...followed('7'), ...followed('8')])).toBe(false);

    // The later version's event came first (the earlier one's was lost in a relist): none before it can come.
    for (const version of ['9', '10']) {
      echoes.started('db/a');
      echoes.ended('db/a', followed(version));
    }
    expect(echoes.wakes('db/a', added('10'))).toBe(false);
    expect(echoes.wakes('db/a', added('9'))).toBe(true);
  });

  it('drops an awaited echo once it came, and remembers a bounded number, the oldest dropped first', () => {
    const echoes = new Echoes({ bound: 2 });
    for (const name of ['one', 'two', 'three']) {
      echoes.started('db/a');
      echoes.ended('db/a', followed('5', name));
    }
    expect(echoes.awaiting).toBe(2);
    expect(echoes.wakes('db/a', added('5', 'one'))).toBe(true);
    expect(echoes.wakes('db/a', added('5', 'two'))).toBe(false);
    expect(echoes.wakes('db/a', added('5', 'two'))).toBe(true);
    expect(echoes.wakes('db/a', added('5', 'three'))).toBe(false);
    expect(echoes.awaiting).toBe(0);
  });
});
