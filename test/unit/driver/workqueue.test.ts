/** The work queue: client-go semantics on vitest's fake clock. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WorkerPool } from '../../../src/operator/driver/workers.ts';
import { WorkQueue } from '../../../src/operator/driver/workqueue.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Resolves with the value if `promise` settles within the microtask queue, else 'pending'. */
async function peek<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('WorkQueue', () => {
  it('de-duplicates keys that wait in the queue', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.depth).toBe(0);
  });

  it('hands a key to at most one worker; a key added during its processing comes back after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    q.add('a');
    // Not queued while in flight: a second worker must not get it.
    expect(q.depth).toBe(0);
    const second = q.get();
    vi.useRealTimers();
    expect(await peek(second)).toBe('pending');
    q.done('a');
    expect(await second).toBe('a');
    q.done('a');
    expect(q.depth).toBe(0);
    expect(q.inFlight).toBe(0);
  });

  it('does not re-queue a key that was not added again while in flight', async () => {
    const q = new WorkQueue();
    q.add('a');
    await q.get();
    q.done('a');
    expect(q.depth).toBe(0);
  });

  it('addAfter delivers the key only after the delay, and the earliest of several delays wins', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 1000);
    q.addAfter('a', 100);
    q.addAfter('a', 5000);
    vi.advanceTimersByTime(99);
    expect(q.depth).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.depth).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    // The longer delays were dropped, not kept as extra deliveries.
    vi.advanceTimersByTime(10_000);
    expect(q.depth).toBe(0);
  });

  it('addAfter with no delay adds at once', () => {
    const q = new WorkQueue();
    q.addAfter('a', 0);
    expect(q.depth).toBe(1);
  });

  it('shutDown stops taking work, releases idle workers and resolves when in-flight keys are done', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    expect(await q.get()).toBe('a');
    q.addAfter('c', 10);
    const idle = new WorkQueue();
    const waiting = idle.get();
    void idle.shutDown();
    expect(await waiting).toBeUndefined();

    let drained = false;
    const shutdown = q.shutDown().then(() => {
      drained = true;
    });
    q.add('d');
    vi.advanceTimersByTime(100);
    expect(q.depth).toBe(0);
    expect(await q.get()).toBeUndefined();
    await Promise.resolve();
    expect(drained).toBe(false);
    q.done('a');
    await shutdown;
    expect(drained).toBe(true);
    expect(await q.shutDown()).toBeUndefined();
  });

  it('whenIdle resolves once no key waits and none is in flight, ignoring keys that wait out a delay', async () => {
    const q = new WorkQueue();
    let idle = false;
    await q.whenIdle();
    q.addAfter('later', 1_000);
    expect(q.idle).toBe(true);
    q.add('a');
    const whenIdle = q.whenIdle().then(() => {
      idle = true;
    });
    expect(await q.get()).toBe('a');
    q.add('a');
    q.done('a');
    // Added again while in flight: it is back in the queue, so not idle yet.
    await Promise.resolve();
    expect(idle).toBe(false);
    expect(await q.get()).toBe('a');
    q.done('a');
    await whenIdle;
    expect(idle).toBe(true);
  });

  it('whenIdle resolves on shutDown once the keys in flight are done', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    expect(await q.get()).toBe('a');
    let idle = false;
    const whenIdle = q.whenIdle().then(() => {
      idle = true;
    });
    void q.shutDown();
    await Promise.resolve();
    expect(idle).toBe(false);
    q.done('a');
    await whenIdle;
    expect(idle).toBe(true);
  });

  it('a getter aborted by its signal resolves undefined and takes nothing', async () => {
    const q = new WorkQueue();
    const abort = new AbortController();
    const got = q.get(abort.signal);
    abort.abort();
    expect(await got).toBeUndefined();
    q.add('a');
    expect(q.depth).toBe(1);
    expect(await q.get(abort.signal)).toBeUndefined();
  });

  it('reports depth, adds, retries and durations to its hooks', async () => {
    const seen = { depth: [] as number[], adds: 0, retries: 0, queued: [] as number[], worked: [] as number[] };
    const q = new WorkQueue({
      hooks: {
        depth: (n) => seen.depth.push(n),
        added: () => seen.adds++,
        retried: () => seen.retries++,
        queued: (s) => seen.queued.push(s),
        worked: (s) => seen.worked.push(s),
      },
    });
    q.add('a');
    q.add('a');
    vi.advanceTimersByTime(250);
    const key = await q.get();
    vi.advanceTimersByTime(1500);
    q.done(key as string);
    q.addRetry('a', 'transient');
    expect(seen.adds).toBe(1);
    expect(seen.retries).toBe(1);
    expect(seen.depth).toEqual([1, 0]);
    expect(seen.queued).toEqual([0.25]);
    expect(seen.worked).toEqual([1.5]);
  });
});

