/**
 * What a pass whose status write failed leaves for the next pass of the same object: the status it could
 * not store and the announcements it could not make.
 *
 * A pass announces its transition, the conditions that turned True and its new failures only once the
 * status that records them is stored: the stored status is what keeps the next pass from announcing them
 * again. When the status write fails (a 409, a timeout) the next pass starts from the old stored status,
 * but not in the old world: the failed pass may have written to it (re-created a child), so the next pass
 * takes another path — it may stay where it was stored and announce neither the failed pass's transition
 * nor the return from it. Dropping the announcements loses them; emitting them at once repeats them when
 * the next pass takes the same transition again.
 *
 * So both are held here, with the stored status the failed pass started from. The next pass of that
 * object that starts from that same stored status goes on from the held status instead, as it would have
 * had the write succeeded: it takes the transitions and announces the changes that follow the failed
 * pass's, and once its own status is stored (or nothing needed storing) it makes the held announcements
 * too, except what it says itself (told apart by reason and message). If the failed write landed after
 * all (its answer was lost), the next pass starts from the very status held, which changes nothing but
 * the announcements.
 *
 * The passes after a failed write can fail too, on the same old view: a write whose answer was lost may
 * have landed while the watch has not delivered it yet, so the next pass still reads the status before it,
 * goes on from the held one, and its own write conflicts. Each such attempt is kept, in order, with what it
 * announced (its own and what it took over): whichever of them the stored status turns out to be, its
 * announcements are made, and the later attempts', never stored, are left to the passes that take those
 * transitions again. A pass that starts from any other stored status drops what is held: someone else
 * stored the progress, and announced it. This is the memory of one operator process (one per process):
 * a crash between the failed write and the next pass still loses the announcements, and Events it could not
 * send survive a lost lease only into its own next term with nobody else's in between (`forgetUnsent`).
 */
import { isDeepStrictEqual } from 'node:util';
import { isReadyState } from '../../../machines/states.ts';
import type { ObjectMeta, PostgresCluster, PostgresClusterStatus } from '../api/schema.ts';
import { clusterReady, type KubeEvent, warning } from '../domain/effects.ts';
import { CONDITION_OF, EventReason } from '../domain/vocabulary.ts';
import { refusalTextOf } from './errors.ts';
import type { PendingEvent } from './execute.ts';
import { type ClusterKey, keyString } from './ports.ts';
import type { WriteFailure } from './status.ts';

/** Bounds, so that an API outage over many clusters cannot grow the memory without limit. */
export const MAX_HELD_OBJECTS = 1024;
export const MAX_HELD_EVENTS = 64;
/** Failed writes kept per object from one stored status: more in a row mean the API is down, not lagging. */
export const MAX_HELD_ATTEMPTS = 8;

/**
 * What announces: a PostgresCluster, or a PostgresDatabase, whose pass (core/database/reconcile.ts) holds its
 * announcements by the same rules. One Announcements per kind: a database may have its cluster's name.
 */
export interface Announcing {
  metadata: ObjectMeta & { namespace: string };
  status?: unknown;
}

/** One failed status write: the status a pass tried to store, and what it would have announced. */
interface Attempt<S> {
  /** As the API returns it (undefined fields dropped). */
  status: S | undefined;
  /** The pass's own announcements and those it had taken over. */
  events: KubeEvent[];
}

interface Held<S> {
  /** The object's uid: a PostgresCluster deleted and created again under the same name is another object. */
  uid: string | undefined;
  /** The stored status the failed passes started from, as the API returns it. */
  from: unknown;
  /** Their attempts, oldest first: each went on from the one before it. */
  attempts: Attempt<S>[];
}

/** What a pass takes over from the pass before it whose status write failed. */
export interface Handover<S = PostgresClusterStatus> {
  /** The status to go on from: the one the failed pass computed. */
  status: S | undefined;
  /** Its announcements, and those it had taken over itself. */
  events: KubeEvent[];
}

