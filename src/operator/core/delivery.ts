/**
 * Sending a pass's Events: after those an earlier pass decided but could not send (the outbox, kept in
 * announcements.ts), either by the pass itself or handed to the driver's delivery (driver/event-delivery.ts).
 * An Event the sink could not send even after its own retries never fails the pass nor repeats its writes:
 * it waits for the object's next pass.
 */
import type { PostgresCluster } from '../api/schema.ts';
import type { KubeEvent } from '../domain/effects.ts';
import { type Announcements, notIn } from './announcements.ts';
import { isNotLeader } from './errors.ts';
import type { UnsentEvent } from './outcome.ts';
import type { ClusterKey, Ports } from './ports.ts';

export interface Delivery {
  sent: KubeEvent[];
  unsent: UnsentEvent[];
}

/** Sends `events` in order; with `inOrder`, nothing overtakes an Event that failed. */
export async function send(ports: Ports, regarding: PostgresCluster, events: KubeEvent[], inOrder = false) {
  const sent: KubeEvent[] = [];
  const unsent: UnsentEvent[] = [];
  for (const event of events) {
    // It and the rest are tried again together.
    if (inOrder && unsent.length > 0) {
      unsent.push({ event, error: unsent[0]?.error });
      continue;
    }
    try {
      await ports.events.emit(regarding, event);
      sent.push(event);
    } catch (error) {
      unsent.push({ event, error });
    }
  }
  return { sent, unsent };
}

/**
 * Sends what an earlier pass could not (unless this pass says the same itself), then `events`; keeps what
 * cannot be sent now for the next pass, whether or not this pass stored its status. With `deliver`, the
 * driver sends them after the pass, and keeps what it cannot send itself.
 */
export async function deliverEvents(
  ports: Ports,
  memory: Announcements | undefined,
  deliver: ((regarding: PostgresCluster, events: KubeEvent[]) => void) | undefined,
  stored: PostgresCluster,
  regarding: PostgresCluster,
  events: KubeEvent[],
): Promise<Delivery> {
  const outbox = memory?.takeUnsent(stored) ?? [];
  const toSend = [...notIn(outbox, events), ...events];
  if (deliver) {
    deliver(regarding, toSend);
    return { sent: toSend, unsent: [] };
  }
  const delivery = await send(ports, regarding, toSend);
  if (delivery.unsent.length > 0)
    memory?.keepUnsent(
      stored,
      delivery.unsent.map((u) => u.event),
    );
  return delivery;
}

/**
 * The object is gone. An Event may outlive what it is about, and the last pass of a deletion (the finalizer
 * removed) has no next pass of the object to leave unsent ones to: they are tried again, by passes of its key
 * after the queue's backoff, a few times (announcements.ts, GONE_EVENT_TRIES), then dropped (logged as not
 * sent by the pass that failed them first). One refusal must not lose a deletion's CleanupComplete.
 * Answers what was sent and whether to come back; undefined when nothing was left.
 */
export async function deliverLeftovers(ports: Ports, memory: Announcements | undefined, key: ClusterKey) {
  const leftover = memory?.gone(key);
  if (!leftover) return undefined;
  const { sent, unsent } = await send(ports, leftover.regarding, leftover.events, true);
  // Refused as not leading: no try is spent, and this replica's next term enqueues the key (driver/operator.ts).
  // Nor is one that sent some of them: only passes that made no progress count towards the limit.
  const notLeading = unsent.some((u) => isNotLeader(u.error));
  const counted = !notLeading && sent.length === 0;
  const kept =
    memory?.keepUnsentOfGone(
      leftover,
      unsent.map((u) => u.event),
      counted,
    ) ?? false;
  return { sent, unsent, again: kept && !notLeading };
}
