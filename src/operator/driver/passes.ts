/**
 * The reconcile pass as one operator process runs it, with what the process keeps between passes: the
 * announcements a pass could not make (core/announcements.ts) and the Events still being sent after their
 * pass (event-delivery.ts). `pgfsm run` (operator.ts) and the simulation (src/tools/simulation) both run
 * exactly this, so that what the simulation shows is what the operator does.
 */

import type { PostgresDatabase } from '../api/schema.ts';
import { Announcements } from '../core/announcements.ts';
import type { DatabasePorts } from '../core/database/ports.ts';
import { type DatabaseReconcileOptions, reconcileDatabase } from '../core/database/reconcile.ts';
import { type ClusterKey, keyString, type Ports } from '../core/ports.ts';
import { type ReconcileOutcome, reconcile } from '../core/reconcile.ts';
import type { Settings } from '../domain/observation.ts';
import type { Controller } from './controller.ts';
import { databaseKeyString } from './database-mapping.ts';
import { DatabaseOutbox } from './database-outbox.ts';
import { DEFAULT_DELIVERY_LIMITS, type Delivered, type DeliveryLimits, EventDelivery } from './event-delivery.ts';

export interface ProcessPasses {
  readonly announcements: Announcements;
  readonly delivery: EventDelivery;
  /** One pass for one cluster: what the Controller runs. */
  pass(key: ClusterKey): Promise<ReconcileOutcome>;
  /** One pass for one PostgresDatabase, when the process was given their ports. */
  databasePass?: (key: ClusterKey) => Promise<ReconcileOutcome>;
  /** The Events of database passes not sent yet, each waiting for its database's next pass (database-outbox.ts). */
  readonly databaseOutbox: DatabaseOutbox;
  /** Queue keys with something left to send: the clusters' (announcements) and the databases' (outbox). */
  unsentKeys(): string[];
  /** Another replica led since this one did: what this one did not send would come after its words. */
  forgetUnsent(): void;
  /**
   * The controller that logs what the delivery sent and in whose queue an object whose Events could not be
   * sent is woken, so that its next pass sends them: set once it exists (it needs `pass` to be built).
   */
  attach(controller: Controller): void;
}

export interface ProcessPassesOptions {
  limits?: DeliveryLimits;
  /** Told of every run of deliveries, after the controller (the simulation counts the Events sent). */
  onDelivered?: (delivered: Delivered) => void;
  /** Whether a pass follows its own writes (core/reconcile.ts, `followWrites`); on unless told otherwise. */
  followWrites?: boolean;
  /** The ports of PostgresDatabase passes (core/database); without them no database is reconciled. */
  databasePorts?: DatabasePorts;
}

export function processPasses(ports: Ports, settings: Settings, options: ProcessPassesOptions = {}): ProcessPasses {
  const announcements = new Announcements();
  let controller: Controller | undefined;
  const delivery = new EventDelivery(
    ports.events,
    (delivered) => {
      const { regarding, sent, unsent } = delivered;
      const key = { namespace: regarding.metadata.namespace, name: regarding.metadata.name };
      controller?.reportDelivery(key, sent, unsent);
      // Events refused because this replica stopped leading are kept too: no other replica can know them.
      // If it leads again with nobody in between, its next passes send them; if another replica led
      // meanwhile, they are dropped when this one starts again (operator.ts), not sent after that one's.
      if (unsent.length > 0) {
        announcements.keepUnsent(
          regarding,
          unsent.map((u) => u.event),
        );
        // Soon, as after any transient failure; a watch event of the object wakes it sooner still.
        controller?.queue.addRetry(keyString(key), 'transient');
      }
      options.onDelivered?.(delivered);
    },
    options.limits ?? DEFAULT_DELIVERY_LIMITS,
  );
  const databaseOutbox = new DatabaseOutbox(ports.events);
  // The databases' held announcements apart from the clusters': a database may have its cluster's name.
  const databaseAnnouncements = new Announcements<PostgresDatabase>();
  /** A database whose Events wait is looked at again soon, as a cluster's is (the `transient` retry). */
  const onUnsent = (key: ClusterKey) => controller?.queue.addRetry(databaseKeyString(key), 'transient');
  return {
    announcements,
    delivery,
    databaseOutbox,
    unsentKeys: () => [...announcements.unsentKeys(), ...databaseOutbox.keys()],
    forgetUnsent: () => {
      announcements.forgetUnsent();
      databaseOutbox.forget();
    },
    pass: (key) =>
      reconcile(key, {
        ports,
        settings,
        announcements,
        deliver: (regarding, events) => delivery.deliver(regarding, events),
        followWrites: options.followWrites ?? true,
      }),
    ...(options.databasePorts
      ? {
          databasePass: databasePassOf(
            { ports: options.databasePorts, settings, announcements: databaseAnnouncements },
            databaseOutbox,
            onUnsent,
          ),
        }
      : {}),
    attach: (c) => {
      controller = c;
    },
  };
}

/**
 * A database pass as the controller takes it: its outcome in the cluster's shape (no follow-ups, no handover). Its
 * Events are handed to the outbox rather than sent by the pass, which would drop one the sink refuses; the
 * outcome names those sent, the ones its earlier passes left included.
 */
const databasePassOf =
  (options: DatabaseReconcileOptions, outbox: DatabaseOutbox, onUnsent: (key: ClusterKey) => void) =>
  async (key: ClusterKey): Promise<ReconcileOutcome> => {
    const { sink, parcels } = outbox.collector();
    const outcome = await reconcileDatabase(key, { ...options, ports: { ...options.ports, events: sink } });
    const { sent, waiting } = await outbox.send(databaseKeyString(key), parcels);
    if (waiting) onUnsent(key);
    return { ...outcome, events: sent };
  };
