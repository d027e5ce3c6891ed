/**
 * Errors from the ports, sorted into the classes that decide what happens next. Adapters map their
 * API errors onto these (409 → conflict, 429 → tooManyRequests, 5xx timeouts, 404, 400/422 and admission
 * webhook denials → rejected, …).
 */
export type ErrorClass =
  | 'conflict'
  | 'tooManyRequests'
  | 'serverTimeout'
  | 'timeout'
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
  ) {
    super(message);
    this.name = 'PortError';
  }
}

export const classOf = (error: unknown): ErrorClass => (error instanceof PortError ? error.errorClass : 'other');

/** A write refused because its namespace is being deleted: a pass skips it quietly (see reconcile.ts). */
export const isNamespaceTerminating = (error: unknown): boolean => classOf(error) === 'namespaceTerminating';

/** What the queue does with a key after an error of this class. */
export type Retry = 'immediate' | 'afterDelay' | 'backoff';

export function retryFor(errorClass: ErrorClass): Retry {
  switch (errorClass) {
    case 'conflict':
      return 'immediate';
    case 'tooManyRequests':
    case 'serverTimeout':
    case 'timeout':
    // Asking again soon cannot help; the namespace's deletion ends this cluster anyway.
    case 'namespaceTerminating':
    // Not hot: the workers stop, and a replica that leads again enqueues every cluster anyway.
    case 'notLeader':
      return 'afterDelay';
    default:
      return 'backoff';
  }
}

const SEVERITY: Record<Retry, number> = { immediate: 0, afterDelay: 1, backoff: 2 };

/**
 * The error that decides the retry when several happen in one pass: the most severe one, so that a
 * business error is never hidden behind a status-write conflict (the reference system's bug).
 */
export function worstError(errors: unknown[]): unknown {
  return errors.reduce<unknown>(
    (worst, e) =>
      worst === undefined || SEVERITY[retryFor(classOf(e))] > SEVERITY[retryFor(classOf(worst))] ? e : worst,
    undefined,
  );
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
