/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules and defaults (lease 15 s,
 * renew deadline 10 s, retry 2 s):
 * - a candidate takes the lease when it is free (no holder) or expired; "expired" is judged by how long
 *   this process has seen the same record unchanged, not by the renewTime written by another machine,
 *   so clock skew between nodes cannot make two leaders;
 * - writes carry the resourceVersion they read, so of two candidates racing for a free lease one gets a
 *   409 and loses;
 * - the leader renews every retry period and steps down when no renewal succeeded for the renew
 *   deadline, which is shorter than the lease so it stops before anyone else may start; it also steps
 *   down at once when it sees another holder;
 * - on shutdown the leader clears holderIdentity, so a standby takes over at its next retry instead of
 *   waiting for the lease to expire.
 *
 * Every judgement of elapsed time uses a monotonic clock (`performance.now()`), never timers alone: a
 * process paused by SIGSTOP, a VM freeze or a long GC pause runs its overdue timers late, and may run I/O
 * callbacks (a pass's next write) before them. `isLeader()` therefore measures the renew deadline itself,
 * from the moment the last successful renewal was sent, and steps down on the spot once it has passed: a
 * replica resumed after its deadline refuses its first write (fenced-ports.ts), before its timers run.
 *
 * Why the deadline counts from when the renewal was sent: another replica can only see the renewed record
 * once the write has reached the API server, which is after it was sent, and it waits a whole lease
 * duration from then. So this replica stops writing at least leaseDuration − renewDeadline (5 s by
 * default) before anyone else may start, a margin that covers a write already on its way when the
 * deadline passes.
 *
 * The Lease's requests go through the ports' request client (rest.ts) with the renew deadline as their
 * deadline. A renewal slower than that counts for nothing, and the attempt gives up on it then; the request
 * itself is abandoned too, so that one a silent server never answers frees its connection of the shared pool.
 * Through client-node's generated client it stayed open: one more every retry period, until they held every
 * connection the pool allows and the passes' own requests waited behind them.
 */
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import type { Leadership, LeadershipCallbacks } from '../driver/sources.ts';
import { resourcePath } from './resources.ts';
import { ApiError, RestClient } from './rest.ts';

export interface LeaseElectorOptions {
  namespace: string;
  name: string;
  /** Unique per replica; default hostname and pid. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
  /** Monotonic milliseconds that keep counting while the process is paused; default `performance.now()`. */
  clock?: () => number;
}

/**
 * `held` carries when the write that won or renewed the lease was sent, on the monotonic clock, and whether
 * the lease named this replica before it (nobody else has acquired it since this replica did: an acquisition
 * writes its own identity, a release clears it).
 */
type Attempt = { outcome: 'held'; sentAt: number; wasMine: boolean } | { outcome: 'taken' } | { outcome: 'failed' };
const TAKEN: Attempt = { outcome: 'taken' };
const FAILED: Attempt = { outcome: 'failed' };

export const defaultIdentity = () => `${hostname()}-${process.pid}`;

const isNotFound = (error: unknown) => error instanceof ApiError && error.code === 404;

/** The fields of a coordination.k8s.io/v1 Lease the election reads, as the API server sends them. */
interface Lease {
  metadata?: { resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    /** RFC 3339 with microseconds, as text: read back only to be written again unchanged. */
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

const LEASES = { apiVersion: 'coordination.k8s.io/v1', plural: 'leases' };

export class LeaseElector implements Leadership {
  readonly identity: string;
  private readonly rest: RestClient;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly now: () => number;
  private leading = false;
  /** Whether this process has led before: a lease naming its identity from before it started is not its term. */
  private hasLed = false;
  /** When the last successful acquire or renew was sent (monotonic ms); the renew deadline counts from it. */
  private renewedAt: number | undefined;
  private running = false;
  private callbacks: LeadershipCallbacks | undefined;
  private tickTimer: ReturnType<typeof setTimeout> | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private attempt: Promise<unknown> = Promise.resolve();
  /** The last lease record seen and when it was first seen in that form. */
  private observed: { record: string; at: number } | undefined;
  private lastError: string | undefined;

  constructor(
    kc: KubeConfig,
    private readonly options: LeaseElectorOptions,
  ) {
    this.identity = options.identity ?? defaultIdentity();
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.rest = new RestClient(kc, this.renewDeadlineMs);
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.now = options.clock ?? (() => performance.now());
    if (this.renewDeadlineMs >= this.leaseDurationMs)
      throw new Error('the renew deadline must be shorter than the lease duration');
    // As client-go: a leader must get more than one try at renewing (a standby's tries are 20 % late at most).
    if (this.retryPeriodMs * 1.2 >= this.renewDeadlineMs)
      throw new Error('the renew deadline must be longer than 1.2 retry periods');
  }

  /**
   * Whether this replica may write now: it leads and its last successful renewal was sent less than the
   * renew deadline ago, by the monotonic clock. A leader past its deadline steps down here and now
   * (onStoppedLeading runs before this returns), whether or not its timers have fired yet.
   */
  isLeader(): boolean {
    if (this.leading && !this.withinDeadline()) this.stepDown('renew deadline passed');
    return this.leading;
  }

  private withinDeadline(): boolean {
    return this.renewedAt !== undefined && this.now() < this.renewedAt + this.renewDeadlineMs;
  }

  start(callbacks: LeadershipCallbacks): void {
    if (this.running) return;
    this.running = true;
    this.callbacks = callbacks;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.tickTimer);
    clearTimeout(this.deadlineTimer);
    await this.attempt;
    // Also when not leading: an attempt that finished during shutdown may just have taken the lease.
    try {
      await this.release();
    } catch (error) {
      this.options.log?.warn({ error: String(error) }, 'could not release the lease; it will expire');
    }
    this.stepDown('released');
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.tickTimer = setTimeout(() => {
      this.attempt = this.tick();
    }, ms);
  }

  private async tick(): Promise<void> {
    // A hung request must not stall the loop for good; the deadline steps down regardless. The bound is
    // generous so that a merely slow API server does not look like a failed renewal.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<Attempt>((resolve) => {
      timer = setTimeout(() => resolve(FAILED), this.renewDeadlineMs);
    });
    const result = await Promise.race([this.tryAcquireOrRenew().catch((error) => this.failed(error)), timeout]);
    clearTimeout(timer);
    if (!this.running) return;
    if (result.outcome === 'held') {
      this.lastError = undefined;
      this.renewedAt = result.sentAt;
      // A renewal whose answer came back after the deadline (the process was paused meanwhile) does not
      // count: the lease is ours on the server, and the next attempt renews it again and leads afresh.
      if (this.withinDeadline()) {
        this.armDeadline();
        if (!this.leading) {
          this.leading = true;
          // A term that follows this replica's own, with nobody else's in between: it stepped down only
          // because it could not renew (the API server was unreachable), not because another one took over.
          const continued = result.wasMine && this.hasLed;
          this.hasLed = true;
          this.options.log?.info({ lease: this.leaseName(), identity: this.identity, continued }, 'acquired the lease');
          this.callbacks?.onStartedLeading(continued);
        }
      } else {
        this.stepDown('renewed only after the renew deadline');
      }
    } else if (result.outcome === 'taken' && this.leading) {
      this.stepDown('another replica holds the lease');
    }
    // Candidates spread their attempts a little; the leader renews on the beat.
    this.schedule(this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + 0.2 * Math.random()));
  }

  /** Logs a failed attempt, once per distinct error, so a standby without RBAC says why every 2 s once. */
  private failed(error: unknown): Attempt {
    const message = error instanceof ApiError ? `HTTP ${error.code}` : String(error);
    if (message !== this.lastError) {
      this.lastError = message;
      this.options.log?.warn(
        { lease: this.leaseName(), identity: this.identity, error: message },
        'lease update failed',
      );
    }
    return FAILED;
  }

  /**
   * Steps down when the renew deadline passes without a renewal. The timer only makes a leader with no
   * write to make notice; the deadline itself is measured on the monotonic clock when it fires (and by
   * `isLeader()` before every write), so a timer that fires early re-arms and one that fires late, after
   * a pause, changes nothing that `isLeader()` had not already refused.
   */
  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    const left = (this.renewedAt ?? 0) + this.renewDeadlineMs - this.now();
    this.deadlineTimer = setTimeout(
      () => {
        if (!this.leading) return;
        if (this.withinDeadline()) this.armDeadline();
        else this.stepDown('could not renew the lease');
      },
      Math.max(0, left),
    );
  }

  private stepDown(reason: string): void {
    clearTimeout(this.deadlineTimer);
    if (!this.leading) return;
    this.leading = false;
    this.options.log?.warn({ lease: this.leaseName(), identity: this.identity, reason }, 'stepping down');
    this.callbacks?.onStoppedLeading();
  }

  private leaseName(): string {
    return `${this.options.namespace}/${this.options.name}`;
  }

  private path(name?: string): string {
    return resourcePath(LEASES, { namespace: this.options.namespace, name });
  }

  /**
   * Writes the Lease with only the fields the election means to write: creates it when `read` found none,
   * else replaces the one read, conditional on its resourceVersion, so a concurrent writer gets a 409.
   */
  private async write(read: Lease | undefined, spec: object): Promise<void> {
    const { name, namespace } = this.options;
    const metadata = read
      ? { name, namespace, resourceVersion: read.metadata?.resourceVersion ?? '' }
      : { name, namespace };
    await this.rest.request({
      method: read ? 'PUT' : 'POST',
      path: this.path(read ? name : undefined),
      ignoreAnswer: true,
      body: { apiVersion: LEASES.apiVersion, kind: 'Lease', metadata, spec },
    });
  }

  private async read(): Promise<Lease | undefined> {
    try {
      return await this.rest.request<Lease>({ method: 'GET', path: this.path(this.options.name) });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private async tryAcquireOrRenew(): Promise<Attempt> {
    // Wall-clock time is only written into the record, for people to read; it decides nothing here.
    const now = Date.now();
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    const lease = await this.read();
    if (!lease) {
      const sentAt = this.now();
      await this.write(undefined, {
        holderIdentity: this.identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: new V1MicroTime(now),
        renewTime: new V1MicroTime(now),
        leaseTransitions: 0,
      });
      this.observed = undefined;
      return { outcome: 'held', sentAt, wasMine: false };
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = JSON.stringify([holder, spec.renewTime, spec.leaseDurationSeconds, spec.leaseTransitions]);
    const seen = this.now();
    if (this.observed?.record !== record) this.observed = { record, at: seen };
    const validFor = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== '' && holder !== this.identity && this.observed.at + validFor > seen) return TAKEN;
    const mine = holder === this.identity;
    const sentAt = this.now();
    await this.write(lease, {
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : new V1MicroTime(now),
      renewTime: new V1MicroTime(now),
      leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
    });
    return { outcome: 'held', sentAt, wasMine: mine };
  }

  /** Clears the holder so that a standby need not wait for the lease to expire. */
  private async release(): Promise<void> {
    const lease = await this.read();
    if (!lease || lease.spec?.holderIdentity !== this.identity) return;
    const now = new V1MicroTime(Date.now());
    await this.write(lease, {
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: lease.spec?.leaseTransitions ?? 0,
    });
  }
}
