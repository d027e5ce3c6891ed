/**
 * A keyed work queue with client-go semantics: a key waits in the queue at most once, it is processed by
 * at most one worker at a time, and a key added while it is being processed is queued again when that
 * processing is done (so the latest change is never lost and never handled concurrently). Delayed adds
 * keep only the earliest due time per key; per-key exponential backoff is reset by `forget`.
 */

/** Time and timers, injectable so tests run on a virtual clock. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

// Looked up at call time, so vitest's fake timers replace them.
export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Observation points for metrics (workqueue_* in controller-runtime). */
export interface WorkQueueHooks {
  depth?(depth: number): void;
  added?(): void;
  retried?(): void;
  /** Seconds a key waited in the queue before a worker took it. */
  queued?(seconds: number): void;
  /** Seconds a worker spent on a key. */
  worked?(seconds: number): void;
}

export interface WorkQueueOptions {
  timers?: Timers;
  hooks?: WorkQueueHooks;
  /** First backoff delay (controller-runtime: 5 ms). */
  backoffBaseMs?: number;
  /** Longest backoff delay (controller-runtime: 1000 s). */
  backoffMaxMs?: number;
  /** Source of the jitter of throttled retries, in [0, 1) (tests pin it). */
  random?: () => number;
}

/** Throttled retries wait ±20 %, so that clusters refused together do not come back together. */
const THROTTLE_JITTER = 0.2;

/**
 * The wait before a throttled retry after `failures` earlier failures, before jitter: `minMs`, doubling
 * on each repeat, capped at `maxMs` (a cap below `minMs` never shortens it).
 */
const throttleDelay = (failures: number, minMs: number, maxMs: number): number =>
  Math.min(minMs * 2 ** failures, Math.max(minMs, maxMs));

export class WorkQueue {
  private readonly timers: Timers;
  private readonly hooks: WorkQueueHooks;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly random: () => number;
  private readonly queue: string[] = [];
  /** Keys that need processing, with the time they were first added (queue latency). */
  private readonly dirty = new Map<string, number>();
  /** Keys a worker holds, with the time it took them. */
  private readonly processing = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; handle: unknown }>();
  private readonly failures = new Map<string, number>();
  private readonly getters: Array<(key: string | undefined) => void> = [];
  private readonly idleWaiters: Array<() => void> = [];
  private shuttingDown = false;
  private drained: (() => void) | undefined;
  private draining: Promise<void> | undefined;

  constructor(options: WorkQueueOptions = {}) {
    this.timers = options.timers ?? realTimers;
    this.hooks = options.hooks ?? {};
    this.backoffBaseMs = options.backoffBaseMs ?? 5;
    this.backoffMaxMs = options.backoffMaxMs ?? 1_000_000;
    this.random = options.random ?? Math.random;
  }

  /** Keys waiting for a worker (not counting delayed ones). */
  get depth(): number {
    return this.queue.length;
  }

  get inFlight(): number {
    return this.processing.size;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** No key waits for a worker and none is being processed; keys still waiting out a delay do not count. */
  get idle(): boolean {
    return this.queue.length === 0 && this.processing.size === 0;
  }

  /**
   * Resolves once the queue is `idle` (at once if it is already). A driver on virtual time (the
   * simulation) needs it: it may move its clock to the next timer only once every pass the present
   * instant caused is done, and nothing else says when that is. Delayed keys are timers, so they are the
   * clock's business, not the queue's.
   */
  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private notifyIdle(): void {
    if (!this.idle) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.set(key, this.timers.now());
    this.hooks.added?.();
    // Being processed: `done` puts it back, so two workers never hold the same key.
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.hooks.depth?.(this.queue.length);
    this.handOut();
  }

  /** Adds the key after `ms`; of several pending delays for one key the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.timers.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) this.timers.clearTimeout(pending.handle);
    const handle = this.timers.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { at, handle });
  }

  /** Adds the key after its next backoff delay: base · 2^failures, capped. */
  addRateLimited(key: string): void {
    this.addAfter(key, this.backoffFor(this.countFailure(key)));
  }

  /**
   * Adds the key after `minMs` the first time, twice as long on each repeat (up to the backoff cap),
   * with jitter: for a server that asked us to slow down (429) or did not answer in time. Counts as a
   * failure of the key, like `addRateLimited`; `forget` starts over.
   */
  addThrottled(key: string, minMs: number): void {
    this.addAfter(key, this.throttledDelay(this.countFailure(key), minMs));
  }

  /** Counts one more failure of the key; returns how many came before it. */
  private countFailure(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.hooks.retried?.();
    return failures;
  }

  /** The delay of a throttled retry after `failures` earlier failures, jitter included. */
  throttledDelay(failures: number, minMs: number): number {
    const delay = throttleDelay(failures, minMs, this.backoffMaxMs);
    return Math.round(delay * (1 - THROTTLE_JITTER + 2 * THROTTLE_JITTER * this.random()));
  }

  backoffFor(failures: number): number {
    return Math.min(this.backoffBaseMs * 2 ** failures, this.backoffMaxMs);
  }

  /** The key succeeded: its next failure starts the backoff from the beginning again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /**
   * The next key to process; the caller must call `done(key)` afterwards. Resolves `undefined` when the
   * queue shuts down or `signal` aborts (a worker pool stopping on loss of leadership).
   */
  get(signal?: AbortSignal): Promise<string | undefined> {
    if (this.shuttingDown || signal?.aborted) return Promise.resolve(undefined);
    if (this.queue.length > 0) return Promise.resolve(this.take());
    return new Promise((resolve) => {
      const getter = (key: string | undefined) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(key);
      };
      const onAbort = () => {
        const at = this.getters.indexOf(getter);
        if (at >= 0) this.getters.splice(at, 1);
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.getters.push(getter);
    });
  }

  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.hooks.worked?.((this.timers.now() - started) / 1000);
    if (this.shuttingDown) {
      if (this.processing.size === 0) this.drained?.();
      this.notifyIdle();
      return;
    }
    if (this.dirty.has(key)) {
      this.queue.push(key);
      this.hooks.depth?.(this.queue.length);
      this.handOut();
    }
    this.notifyIdle();
  }

  /**
   * Stops taking work: new adds are ignored, waiting and delayed keys are dropped (the next process
   * relists and enqueues every cluster anyway), idle workers get `undefined`. Resolves once every key
   * a worker holds is done.
   */
  shutDown(): Promise<void> {
    if (this.draining) return this.draining;
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.timers.clearTimeout(handle);
    this.delayed.clear();
    this.queue.length = 0;
    this.dirty.clear();
    this.hooks.depth?.(0);
    for (const getter of this.getters.splice(0)) getter(undefined);
    this.notifyIdle();
    this.draining =
      this.processing.size === 0
        ? Promise.resolve()
        : new Promise((resolve) => {
            this.drained = resolve;
          });
    return this.draining;
  }

  private take(): string {
    const key = this.queue.shift() as string;
    const now = this.timers.now();
    this.hooks.queued?.((now - (this.dirty.get(key) ?? now)) / 1000);
    this.dirty.delete(key);
    this.processing.set(key, now);
    this.hooks.depth?.(this.queue.length);
    return key;
  }

  private handOut(): void {
    while (this.getters.length > 0 && this.queue.length > 0) this.getters.shift()?.(this.take());
  }
}