/** Undefined fields dropped, as a status read back from the API has them. */
const normalised = <S>(status: S | undefined): S | undefined =>
  status === undefined ? undefined : JSON.parse(JSON.stringify(status));

/** `extra` without what `own` says too (the same reason and message). */
export const notIn = (extra: readonly KubeEvent[], own: readonly KubeEvent[]): KubeEvent[] =>
  extra.filter((e) => !own.some((o) => o.reason === e.reason && o.message === e.message));

/** Events of one object that the sink could not send; `triesSinceGone` counts the passes that found it gone. */
interface Unsent<O extends Announcing = PostgresCluster> {
  regarding: O;
  events: KubeEvent[];
  triesSinceGone?: number;
}

/**
 * How many passes may try to send the Events of an object that is gone (the last of a deletion's, such as
 * `CleanupComplete`) and send none of them, each after the queue's backoff, before they are dropped: an Event
 * refused once or twice in a row is ordinary, one that keeps failing must not hold its key in the queue for ever.
 * A pass that sent some is not counted: each Event is sent on its own, in order, so a deletion's six Events under
 * a steady refusal rate would otherwise spend the tries on progress and drop the last of them.
 */
export const GONE_EVENT_TRIES = 10;

export class Announcements<O extends Announcing = PostgresCluster, S = NonNullable<O['status']>> {
  /** By cluster key, least recently held first (every hold re-inserts). */
  private readonly held = new Map<string, Held<S>>();
  /** Events decided and stored but not sent, by cluster key. */
  private readonly unsent = new Map<string, Unsent<O>>();
  /** The objects (by cluster key, with their uid) that entered Ready in a pass that could not say so. */
  private readonly readyOwed = new Map<string, string | undefined>();
  /** The version of each object whose status write the API server refused, announced instead, by cluster key. */
  private readonly refused = new Map<string, { uid: string | undefined; resourceVersion: string | undefined }>();

  constructor(
    private readonly maxObjects = MAX_HELD_OBJECTS,
    private readonly maxEvents = MAX_HELD_EVENTS,
  ) {}

  /** How many objects have something held. */
  get size(): number {
    return this.held.size;
  }

  /**
   * What a pass of this object, read as stored, takes over from a pass before it whose status write
   * failed; undefined when nothing is held or it no longer applies (another object of that name, another
   * stored status), which is then forgotten.
   */
  pending(cluster: O): Handover<S> | undefined {
    const key = keyString(cluster.metadata);
    const entry = this.held.get(key);
    if (!entry) return undefined;
    const stored = normalised(cluster.status as S | undefined);
    if (entry.uid === cluster.metadata.uid) {
      const newest = entry.attempts.at(-1);
      if (newest && isDeepStrictEqual(stored, entry.from)) return { status: newest.status, events: newest.events };
      // A failed write landed after all: nothing to go on from but what is stored, and what that write said.
      const landed = entry.attempts.findLast((attempt) => isDeepStrictEqual(stored, attempt.status));
      if (landed) return { status: cluster.status as S | undefined, events: landed.events };
    }
    this.held.delete(key);
    return undefined;
  }

  /**
   * The status write of a pass failed. `cluster` is the object as stored when the pass read it,
   * `attempted` the status the pass computed, and `events` its announcements, with those it had taken over.
   */
  hold(cluster: O, attempted: S | undefined, events: readonly KubeEvent[]): void {
    const key = keyString(cluster.metadata);
    const from = normalised(cluster.status);
    const attempt = {
      status: normalised(attempted),
      // The newest, should a cluster's status stay unwritable for long: a pass announces its own last.
      events: events.slice(-this.maxEvents),
    };
    // A pass that failed from the same stored status as the ones before it went on from theirs.
    const entry = this.held.get(key);
    let earlier =
      entry && entry.uid === cluster.metadata.uid && isDeepStrictEqual(entry.from, from) ? entry.attempts : [];
    // The same status tried again (a pass that conflicted on a cache still behind) replaces the attempt
    // before it, whose announcements it took over: repeats must not push the first attempt out of the bound.
    if (isDeepStrictEqual(earlier.at(-1)?.status, attempt.status)) earlier = earlier.slice(0, -1);
    this.remember(this.held, key, {
      uid: cluster.metadata.uid,
      from,
      attempts: [...earlier, attempt].slice(-MAX_HELD_ATTEMPTS),
    });
  }

