/**
 * Events as `events.k8s.io/v1` objects, de-duplicated into series the way client-go's events broadcaster
 * does: the first occurrence creates an Event, a repeat within the series window bumps that Event's
 * `series` instead of adding an object, and a repeat after a quiet window starts a new Event.
 *
 * A write that fails on the way (a timeout, a cut connection, a 5xx, a 409, a 429) is tried again a couple
 * of times within the pass, after short delays; one the API server refused on its merits (forbidden,
 * invalid, namespace gone) is not. What still fails is thrown, and the pass reports the event as not sent.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import { classOf, type ErrorClass } from '../core/errors.ts';
import type { Clock, EventSink, EventSubject } from '../core/ports.ts';
import type { KubeEvent } from '../domain/effects.ts';
import { call, isAlreadyExists, isNotFound } from './errors.ts';
import { resourcePath } from './resources.ts';
import { CONTENT, RestClient } from './rest.ts';

const EVENTS = { apiVersion: 'events.k8s.io/v1', plural: 'events' };

/** client-go closes a series after six minutes without a repeat. */
export const SERIES_WINDOW_MS = 6 * 60 * 1000;
/** Bound on remembered series, so a long-lived operator with many clusters cannot grow without limit. */
const MAX_SERIES = 4096;
/** API limits: `note` 1 kB, `reason` and `action` 128 characters, `reportingInstance` 128. */
const NOTE_BYTES = 1024;
const SHORT = 128;
/** The waits before the second and the third attempt: short, as the pass waits for them. */
export const EVENT_RETRY_DELAYS_MS: readonly number[] = [200, 1000];
/**
 * Refusals that no retry changes: RBAC, an invalid Event, a namespace gone or being deleted, a name taken
 * (the same name is sent again), this replica no longer leading (refused before it was sent).
 */
const FINAL: ReadonlySet<ErrorClass> = new Set<ErrorClass>([
  'notLeader',
  'forbidden',
  'rejected',
  'notFound',
  'namespaceTerminating',
  'conflict',
]);
/** Answers that say the Event was not created; after any other failure it may have been. */
const ANSWERED: ReadonlySet<ErrorClass> = new Set<ErrorClass>([...FINAL, 'tooManyRequests']);

interface Series {
  namespace: string;
  name: string;
  count: number;
  lastObserved: number;
}

export interface EventSinkOptions {
  clock: Clock;
  reportingController?: string;
  reportingInstance?: string;
  /** The waits between attempts of one write; one attempt more than delays. Default EVENT_RETRY_DELAYS_MS. */
  retryDelaysMs?: readonly number[];
}

/** `2026-11-30T12:00:00.123000Z`: MicroTime wants exactly six fractional digits; a ms clock gives the first three. */
export const microTime = (ms: number) => new V1MicroTime(ms);

function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let out = text.slice(0, max);
  while (Buffer.byteLength(`${out}…`) > max) out = out.slice(0, -1);
  return `${out}…`;
}

export class KubernetesEventSink implements EventSink {
  private readonly rest: RestClient;
  private readonly clock: Clock;
  private readonly controller: string;
  private readonly instance: string;
  private readonly series = new Map<string, Series>();
  /**
   * Events whose create failed after an attempt whose answer was lost, by series key: that attempt may
   * have created it, so sending it again (the next pass does) reuses its name, and "already exists" then
   * means it was created — instead of a second Event under a new name.
   */
  private readonly uncertain = new Map<string, string>();
  private readonly retryDelaysMs: readonly number[];

  constructor(kc: KubeConfig, options: EventSinkOptions) {
    this.rest = new RestClient(kc);
    this.clock = options.clock;
    this.controller = options.reportingController ?? 'pgfsm';
    this.instance = (options.reportingInstance ?? `${this.controller}-${hostname()}`).slice(0, SHORT);
    this.retryDelaysMs = options.retryDelaysMs ?? EVENT_RETRY_DELAYS_MS;
  }

