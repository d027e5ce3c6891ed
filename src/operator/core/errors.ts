/**
 * Errors from the ports, sorted into the classes that decide what happens next. Adapters map their
 * API errors onto these (409 → conflict, 429 → tooManyRequests, 504 and 500 ServerTimeout → serverTimeout,
 * other 5xx and broken connections → unavailable, 404, 400/422 and admission webhook denials → rejected, …).
 */
export type ErrorClass =
  | 'conflict'
  | 'tooManyRequests'
  | 'serverTimeout'
  /** The client gave up waiting (its own timeout): the request may or may not have been served. */
  | 'timeout'
  /**
   * The API server, or something between it and us, failed the request: a connection refused, reset or
   * cut (socket hang up, EPIPE) or a 5xx other than a timeout (500, 502, 503: a restarting API server, a
   * proxy, a webhook that could not be called). The next attempt usually succeeds.
   */
  | 'unavailable'
  | 'notFound'
  /** The API server or an admission webhook refused the object: sending it again changes nothing. */
  | 'rejected'
  | 'forbidden'
  /**
   * The namespace is being deleted and refuses new objects (403 with cause NamespaceTerminating). Its
   * deletion takes the PostgresCluster too: nothing to fix, report or retry sooner than usual.
   */
  | 'namespaceTerminating'
  /**
   * Refused before it was sent: this replica no longer holds the leader lease by its own clock
   * (src/operator/driver/fenced-ports.ts). Its workers are stopping; the next leader does the work.
   */
  | 'notLeader'
  | 'other';

export class PortError extends Error {
  constructor(
    readonly errorClass: ErrorClass,
    message: string,
    /**
     * What the API server said when it refused the object (`rejected`), verbatim: the user must read
     * CNPG's own words to fix the spec. Absent when it may quote what was sent (Secrets).
     */
    readonly refusal?: string,
    /**
     * How long the API server asked us to wait before asking again (a 429's `Retry-After`), in ms. Only a
     * 429 carries it: a 503's `Retry-After` (the API server's own shutdown) is no reason to wait long.
     */
    readonly retryAfterMs?: number,
    /** The `reason` of the API server's `Status` answer (e.g. AlreadyExists), when it gave one. */
    readonly apiReason?: string,
  ) {
    super(message);
    this.name = 'PortError';
  }
}

export const classOf = (error: unknown): ErrorClass => (error instanceof PortError ? error.errorClass : 'other');

/** A write refused because its namespace is being deleted: a pass skips it quietly (see reconcile.ts). */
export const isNamespaceTerminating = (error: unknown): boolean => classOf(error) === 'namespaceTerminating';

/** A write refused because this replica no longer holds the leader lease (src/operator/driver/fenced-ports.ts). */
export const isNotLeader = (error: unknown): boolean => classOf(error) === 'notLeader';

/**
 * Failures that say nothing about the request itself: asking again, soon, usually succeeds. A single
 * idempotent read is retried within the pass on these (src/operator/kubernetes/errors.ts), and a pass that
 * ends on one comes back after a short backoff. A 429 is not one of them: the server asked us to slow down.
 */
export const isTransient = (errorClass: ErrorClass): boolean =>
  errorClass === 'timeout' || errorClass === 'serverTimeout' || errorClass === 'unavailable';

/**
 * How the queue retries a key after an error of this class, each with its own per-key counter
 * (src/operator/driver/workqueue.ts):
 * - `conflict`: our copy was stale; the next pass reads afresh, so at once, with a small backoff of its own;
 * - `transient`: the request failed on the way, not on its merits; short backoff, capped at seconds;
 * - `throttled` (429): when the server says (`Retry-After`), else like `transient`;
 * - `afterDelay`: the state's normal requeue delay, never escalated (a namespace being deleted);
 * - `persistent`: retrying alone will not fix it (forbidden, rejected, anything unknown); backoff up to minutes.
 */
export type Retry = 'conflict' | 'transient' | 'throttled' | 'afterDelay' | 'persistent';

export function retryFor(errorClass: ErrorClass): Retry {
  if (errorClass === 'conflict') return 'conflict';
  if (isTransient(errorClass)) return 'transient';
  if (errorClass === 'tooManyRequests') return 'throttled';
  // Asking again soon cannot help; the namespace's deletion ends this cluster anyway.
  if (errorClass === 'namespaceTerminating') return 'afterDelay';
  // Not hot: the workers stop, and a replica that leads again enqueues every cluster anyway.
  if (errorClass === 'notLeader') return 'afterDelay';
  return 'persistent';
}

/** The `Retry-After` of a 429, when the error carries one. */
export const retryAfterOf = (error: unknown): number | undefined =>
  error instanceof PortError && error.errorClass === 'tooManyRequests' ? error.retryAfterMs : undefined;

/** Which error decides the retry when several happen in one pass: the one that waits longest, roughly. */
const SEVERITY: Record<Retry, number> = { conflict: 0, transient: 1, throttled: 2, afterDelay: 3, persistent: 4 };

/**
 * The error that decides the retry when several happen in one pass: the most severe one, so that a
 * business error is never hidden behind a status-write conflict (the reference system's bug), nor a
 * server's request to slow down behind a connection reset.
 */
export function worstError(errors: unknown[]): unknown {
  return errors.reduce<unknown>(
    (worst, e) =>
      worst === undefined || SEVERITY[retryFor(classOf(e))] > SEVERITY[retryFor(classOf(worst))] ? e : worst,
    undefined,
  );
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** What the API server said when it refused a write: its own words when the port kept them. */
export const refusalTextOf = (error: unknown) =>
  error instanceof PortError && error.refusal !== undefined ? error.refusal : messageOf(error);