  /** Whether the object's Ready announcement is owed after a pass (see `readyOwed`), for the passes after it. */
  oweReady(cluster: O, owed: boolean): void {
    const key = keyString(cluster.metadata);
    if (owed) this.remember(this.readyOwed, key, cluster.metadata.uid);
    else this.readyOwed.delete(key);
  }

  /** Whether the object entered Ready in a pass that could not say so, and nobody has said it since. */
  owesReady(cluster: O): boolean {
    const owed = this.readyOwed.get(keyString(cluster.metadata));
    return owed !== undefined && owed === cluster.metadata.uid;
  }

  /** The object's status is stored and what was held is announced, or the object is gone. */
  forget(key: ClusterKey): void {
    this.held.delete(keyString(key));
    this.refused.delete(keyString(key));
  }

  /**
   * The API server refused the status of this version of the object at admission, and the pass announced
   * what it could not store instead. The same version will be refused the same way: its passes say nothing
   * again (`alreadyRefused`) until the object changes.
   */
  statusRefused(cluster: O): void {
    const { uid, resourceVersion } = cluster.metadata;
    this.held.delete(keyString(cluster.metadata));
    this.remember(this.refused, keyString(cluster.metadata), { uid, resourceVersion });
  }

  /** Whether this very version of the object had its status refused, and announced, before. */
  alreadyRefused(cluster: O): boolean {
    const entry = this.refused.get(keyString(cluster.metadata));
    return entry?.uid === cluster.metadata.uid && entry?.resourceVersion === cluster.metadata.resourceVersion;
  }

  /**
   * Events of this object that were decided, and their status stored, but that the sink could not send:
   * the next pass sends them. Unlike held announcements they do not depend on the stored status (it is
   * stored already), only on the object being the same one.
   */
  keepUnsent(cluster: O, events: readonly KubeEvent[]): void {
    const key = keyString(cluster.metadata);
    // Behind what is kept already: Events sent after the pass (driver/event-delivery.ts) may fail again
    // before the next pass has taken the earlier ones.
    const earlier = this.unsent.get(key);
    const kept = earlier && earlier.regarding.metadata.uid === cluster.metadata.uid ? earlier.events : [];
    this.remember(this.unsent, key, {
      regarding: cluster,
      events: [...kept, ...events].slice(-this.maxEvents),
    });
  }

  /**
   * The object is gone: nothing of it is held any more. Returns its unsent events with the object they
   * are about as it was last seen, to send once more: an Event may outlive what it is about, and the
   * last pass of a deletion (which removes the finalizer) has no next pass to leave them to.
   */
  gone(key: ClusterKey): Unsent<O> | undefined {
    this.held.delete(keyString(key));
    this.readyOwed.delete(keyString(key));
    this.refused.delete(keyString(key));
    const entry = this.unsent.get(keyString(key));
    this.unsent.delete(keyString(key));
    return entry;
  }

  /**
   * The Events of a gone object that a pass could not send (`gone` handed them over): kept for the next pass
   * of its key, unless they have been tried GONE_EVENT_TRIES times. Answers whether they are kept.
   */
  keepUnsentOfGone(entry: Unsent<O>, events: readonly KubeEvent[], counted = true): boolean {
    const tries = (entry.triesSinceGone ?? 0) + (counted ? 1 : 0);
    if (events.length === 0 || tries >= GONE_EVENT_TRIES) return false;
    const key = keyString(entry.regarding.metadata);
    this.remember(this.unsent, key, { regarding: entry.regarding, events: [...events], triesSinceGone: tries });
    return true;
  }

