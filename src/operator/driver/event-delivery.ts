/**
 * Sends the Events a pass decided after the pass has handed them over, so that its worker goes on to the next
 * key instead of waiting for one create after another (about ten per cluster on its way to Ready, each a round
 * trip to the API server).
 *
 * - In order per object: an object's Events go one at a time, a later pass's behind an earlier pass's.
 * - Bounded: at most `maxInFlight` creates at once over all objects (so that Events cannot crowd out the
 *   passes' own writes at the API server), at most `maxWaiting` Events waiting per object.
 * - At most once: each Event is handed to the sink once. One the sink could not send (after its own retries)
 *   stops its object's line; it and every Event behind it are reported unsent, in order, and the driver leaves
 *   them to the object's next pass, which sends them first (the outbox of core/announcements.ts).
 */

import type { PostgresCluster } from '../api/schema.ts';
import { type EventSink, keyString } from '../core/ports.ts';
import type { UnsentEvent } from '../core/reconcile.ts';
import type { KubeEvent } from '../domain/effects.ts';

export interface DeliveryLimits {
  maxInFlight: number;
  maxWaiting: number;
}

/** Enough to keep the sink busy without making Events the API server's main work. */
export const DEFAULT_DELIVERY_LIMITS: DeliveryLimits = { maxInFlight: 4, maxWaiting: 64 };

/** What became of a run of one object's Events: `regarding` is the object as the last of them saw it. */
export interface Delivered {
  regarding: PostgresCluster;
  sent: KubeEvent[];
  unsent: UnsentEvent[];
}

interface Parcel {
  regarding: PostgresCluster;
  event: KubeEvent;
}

export class QueueFullError extends Error {
  constructor(limit: number) {
    super(`more than ${limit} Events waiting for this object`);
    this.name = 'QueueFullError';
  }
}

export class EventDelivery {
  /** The Events waiting per object key; an object has a line only while its Events are being sent. */
  private readonly lines = new Map<string, Parcel[]>();
  private inFlight = 0;
  private readonly slotWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly sink: EventSink,
    private readonly onDelivered: (delivered: Delivered) => void,
    private readonly limits: DeliveryLimits = DEFAULT_DELIVERY_LIMITS,
  ) {}

  /** Queues `events` about `regarding` behind the ones already waiting for the same object. */
  deliver(regarding: PostgresCluster, events: readonly KubeEvent[]): void {
    if (events.length === 0) return;
    const key = keyString(regarding.metadata);
    const parcels = events.map((event) => ({ regarding, event }));
    const line = this.lines.get(key);
    if (line) {
      line.push(...parcels);
      // The oldest beyond the bound are reported unsent at once: the next pass sends them first.
      const over = line.length - this.limits.maxWaiting;
      if (over > 0)
        this.onDelivered({
          regarding,
          sent: [],
          unsent: this.unsent(line.splice(0, over), new QueueFullError(this.limits.maxWaiting)),
        });
      return;
    }
    this.lines.set(key, parcels);
    void this.run(key, parcels);
  }

  /** How many objects have Events waiting or being sent. */
  get busy(): number {
    return this.lines.size;
  }

  /** Resolves once nothing is waiting or being sent (a graceful stop, a simulation's settled instant). */
  idle(): Promise<void> {
    if (this.lines.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async run(key: string, line: Parcel[]): Promise<void> {
    const sent: KubeEvent[] = [];
    let unsent: UnsentEvent[] = [];
    let last = line[0]?.regarding;
    for (let parcel = line.shift(); parcel; parcel = line.shift()) {
      last = parcel.regarding;
      await this.takeSlot();
      try {
        await this.sink.emit(parcel.regarding, parcel.event);
        sent.push(parcel.event);
      } catch (error) {
        // Stop the line, so that nothing overtakes the Event that failed.
        const rest = [parcel, ...line.splice(0)];
        last = rest.at(-1)?.regarding ?? last;
        unsent = this.unsent(rest, error);
      } finally {
        this.releaseSlot();
      }
    }
    this.lines.delete(key);
    if (last) this.onDelivered({ regarding: last, sent, unsent });
    if (this.lines.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private unsent(parcels: Parcel[], error: unknown): UnsentEvent[] {
    return parcels.map(({ event }) => ({ event, error }));
  }

  private async takeSlot(): Promise<void> {
    if (this.inFlight < this.limits.maxInFlight) {
      this.inFlight++;
      return;
    }
    // The slot is handed over by releaseSlot, so inFlight stays counted.
    await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
  }

  private releaseSlot(): void {
    const next = this.slotWaiters.shift();
    if (next) next();
    else this.inFlight--;
  }
}
