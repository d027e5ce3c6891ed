/**
 * The work queue's retry classes: each backs off on its own per-key counter, a clean pass (`forget`)
 * resets them all, a 429's Retry-After is honoured, and a watch event wakes a key that waits out a backoff.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  RETRY_AFTER_MAX_MS,
  RETRY_POLICIES,
  type RetryClass,
  WorkQueue,
} from '../../../src/operator/driver/workqueue.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** The delay the queue picked for each of `n` failures of `key` in `retryClass` in a row, on the fake clock. */
async function delaysOf(q: WorkQueue, key: string, retryClass: RetryClass, n: number, retryAfterMs?: number) {
  const delays: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = Date.now();
    q.addRetry(key, retryClass, retryAfterMs);
    vi.advanceTimersToNextTimer();
    delays.push(Date.now() - before);
    expect(q.depth).toBe(1);
    q.done((await q.get()) as string);
  }
  return delays;
}

describe('retry delays by class', () => {
  it('conflict: 5 ms doubling, capped at 1 s, without jitter', () => {
    const q = new WorkQueue({ random: () => 0.999 });
    expect([0, 1, 2, 3, 7, 8, 40].map((n) => q.retryDelay('conflict', n))).toEqual([5, 10, 20, 40, 640, 1_000, 1_000]);
  });

  it('transient: 50 ms doubling, capped at 30 s, ±20 %', () => {
    const mid = new WorkQueue({ random: () => 0.5 });
    expect([0, 1, 2, 5, 9, 10, 2000].map((n) => mid.retryDelay('transient', n))).toEqual([
      50, 100, 200, 1_600, 25_600, 30_000, 30_000,
    ]);
    const low = new WorkQueue({ random: () => 0 });
    expect([0, 10].map((n) => low.retryDelay('transient', n))).toEqual([40, 24_000]);
    const high = new WorkQueue({ random: () => 0.999_999 });
    expect([0, 10].map((n) => high.retryDelay('transient', n))).toEqual([60, 36_000]);
  });

  it('persistent: 5 ms doubling (controller-runtime), capped at 5 min instead of 1000 s', () => {
    const q = new WorkQueue({ random: () => 0.999 });
    expect([0, 1, 2, 3, 10].map((n) => q.retryDelay('persistent', n))).toEqual([5, 10, 20, 40, 5_120]);
    expect(q.retryDelay('persistent', 16)).toBe(300_000);
    expect(q.retryDelay('persistent', 5_000)).toBe(300_000);
  });

  it('throttled without Retry-After backs off as transient', () => {
    const q = new WorkQueue({ random: () => 0.5 });
    for (const n of [0, 3, 12]) expect(q.retryDelay('throttled', n)).toBe(q.retryDelay('transient', n));
    // Zero, negative or not a number: as absent.
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(q.retryDelay('throttled', 2, bad)).toBe(q.retryDelay('transient', 2));
    }
  });

  it('throttled with Retry-After waits what the server asked, never less, up to 20 % more, at most 60 s asked', () => {
    const low = new WorkQueue({ random: () => 0 });
    const high = new WorkQueue({ random: () => 0.999_999 });
    // The failure count does not matter: the server said how long.
    expect([0, 7].map((n) => low.retryDelay('throttled', n, 1_000))).toEqual([1_000, 1_000]);
    expect(high.retryDelay('throttled', 0, 1_000)).toBe(1_200);
    expect(low.retryDelay('throttled', 0, 10 * 60_000)).toBe(RETRY_AFTER_MAX_MS);
    expect(high.retryDelay('throttled', 0, 10 * 60_000)).toBe(72_000);
  });

  it('only the throttled class honours a Retry-After', () => {
    const q = new WorkQueue({ random: () => 0.5 });
    expect(q.retryDelay('transient', 0, 5_000)).toBe(50);
    expect(q.retryDelay('conflict', 0, 5_000)).toBe(5);
    expect(q.retryDelay('persistent', 0, 5_000)).toBe(5);
  });

  it('takes overrides per class', () => {
    const q = new WorkQueue({ retryPolicies: { persistent: { baseMs: 1_000, maxMs: 4_000 } } });
    expect([0, 1, 2, 3].map((n) => q.retryDelay('persistent', n))).toEqual([1_000, 2_000, 4_000, 4_000]);
    expect(q.retryDelay('conflict', 0)).toBe(RETRY_POLICIES.conflict.baseMs);
  });
});

