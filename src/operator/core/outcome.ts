/**
 * What a pass answers the driver: whether the object exists, the states it went from and to, what it wrote
 * and said, and when to look again (the requeue).
 */
import type { StateMeta } from '../../../machines/meta.ts';
import { deadlineAt } from '../../../machines/summary.ts';
import type { KubeEvent } from '../domain/effects.ts';
import type { Settings } from '../domain/observation.ts';
import { classOf, retryAfterOf, retryFor } from './errors.ts';
import type { ObjectVersion } from './follow.ts';
import type { ClusterKey } from './ports.ts';

export type Requeue =
  | { kind: 'none' }
  /** A conflict (409): at once, with a small backoff of its own if it repeats. */
  | { kind: 'immediate' }
  | { kind: 'after'; ms: number }
  /** The request failed on the way (reset, client timeout, 5xx): a short backoff, capped at seconds. */
  | { kind: 'transient'; error: unknown }
  /** The API server refused for load (429): after its `Retry-After` when it sent one, else as transient. */
  | { kind: 'throttled'; retryAfterMs?: number; error: unknown }
  /** Retrying alone will not fix it (forbidden, rejected, unknown): backoff up to minutes. */
  | { kind: 'backoff'; error: unknown };

export interface ReconcileOutcome {
  key: ClusterKey;
  /** False when the PostgresCluster does not exist (any more). */
  found: boolean;
  from?: string;
  to?: string;
  requeue: Requeue;
  /** The error that decided the requeue, if any. */
  error?: unknown;
  statusWritten: boolean;
  /** Writes to the world other than the status. */
  writes: number;
  /** The events sent or, when the pass was given `deliver` (`handedOver`), handed to it to send. */
  events: KubeEvent[];
  /** The events went to `deliver`, which reports what it sent itself. */
  handedOver?: true;
  /** The events the sink could not send even after its own retries; absent when every event was sent. */
  unsent?: UnsentEvent[];
  /**
   * The objects, at the versions its own writes left them, that the pass followed (follow.ts): a later tick
   * of the pass was taken on each, so their watch events tell it nothing new. Absent when there are none.
   */
  followed?: ObjectVersion[];
  /**
   * The version the status write left the cluster at (its answer's resourceVersion), when the pass wrote one:
   * the watch event of that version shows the status this pass decided on, and wakes nothing (driver/echoes.ts).
   */
  statusVersion?: string;
}

export interface UnsentEvent {
  event: KubeEvent;
  /** Why the last attempt failed. */
  error: unknown;
}

export const requeueAfterError = (error: unknown, settings: Pick<Settings, 'requeueDelayMs'>): Requeue => {
  switch (retryFor(classOf(error))) {
    case 'conflict':
      return { kind: 'immediate' };
    case 'transient':
      return { kind: 'transient', error };
    case 'throttled': {
      const retryAfterMs = retryAfterOf(error);
      return { kind: 'throttled', ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), error };
    }
    case 'afterDelay':
      // The state's own requeue, never escalated: nothing will change sooner.
      return { kind: 'after', ms: settings.requeueDelayMs };
    case 'persistent':
      return { kind: 'backoff', error };
  }
};

/** What decides a pass's requeue. */
export interface RequeueFacts {
  /** The worst error of the pass (a write's or the status write's), if any. */
  error: unknown;
  /** The status write was refused at admission, and it was the pass's only error. */
  refusedOnly: boolean;
  /** The first of the Events the sink could not send, when they wait for the next pass. */
  waiting?: UnsentEvent;
  cutShort: boolean;
  meta: StateMeta;
  /** When the machine entered the state the pass ended in. */
  since: number;
  now: number;
  settings: Settings;
  /** When a verdict changes by time alone (Assessment.recheckAt): look again then if that comes first. */
  recheckAt?: number;
}

export function requeueOf(facts: RequeueFacts): Requeue {
  const { error, meta, since, now, settings } = facts;
  // A refused status is refused again until the object changes, and its watch reports any change.
  if (facts.refusedOnly) return { kind: 'none' };
  if (error !== undefined) return requeueAfterError(error, settings);
  // Events the sink could not send wait for the next pass: soon, as after a transient failure.
  if (facts.waiting) return { kind: 'transient', error: facts.waiting.error };
  if (facts.cutShort) return { kind: 'after', ms: 0 };
  const recheck = facts.recheckAt !== undefined ? Math.max(facts.recheckAt - now + 100, 100) : undefined;
  // A state that waits on nothing still looks again when a verdict changes by time (a running backup).
  if (meta.requeue === 'none') return recheck !== undefined ? { kind: 'after', ms: recheck } : { kind: 'none' };
  // Look again after the delay, or when the progress deadline passes if that comes first.
  const deadline = deadlineAt({ meta, since, settings });
  const ms =
    deadline !== undefined && now <= deadline
      ? Math.min(settings.requeueDelayMs, Math.max(deadline - now + 1000, 1000))
      : settings.requeueDelayMs;
  return { kind: 'after', ms: recheck !== undefined && recheck < ms ? recheck : ms };
}