  /** `write`, tried again after each delay while it fails on the way rather than on its merits. */
  private async retrying<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        const delay = this.retryDelaysMs[attempt];
        if (delay === undefined || FINAL.has(classOf(error))) throw error;
        await sleep(delay);
      }
    }
  }

  async emit(regarding: EventSubject, event: KubeEvent): Promise<void> {
    const now = this.clock.now();
    const note = truncateBytes(event.message, NOTE_BYTES);
    const { namespace, name, uid } = regarding.metadata;
    const key = JSON.stringify([event.type, event.action, event.reason, uid ?? `${namespace}/${name}`, note]);
    this.forgetFinished(now);
    const open = this.series.get(key);
    const series =
      open && (await this.repeat(open, now))
        ? open
        : { namespace, name: await this.create(regarding, event, note, now, key), count: 1, lastObserved: now };
    // Re-inserted so that the map's order stays least recently observed first.
    this.series.delete(key);
    this.series.set(key, series);
  }

  /** Bumps the series of an existing Event; false when that Event has expired meanwhile (so create anew). */
  private async repeat(open: Series, now: number): Promise<boolean> {
    const count = open.count + 1;
    const body = { series: { count, lastObservedTime: microTime(now) } };
    const what = `patch Event ${open.namespace}/${open.name}`;
    try {
      // The count is absolute: a patch repeated after a lost answer sets the same count again.
      await this.retrying(() =>
        call({ what }, () =>
          this.rest.request({
            method: 'PATCH',
            path: resourcePath(EVENTS, open),
            body,
            contentType: CONTENT.mergePatch,
            ignoreAnswer: true,
          }),
        ),
      );
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
    open.count = count;
    open.lastObserved = now;
    return true;
  }

  private async create(
    regarding: EventSubject,
    event: KubeEvent,
    note: string,
    now: number,
    key: string,
  ): Promise<string> {
    const { namespace, name, uid } = regarding.metadata;
    // Like client-go: the regarding object's name plus a unique hex suffix; or the name of an earlier
    // attempt that may have created it. The suffix's 8 random hex digits are the head of a v4 UUID (all
    // random there): Node draws UUIDs from entropy it fetches in batches, where randomBytes(4) asked the
    // system for 4 bytes per Event (0.7 % of the operator's CPU over a 300-cluster run).
    const earlier = this.uncertain.get(key);
    const eventName = earlier ?? `${name}.${now.toString(16)}${randomUUID().slice(0, 8)}`;
    const body = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: eventName, namespace },
      regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, namespace, name, ...(uid ? { uid } : {}) },
      reason: event.reason.slice(0, SHORT),
      action: event.action.slice(0, SHORT),
      note,
      type: event.type,
      eventTime: microTime(now),
      reportingController: this.controller,
      reportingInstance: this.instance,
    };
    const what = `create Event ${event.reason} for ${namespace}/${name}`;
    let unanswered = earlier !== undefined;
    try {
      await this.retrying(async () => {
        try {
          await call({ what }, () =>
            this.rest.request({ method: 'POST', path: resourcePath(EVENTS, { namespace }), body, ignoreAnswer: true }),
          );
        } catch (error) {
          // Every attempt sends the same name: "already exists" after an attempt whose answer never came is
          // that attempt's Event, created all the same, not a second one to make.
          if (unanswered && isAlreadyExists(error)) return;
          unanswered ||= !ANSWERED.has(classOf(error));
          throw error;
        }
      });
    } catch (error) {
      if (unanswered) {
        this.uncertain.delete(key);
        this.uncertain.set(key, eventName);
        for (const oldest of this.uncertain.keys()) {
          if (this.uncertain.size <= MAX_SERIES) break;
          this.uncertain.delete(oldest);
        }
      }
      throw error;
    }
    this.uncertain.delete(key);
    return eventName;
  }

  private forgetFinished(now: number): void {
    // Least recently observed first (every write re-inserts): stop at the first series still open, so a
    // call costs what it removes, not a scan of every series.
    for (const [key, s] of this.series) {
      if (now - s.lastObserved < SERIES_WINDOW_MS) break;
      this.series.delete(key);
    }
    // Map iteration is insertion order and every write re-inserts: the first entries are the stalest.
    for (const key of this.series.keys()) {
      if (this.series.size < MAX_SERIES) break;
      this.series.delete(key);
    }
  }
}
