/**
 * A keyed work queue with client-go semantics: a key waits in the queue at most once, it is processed by
 * at most one worker at a time, and a key added while it is being processed is queued again when that
 * processing is done (so the latest change is never lost and never handled concurrently). Delayed adds
 * keep only the earliest due time per key; a plain `add` (a watch event) wakes a key that waits out a
 * delay at once.
 *
 * Retries back off per key and per class of failure (RETRY_POLICIES), each class with its own counter, so
 * that a burst of conflicts does not make the next connection reset wait minutes, nor the reverse;
 * `forget` (a clean pass) resets every counter of the key.
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

/**
 * The classes of retry (see `retryFor` in src/operator/core/errors.ts for which error falls in which).
 * Each has its own per-key failure counter.
 */
export type RetryClass = 'conflict' | 'transient' | 'throttled' | 'persistent';

/** The n-th retry in a row (n from 0) waits `baseMs · 2^n`, at most `maxMs`, then ± `jitter`. */
export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  /** Relative spread, e.g. 0.2 for ±20 %: keys that failed together do not come back together. */
  jitter: number;
}

/**
 * - conflict: our copy was stale and the next pass reads afresh, so 5 ms (controller-runtime's first
 *   retry), doubling while the conflict repeats, capped at 1 s: another writer that keeps changing the
 *   object costs at most one pass a second.
 * - transient (reset, client timeout, 5xx): 50 ms, doubling, capped at 30 s ± 20 %. The cap is the
 *   informer's own watch retry cap (client-go's reflector too): once the API answers again, every cluster
 *   is looked at within 36 s, inside the 60 s a fault must not outlast, while a hundred clusters failing on
 *   a dead API server cost about three passes a second.
 * - throttled (429 without `Retry-After`): as transient, on its own counter.
 * - persistent (forbidden, rejected, unknown): 5 ms doubling, capped at 5 min instead of
 *   controller-runtime's 1000 s. Retrying does not fix these, a person does (an RBAC grant, a webhook
 *   repaired), and those fixes raise no watch event: the cap is how long pgfsm may take to notice one,
 *   half the resync period, for one pass per 5 min per broken cluster.
 */
export const RETRY_POLICIES: Readonly<Record<RetryClass, RetryPolicy>> = {
  conflict: { baseMs: 5, maxMs: 1_000, jitter: 0 },
  transient: { baseMs: 50, maxMs: 30_000, jitter: 0.2 },
  throttled: { baseMs: 50, maxMs: 30_000, jitter: 0.2 },
  persistent: { baseMs: 5, maxMs: 5 * 60_000, jitter: 0 },
};

/**
 * A 429's `Retry-After` is honoured up to 60 s (a longer one, from a misconfigured proxy, would leave a
 * cluster unattended for as long), plus up to 20 % so that clusters refused together do not return
 * together; never sooner than asked.
 */
export const RETRY_AFTER_MAX_MS = 60_000;
const RETRY_AFTER_JITTER = 0.2;

export interface WorkQueueOptions {
  timers?: Timers;
  hooks?: WorkQueueHooks;
  /** Overrides of RETRY_POLICIES, by class. */
  retryPolicies?: Partial<Record<RetryClass, Partial<RetryPolicy>>>;
  /** Source of the jitter, in [0, 1) (tests and the simulation pin it). */
  random?: () => number;
}

export class WorkQueue {
  private readonly timers: Timers;
  private readonly hooks: WorkQueueHooks;
  private readonly policies: Record<RetryClass, RetryPolicy>;
  private readonly random: () => number;
  private readonly queue: string[] = [];
  /** Keys that need processing, with the time they were first added (queue latency). */
  private readonly dirty = new Map<string, number>();
  /** Keys a worker holds, with the time it took them. */
  private readonly processing = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; handle: unknown }>();
  /** Per key, the failures in a row of each retry class since the key last succeeded. */
  private readonly failures = new Map<string, Partial<Record<RetryClass, number>>>();
  private readonly getters: Array<(key: string | undefined) => void> = [];
  private readonly idleWaiters: Array<() => void> = [];
  private shuttingDown = false;
  private drained: (() => void) | undefined;
  private draining: Promise<void> | undefined;

  constructor(options: WorkQueueOptions = {}) {
    this.timers = options.timers ?? realTimers;
    this.hooks = options.hooks ?? {};
    const overrides = options.retryPolicies ?? {};
    this.policies = {
      conflict: { ...RETRY_POLICIES.conflict, ...overrides.conflict },
      transient: { ...RETRY_POLICIES.transient, ...overrides.transient },
      throttled: { ...RETRY_POLICIES.throttled, ...overrides.throttled },
      persistent: { ...RETRY_POLICIES.persistent, ...overrides.persistent },
    };
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

  /**
   * Queues the key now. A key waiting out a delay or a backoff is woken: whatever caused this add (a watch
   * event) may be what it waited for, and the pass it gets decides its next requeue afresh, so its
   * pending delay is dropped. The failure counters stay: only a clean pass resets them.
   */
  add(key: string): void {
    if (this.shuttingDown) return;
    const pending = this.delayed.get(key);
    if (pending) {
      this.timers.clearTimeout(pending.handle);
      this.delayed.delete(key);
    }
    if (this.dirty.has(key)) return;
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

  /**
   * Adds the key after the next delay of its retry class and counts the failure; returns the delay.
   * `retryAfterMs` (throttled only: what a 429 asked) replaces the backoff when the server gave one.
   */
  addRetry(key: string, retryClass: RetryClass, retryAfterMs?: number): number {
    const delay = this.retryDelay(retryClass, this.countFailure(key, retryClass), retryAfterMs);
    this.addAfter(key, delay);
    return delay;
  }

  /** Counts one more failure of the key in the class; returns how many came before it. */
  private countFailure(key: string, retryClass: RetryClass): number {
    const counts = this.failures.get(key) ?? {};
    const failures = counts[retryClass] ?? 0;
    this.failures.set(key, { ...counts, [retryClass]: failures + 1 });
    this.hooks.retried?.();
    return failures;
  }

  /**
   * The wait before a retry of the class after `failures` earlier ones in a row, jitter included. A
   * throttled retry with a usable `Retry-After` waits that (at most RETRY_AFTER_MAX_MS) plus up to 20 %;
   * a missing, zero or unusable one falls back to the class's backoff.
   */
  retryDelay(retryClass: RetryClass, failures: number, retryAfterMs?: number): number {
    if (retryClass === 'throttled' && retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0) {
      const asked = Math.min(retryAfterMs, RETRY_AFTER_MAX_MS);
      return Math.round(asked * (1 + RETRY_AFTER_JITTER * this.random()));
    }
    const { baseMs, maxMs, jitter } = this.policies[retryClass];
    // 2^failures overflows to Infinity long after the cap is reached: min() keeps it finite.
    const delay = Math.min(baseMs * 2 ** failures, maxMs);
    if (jitter === 0) return delay;
    return Math.round(delay * (1 - jitter + 2 * jitter * this.random()));
  }

  /** The key succeeded: every class starts its backoff from the beginning again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Failures in a row of the key in one retry class, or in all of them. */
  numRequeues(key: string, retryClass?: RetryClass): number {
    const counts = this.failures.get(key);
    if (!counts) return 0;
    if (retryClass) return counts[retryClass] ?? 0;
    return Object.values(counts).reduce((sum, n) => sum + (n ?? 0), 0);
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
