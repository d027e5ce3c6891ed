/**
 * The Events of a PostgresDatabase's passes, sent after the pass and kept when they cannot be: an outbox, as the
 * clusters' Events have one (core/announcements.ts, event-delivery.ts).
 *
 * Why: a database's pass (core/database/reconcile.ts) sends its Events itself and drops one the sink refuses (the
 * API server busy, a lease lost for a moment), and the next pass finds nothing left to say: the Event is lost.
 * Here the pass hands its Events over instead; they are sent in order behind what its earlier passes could not
 * send, and the first one refused stops the line: it and every one behind it wait for the database's next pass,
 * which the driver asks for soon (`onUnsent`). Each Event is handed to the sink once per attempt, in order, so
 * none is repeated and none overtakes another.
 *
 * Bounded: at most MAX_KEPT_EVENTS wait per database (the oldest beyond go), and a database whose Events have
 * failed MAX_ATTEMPTS passes in a row (one that is gone, say; a refusal for want of the lease does not count)
 * has them dropped. A new term after another
 * replica led forgets them all (`forget`), as the clusters' are: what this replica did not say would now come
 * after what that one said.
 */
import { classOf } from '../core/errors.ts';
import type { EventSink, EventSubject } from '../core/ports.ts';
import type { KubeEvent } from '../domain/effects.ts';

export const MAX_KEPT_EVENTS = 64;
export const MAX_ATTEMPTS = 10;

interface Parcel {
  regarding: EventSubject;
  event: KubeEvent;
}

interface Kept {
  parcels: Parcel[];
  attempts: number;
}

export class DatabaseOutbox {
  /** By the database's queue key: what could not be sent yet, oldest first. */
  private readonly kept = new Map<string, Kept>();

  constructor(private readonly sink: EventSink) {}

  /** The keys of the databases with Events waiting: looked at again when this replica starts leading. */
  keys(): string[] {
    return [...this.kept.keys()];
  }

  forget(): void {
    this.kept.clear();
  }

  /** A sink that only collects, for one pass: what the pass says, in order, to be sent by `send`. */
  collector(): { sink: EventSink; parcels: Parcel[] } {
    const parcels: Parcel[] = [];
    return {
      parcels,
      sink: {
        emit: async (regarding, event) => {
          parcels.push({ regarding, event });
        },
      },
    };
  }

  /**
   * Sends what waits for `key`, then `parcels`, in order; answers what was sent and whether something still waits
   * (then the caller asks for another pass soon).
   */
  async send(key: string, parcels: readonly Parcel[]): Promise<{ sent: KubeEvent[]; waiting: boolean }> {
    const earlier = this.kept.get(key);
    const line = [...(earlier?.parcels ?? []), ...parcels];
    this.kept.delete(key);
    const sent: KubeEvent[] = [];
    for (let i = 0; i < line.length; i++) {
      const parcel = line[i] as Parcel;
      try {
        await this.sink.emit(parcel.regarding, parcel.event);
        sent.push(parcel.event);
      } catch (error) {
        // A refusal for want of the lease is no attempt: the lease comes back, or another replica forgets them.
        const failed = classOf(error) === 'notLeader' ? 0 : 1;
        const attempts = (earlier && i < earlier.parcels.length ? earlier.attempts : 0) + failed;
        if (attempts >= MAX_ATTEMPTS) return { sent, waiting: false };
        this.kept.set(key, { parcels: line.slice(i).slice(-MAX_KEPT_EVENTS), attempts });
        return { sent, waiting: true };
      }
    }
    return { sent, waiting: false };
  }
}