describe('WorkerPool', () => {
  it('runs up to N keys at once, never the same key twice at once, and stop waits for in-flight work', async () => {
    vi.useRealTimers();
    const q = new WorkQueue();
    const running = new Set<string>();
    let peak = 0;
    const passes: string[] = [];
    const release: Array<() => void> = [];
    const pool = new WorkerPool(q, 2, async (key) => {
      expect(running.has(key)).toBe(false);
      running.add(key);
      peak = Math.max(peak, running.size);
      await new Promise<void>((resolve) => release.push(resolve));
      running.delete(key);
      passes.push(key);
    });
    pool.start();
    for (const k of ['a', 'b', 'c']) q.add(k);
    await vi.waitFor(() => expect(running.size).toBe(2));
    q.add('a'); // while a is in flight
    release.shift()?.();
    await vi.waitFor(() => expect(passes).toEqual(['a']));
    await vi.waitFor(() => expect(running.size).toBe(2));
    let stopped = false;
    const stopping = pool.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stopped).toBe(false);
    while (release.length > 0) release.shift()?.();
    await stopping;
    expect(peak).toBe(2);
    expect(running.size).toBe(0);
    // The key still queued stays for the next term.
    expect(q.depth).toBe(1);
    pool.start();
    await vi.waitFor(() => expect(running.size).toBe(1));
    release.shift()?.();
    await vi.waitFor(() => expect(passes).toHaveLength(4));
    expect(passes.sort()).toEqual(['a', 'a', 'b', 'c']);
    await pool.stop();
  });

  it('a stop waits for the workers of a term started while an earlier stop was still waiting', async () => {
    // Leadership lost and regained within one pass: the first stop still waits for that pass when the
    // pool starts again. The graceful shutdown's stop must then wait for the new term's passes too.
    vi.useRealTimers();
    const q = new WorkQueue();
    const release = new Map<string, () => void>();
    const pool = new WorkerPool(q, 1, (key) => new Promise<void>((resolve) => release.set(key, resolve)));
    pool.start();
    q.add('old');
    await vi.waitFor(() => expect(release.has('old')).toBe(true));
    const firstStop = pool.stop();
    pool.start();
    q.add('new');
    release.get('old')?.();
    await firstStop;
    await vi.waitFor(() => expect(release.has('new')).toBe(true));
    let stopped = false;
    const secondStop = pool.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stopped).toBe(false);
    release.get('new')?.();
    await secondStop;
    expect(q.inFlight).toBe(0);
  });

  it('survives a handler that throws', async () => {
    vi.useRealTimers();
    const q = new WorkQueue();
    const seen: string[] = [];
    const pool = new WorkerPool(q, 1, async (key) => {
      seen.push(key);
      if (key === 'bad') throw new Error('boom');
    });
    pool.start();
    q.add('bad');
    q.add('good');
    await vi.waitFor(() => expect(seen).toEqual(['bad', 'good']));
    expect(q.inFlight).toBe(0);
    await pool.stop();
  });
});