  /** The keys of the objects with Events still to send, gone ones included. */
  unsentKeys(): string[] {
    return [...this.unsent.keys()];
  }

  /**
   * Another replica has led since this process last did: the Events it could not send are dropped. Sent
   * now, they would come after that replica's own about the same clusters, out of order; their status is
   * stored, so neither replica says them again. Held announcements stay: they apply only while the stored
   * status is the one they started from, which another replica's progress would have changed.
   */
  forgetUnsent(): void {
    this.unsent.clear();
  }

  /** The unsent events of this object, handed over once (the caller keeps what it cannot send again). */
  takeUnsent(cluster: O): KubeEvent[] {
    const key = keyString(cluster.metadata);
    const entry = this.unsent.get(key);
    this.unsent.delete(key);
    return entry && entry.regarding.metadata.uid === cluster.metadata.uid ? entry.events : [];
  }

  /** Sets `key` as the most recent entry of `map`, dropping the least recent beyond the bound. */
  private remember<T>(map: Map<string, T>, key: string, value: T): void {
    map.delete(key);
    map.set(key, value);
    for (const oldest of map.keys()) {
      if (map.size <= this.maxObjects) break;
      map.delete(oldest);
    }
  }
}

/**
 * How the pass's status write went: stored (or nothing to store), failed, or refused at admission — or
 * never tried, because this replica lost the lease mid-pass.
 */
export type StatusOutcome =
  | { kind: 'stored' }
  | { kind: 'failed' }
  | { kind: 'refused'; error: unknown }
  | { kind: 'lostLease' };

/** Everything a pass may have to say, and what decides whether it says it now. */
export interface PassWords {
  /** The object as stored when the pass read it. */
  stored: PostgresCluster;
  /** The status the pass went on from (the stored one, or the one handed over), and the one it computed. */
  previous: PostgresClusterStatus | undefined;
  status: PostgresClusterStatus | undefined;
  /** What the pass before could not announce (its status write failed). */
  handover?: Handover;
  /** The Warning that the stored state was discarded (a misfit), if it was. */
  discarded?: KubeEvent;
  /** The events of the pass's writes and transitions, in order. */
  events: readonly PendingEvent[];
  /** The write that failed, as its condition reports it. */
  failure?: WriteFailure;
  statusOutcome: StatusOutcome;
}

/**
 * The one rule book of what a pass says, and when: the Events to send now, in order. What it cannot say
 * yet is held in `memory` for the next pass (see the top of this file).
 *
 * - The reports of the writes made always stand: those writes are not made again.
 * - Announcements (transitions, a new failure, a discarded state) are made once the status recording them
 *   is stored; if the status write failed they are held with that status for the next pass.
 * - `Ready` and `NotReady` are said only when the status stored changes the Ready condition: a pass that
 *   leaves Ready and comes back within itself (a ConfigMap repaired while following its writes) changed
 *   nothing a person watches; its writes' reports say what it did.
 * - A failed write earns one Warning, not one per retry.
 * - A status the API server refuses at admission will be refused again: what it cannot say is said in
 *   Events, once per version of the object.
 * - A replica that lost the lease says nothing more: the next leader decides again. Only the reports of
 *   the writes it made stand, and no other replica can know them: they wait in the outbox for this
 *   replica's next term, should nobody else lead in between (driver/operator.ts).
 */