describe('retry counters', () => {
  it('addRetry waits the delay of the class and counts the failure of the key in that class', async () => {
    const q = new WorkQueue({ random: () => 0.5 });
    expect(await delaysOf(q, 'a', 'conflict', 4)).toEqual([5, 10, 20, 40]);
    expect(await delaysOf(q, 'a', 'transient', 3)).toEqual([50, 100, 200]);
    expect(await delaysOf(q, 'a', 'persistent', 2)).toEqual([5, 10]);
    expect(await delaysOf(q, 'a', 'throttled', 2, 2_000)).toEqual([2_200, 2_200]);
    expect(await delaysOf(q, 'a', 'throttled', 1)).toEqual([200]);
    expect(q.numRequeues('a', 'conflict')).toBe(4);
    expect(q.numRequeues('a', 'transient')).toBe(3);
    expect(q.numRequeues('a', 'persistent')).toBe(2);
    expect(q.numRequeues('a', 'throttled')).toBe(3);
    expect(q.numRequeues('a')).toBe(12);
    // Keys are independent.
    expect(q.numRequeues('b')).toBe(0);
    expect(await delaysOf(q, 'b', 'conflict', 1)).toEqual([5]);
  });

  it('a burst of conflicts does not lengthen the next transient retry, nor the reverse', async () => {
    const q = new WorkQueue({ random: () => 0.5 });
    await delaysOf(q, 'a', 'conflict', 8);
    expect(await delaysOf(q, 'a', 'transient', 1)).toEqual([50]);
    await delaysOf(q, 'a', 'transient', 8);
    expect(await delaysOf(q, 'a', 'conflict', 1)).toEqual([1_000]);
    // The conflict counter went on from 8 (capped); the persistent one has not started.
    expect(await delaysOf(q, 'a', 'persistent', 1)).toEqual([5]);
  });

  it('forget (a clean pass) resets every class of the key', async () => {
    const q = new WorkQueue({ random: () => 0.5 });
    for (const c of ['conflict', 'transient', 'throttled', 'persistent'] as const) await delaysOf(q, 'a', c, 5);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    expect(await delaysOf(q, 'a', 'conflict', 1)).toEqual([5]);
    expect(await delaysOf(q, 'a', 'transient', 1)).toEqual([50]);
    expect(await delaysOf(q, 'a', 'throttled', 1)).toEqual([50]);
    expect(await delaysOf(q, 'a', 'persistent', 1)).toEqual([5]);
  });
});

describe('a watch event wakes a key that backs off', () => {
  it('add queues the key at once while it waits out a backoff, and the pending retry is dropped', async () => {
    const q = new WorkQueue({ random: () => 0.5 });
    await delaysOf(q, 'a', 'persistent', 16);
    q.addRetry('a', 'persistent');
    vi.advanceTimersByTime(1_000);
    expect(q.depth).toBe(0);
    // The event.
    q.add('a');
    expect(q.depth).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    // The pass decided nothing more (say it succeeded but was not forgotten): the old backoff does not
    // bring the key back on its own.
    vi.advanceTimersByTime(10 * 60_000);
    expect(q.depth).toBe(0);
    // The counters stay: only a clean pass resets them.
    expect(q.numRequeues('a', 'persistent')).toBe(17);
  });

  it('wakes a key that waits out a Retry-After or a plain delay too', async () => {
    const q = new WorkQueue({ random: () => 0 });
    q.addRetry('a', 'throttled', 30_000);
    q.addAfter('b', 15_000);
    vi.advanceTimersByTime(10);
    q.add('a');
    q.add('b');
    expect(q.depth).toBe(2);
  });

  it('a key woken while a worker holds it runs once more after done, not twice', async () => {
    const q = new WorkQueue();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.addRetry('a', 'conflict');
    q.add('a');
    q.done('a');
    expect(q.depth).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    vi.advanceTimersByTime(60_000);
    expect(q.depth).toBe(0);
  });
});
