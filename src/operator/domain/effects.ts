/**
 * Effects: what the pure core asks the imperative shell to do. The machine's actions carry these as
 * data; the reconcile core executes them in order through the ports and stops at the first failure.
 */
import type { OwnerReference } from '../api/schema.ts';
import type { KubeObject, ObjectRef } from './objects.ts';
import type { Component, NormalEventReason, WarningReason } from './vocabulary.ts';

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

export type Effect = (Write & { event?: KubeEvent }) | { type: 'event'; event: KubeEvent };

/** A Normal event: its reason is one of pgfsm's own Normal events (vocabulary.ts). */
export const normal = (reason: NormalEventReason, action: string, message: string): KubeEvent => ({
  type: 'Normal',
  reason,
  action,
  message,
});

/** A Warning: its reason is a Warning event of pgfsm's own or the reason of the condition that went wrong. */
export const warning = (reason: WarningReason, action: string, message: string): KubeEvent => ({
  type: 'Warning',
  reason,
  action,
  message,
});

/** A standalone event effect, announcing a transition. */
export const announce = (event: KubeEvent): Effect => ({ type: 'event', event });