export function announce(pass: PassWords, memory: Announcements | undefined): KubeEvent[] {
  const { stored, previous, discarded } = pass;
  // Ready and NotReady speak of the Ready condition: news only when the status it stores changes it.
  const readyChanged = isReady(previous) !== isReady(pass.status ?? previous);
  const news = ({ event }: PendingEvent) => readyChanged || !READINESS.has(event.reason);
  const events = pass.events.filter(news);
  const failed = pass.failure ? failureEvent(pass.failure, previous) : [];
  const owed = readyOwed(pass, memory) ? [clusterReady()] : [];
  const announced = [
    ...(discarded ? [discarded] : []),
    ...events.filter((e) => e.announcement).map((e) => e.event),
    ...owed,
    ...failed,
  ];
  // What the pass before could not announce, as far as this pass does not say it itself.
  const earlier = notIn(pass.handover?.events ?? [], announced);
  const told = [...earlier, ...(discarded ? [discarded] : []), ...events.map((e) => e.event), ...owed, ...failed];
  const reports = pass.events.filter((e) => !e.announcement).map((e) => e.event);
  // Said now or held with the status below; without the lease, the next term decides again.
  if (pass.statusOutcome.kind !== 'lostLease' && memory)
    memory.oweReady(stored, entersUnready(pass) || (staysUnready(pass) && memory.owesReady(stored)));
  switch (pass.statusOutcome.kind) {
    case 'refused': {
      const saidBefore = memory?.alreadyRefused(stored) ?? false;
      memory?.statusRefused(stored);
      return saidBefore ? reports : [...told, statusRejected(pass.statusOutcome.error)];
    }
    case 'failed':
      // Not stored, so not to be announced yet: held, with the status, for the next pass, which starts
      // from the same stored status but may not take this transition again (this pass may have changed
      // the world).
      memory?.hold(stored, pass.status, [...earlier, ...announced]);
      return reports;
    case 'stored':
      memory?.forget(stored.metadata);
      return told;
    case 'lostLease':
      if (reports.length > 0) memory?.keepUnsent(stored, reports);
      return [];
  }
}

const READINESS: ReadonlySet<string> = new Set([EventReason.Ready, EventReason.NotReady]);
const isReady = (status: PostgresClusterStatus | undefined) =>
  status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/**
 * Whether the pass says the Ready announcement of a transition made before it: the pass that entered Ready
 * could not say it when a write of its own failed (a 429 on the roles push, say) and kept the Ready condition
 * False, and the pass that then turns the condition True, in Ready already, takes no transition to announce.
 * Owed only for such an entry (`Announcements.oweReady`): a condition that was True in this state and went False
 * (a failed write on a Ready cluster) says nothing on coming back, as before. Kept by the process, as held
 * announcements are: a restart in between loses it.
 */
function readyOwed(pass: PassWords, memory: Announcements | undefined): boolean {
  const { previous, status } = pass;
  if (!isReadyState(previous?.state) || !isReadyState(status?.state) || isReady(previous) || !isReady(status))
    return false;
  return !pass.events.some(({ event }) => event.reason === EventReason.Ready) && !!memory?.owesReady(pass.stored);
}

/** Whether the pass ends in Ready with the Ready condition not True (a write of it failed). */
const staysUnready = (pass: PassWords) => isReadyState(pass.status?.state) && !isReady(pass.status);

/** Whether the pass enters Ready but cannot say so: a write of it failed and kept the Ready condition False. */
const entersUnready = (pass: PassWords) =>
  staysUnready(pass) &&
  pass.events.some(({ event, announcement }) => announcement && event.reason === EventReason.Ready);

/** A failed write earns one Warning, not one per retry: only when the status gone on from did not say so yet. */
function failureEvent(failure: WriteFailure, previous: PostgresClusterStatus | undefined): KubeEvent[] {
  const type = failure.component ? CONDITION_OF[failure.component] : 'Ready';
  const stored = previous?.conditions?.find((c) => c.type === type);
  if (stored?.reason === failure.reason && stored.message === failure.message) return [];
  return [warning(failure.reason, 'Write', failure.message)];
}

/**
 * An object stored before a rule of its CRD (or with validation off) can be refused every write, its
 * status included: what the status cannot say is said in an Event instead, with the API server's words.
 */
const statusRejected = (error: unknown): KubeEvent =>
  warning(
    EventReason.StatusRejected,
    'WriteStatus',
    'The API server refuses every write to this PostgresCluster, its status included, so the status cannot ' +
      `report what is wrong; fix or re-create the object: ${refusalTextOf(error)}`,
  );
