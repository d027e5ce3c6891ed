/** The Events a pass hands over are sent after it: in order per object, bounded, each once. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { PortError } from '../../../src/operator/core/errors.ts';
import type { KubeEvent } from '../../../src/operator/domain/effects.ts';
import { type Delivered, EventDelivery, QueueFullError } from '../../../src/operator/driver/event-delivery.ts';

const cluster = (name: string): PostgresCluster =>
  ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: { namespace: 'ns', name, uid: name },
  }) as PostgresCluster;
const event = (reason: string): KubeEvent => ({ type: 'Normal', reason, action: 'Test', message: reason });
const reasons = (events: KubeEvent[]) => events.map((e) => e.reason);

/** A sink whose creates wait until released, one by one, recording what it was given and when. */
class GatedSink {
  readonly started: string[] = [];
  readonly sent: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  failing = new Set<string>();
  private readonly waiting: Array<() => void> = [];

  async emit(regarding: PostgresCluster, e: KubeEvent): Promise<void> {
    const id = `${regarding.metadata.name}:${e.reason}`;
    this.started.push(id);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight--;
    if (this.failing.has(id)) throw new PortError('timeout', `injected: ${id}`);
    this.sent.push(id);
  }

  /** Lets every create waiting now finish, and the ones they start, until none is left. */
  async releaseAll(): Promise<void> {
    for (let round = 0; round < 100; round++) {
      const now = this.waiting.splice(0);
      if (now.length === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        if (this.waiting.length === 0) return;
        continue;
      }
      for (const release of now) release();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

function delivery(limits = { maxInFlight: 2, maxWaiting: 64 }) {
  const sink = new GatedSink();
  const reports: Delivered[] = [];
  return { sink, reports, delivery: new EventDelivery(sink, (d) => reports.push(d), limits) };
}

describe('event delivery', () => {
  it('returns at once, then sends one object’s Events in order, a later batch behind an earlier one', async () => {
    const { sink, reports, delivery: d } = delivery();
    d.deliver(cluster('a'), [event('A1'), event('A2')]);
    d.deliver(cluster('a'), [event('A3')]);
    expect(sink.sent).toEqual([]);
    // One at a time for one object: the second waits for the first.
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink.started).toEqual(['a:A1']);
    await sink.releaseAll();
    await d.idle();
    expect(sink.sent).toEqual(['a:A1', 'a:A2', 'a:A3']);
    expect(reports).toHaveLength(1);
    expect(reasons(reports[0]?.sent ?? [])).toEqual(['A1', 'A2', 'A3']);
    expect(reports[0]?.unsent).toEqual([]);
  });

  it('sends for several objects at once, never more than maxInFlight', async () => {
    const { sink, delivery: d } = delivery({ maxInFlight: 2, maxWaiting: 64 });
    for (const name of ['a', 'b', 'c', 'd']) d.deliver(cluster(name), [event('X'), event('Y')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink.inFlight).toBe(2);
    await sink.releaseAll();
    await d.idle();
    expect(sink.sent).toHaveLength(8);
    expect(sink.maxInFlight).toBe(2);
    for (const name of ['a', 'b', 'c', 'd']) {
      expect(sink.sent.filter((id) => id.startsWith(`${name}:`))).toEqual([`${name}:X`, `${name}:Y`]);
    }
  });

  it('stops an object’s line at a failure: it and everything behind it are reported unsent, in order', async () => {
    const { sink, reports, delivery: d } = delivery();
    sink.failing.add('a:A2');
    d.deliver(cluster('a'), [event('A1'), event('A2'), event('A3')]);
    d.deliver(cluster('b'), [event('B1')]);
    await sink.releaseAll();
    await d.idle();
    expect(sink.sent).toEqual(expect.arrayContaining(['a:A1', 'b:B1']));
    expect(sink.sent).not.toContain('a:A3');
    const a = reports.find((r) => r.regarding.metadata.name === 'a');
    expect(reasons(a?.sent ?? [])).toEqual(['A1']);
    expect(a?.unsent.map((u) => u.event.reason)).toEqual(['A2', 'A3']);
    expect(a?.unsent.every((u) => u.error instanceof PortError)).toBe(true);
  });

  it('holds at most maxWaiting Events per object: the oldest beyond it are reported unsent at once', async () => {
    const { sink, reports, delivery: d } = delivery({ maxInFlight: 1, maxWaiting: 2 });
    d.deliver(cluster('a'), [event('A1')]);
    d.deliver(cluster('a'), [event('A2'), event('A3'), event('A4')]);
    expect(reports).toHaveLength(1);
    expect(reports[0]?.unsent.map((u) => u.event.reason)).toEqual(['A2']);
    expect(reports[0]?.unsent[0]?.error).toBeInstanceOf(QueueFullError);
    await sink.releaseAll();
    await d.idle();
    expect(sink.sent).toEqual(['a:A1', 'a:A3', 'a:A4']);
  });

  it('is idle when nothing is waiting', async () => {
    const { delivery: d } = delivery();
    await d.idle();
    expect(d.busy).toBe(0);
  });
});
