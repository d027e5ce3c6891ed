/**
 * Effects: what the pure core asks the imperative shell to do. The machine's actions carry these as
 * data; the reconcile core executes them in order through the ports and stops at the first failure.
 */
import type { OwnerReference } from '../api/schema.ts';
import type { KubeObject, ObjectRef } from './objects.ts';
import { type Component, EventReason, type NormalEventReason, type WarningReason } from './vocabulary.ts';

export interface KubeEvent {
  type: 'Normal' | 'Warning';
  /** Stable CamelCase reason. */
  reason: string;
  /** What was done, e.g. the transition or the write (events.k8s.io `action`). */
  action: string;
  message: string;
}

/** The superuser Secret to create; the adapter generates the password, so it never passes the core. */
export interface SecretTemplate {
  ref: ObjectRef;
  username: string;
  labels: Record<string, string>;
  owner: OwnerReference;
}

/**
 * A write to the world. Its optional `event` reports the write and is emitted only when the write
 * succeeded; a standalone `event` effect announces a transition of the machine.
 */
export type Write =
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer' }
  | { type: 'createSecret'; component: 'secret'; secret: SecretTemplate }
  /** Server-side apply of the fields pgfsm owns for this component. */
  | { type: 'apply'; component: Component; object: KubeObject }
  | { type: 'delete'; component: Component; ref: ObjectRef }
  | { type: 'setOwner'; component: Component; ref: ObjectRef; owner: OwnerReference }
  | { type: 'releaseOwner'; component: Component; ref: ObjectRef; ownerUid: string };

export type Effect = (Write & { event?: KubeEvent; joins?: Joined }) | { type: 'event'; event: KubeEvent };

/**
 * Writes planned together (the two Poolers, a database's connection Secrets) are reported as one event when
 * they all succeed: each write carries its own report (`event`), and from the second on also `joins`, the
 * report of it together with the writes before it. The shell sends `joins.event` in place of the report just
 * sent before it when that is `joins.previous`, and the write's own `event` otherwise: a run cut short by a
 * failure still reports each write that was made, and only those.
 */
export interface Joined {
  previous: KubeEvent;
  event: KubeEvent;
}

/** Sets `joins` on each write after the first; `together(n)` is the report of the first n writes. */
export function joinReports(writes: Array<{ event?: KubeEvent; joins?: Joined }>, together: (n: number) => KubeEvent) {
  for (let i = 1; i < writes.length; i++) {
    const previous = i === 1 ? writes[0]?.event : together(i);
    const write = writes[i];
    if (previous && write) write.joins = { previous, event: together(i + 1) };
  }
}

/** Whether the joined report of `write` takes the place of `last`, the report sent just before it in the pass. */
export const joinsLast = (write: { joins?: Joined }, last: KubeEvent | undefined): boolean =>
  write.joins !== undefined &&
  last !== undefined &&
  last.reason === write.joins.previous.reason &&
  last.message === write.joins.previous.message;

/** A Normal event: its reason is one of pgfsm's own Normal events (vocabulary.ts). */
export const normal = (reason: NormalEventReason, action: string, message: string): KubeEvent => ({
  type: 'Normal',
  reason,
  action,
  message,
});

/**
 * A PostgresCluster's Ready announcement: made on entering the Ready state, or by a later pass when a write that
 * failed in the entering pass kept the Ready condition False until then (core/announcements.ts).
 */
export const clusterReady = (): KubeEvent => normal(EventReason.Ready, 'BecomeReady', 'Cluster is up and running');

/** A Warning: its reason is a Warning event of pgfsm's own or the reason of the condition that went wrong. */
export const warning = (reason: WarningReason, action: string, message: string): KubeEvent => ({
  type: 'Warning',
  reason,
  action,
  message,
});

/** A standalone event effect, announcing a transition. */
export const announce = (event: KubeEvent): Effect => ({ type: 'event', event });
