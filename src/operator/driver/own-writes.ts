/**
 * What this process's own writes left of the objects of one kind, served over a watch cache that has not
 * caught up with them yet, as client-go's MutationCache does: a pass reads its own writes, never the
 * version before them.
 *
 * Why: a pass that decides on a cached child which does not yet show the last pass's write (or deletion)
 * repeats that write and its one-time announcement — a role applied a second time, a Pooler "deleted"
 * again, a spec rollout started twice. Watches lag by seconds under load; the answer to a write is
 * already here. Each answer is kept until the watch delivers that version or a later one, each deletion
 * until the watch delivers it; then the cache is right again and the entry goes.
 *
 * - Versions are compared as the etcd revisions they are; an answer whose version is not a number is
 *   never kept (it could not be told apart from the cache's).
 * - A deletion hides the object it deleted (by uid) until the watch delivers the deletion; a new object
 *   of the same name (another uid) is shown as soon as the watch delivers it.
 * - Bounded: an entry lasts at most `maxAgeMs` (a watch that has not delivered a change by then is broken,
 *   and the informer relists), and at most `maxEntries` are kept, the oldest dropped first. Past either
 *   bound the cache is read as it is: the writes stay conditional on what the pass saw, so a stale view
 *   conflicts rather than overwrites; only the exactly-once of an announcement rests on this.
 */
import { performance } from 'node:perf_hooks';
import type { KubeObject } from '../domain/objects.ts';
import type { ObjectSource } from './sources.ts';

/** A resourceVersion as the number it is on etcd, or undefined when it is not one (then it is never compared). */
const revision = (version: string | undefined) => (version && /^[0-9]+$/.test(version) ? BigInt(version) : undefined);

/** Whether `mine` is at a later revision than `seen`; never when either version is not a number. */
function ahead(mine: KubeObject, seen: KubeObject): boolean {
  const written = revision(mine.metadata.resourceVersion);
  const cached = revision(seen.metadata.resourceVersion);
  return written !== undefined && cached !== undefined && written > cached;
}

/** How long an own write is served over the cache at most (see the module comment). */
export const OWN_WRITE_MAX_AGE_MS = 60_000;
/** How many own writes of one kind are kept at most: only those the watch has not delivered yet are. */
export const OWN_WRITES_MAX_ENTRIES = 10_000;

type Entry<T> =
  | { kind: 'written'; object: T; until: number }
  | { kind: 'deleted'; uid: string | undefined; until: number };

export interface OwnWritesOptions {
  maxAgeMs?: number;
  maxEntries?: number;
  /** Monotonic ms (default `performance.now`): the age bound must not follow wall-clock jumps. */
  now?: () => number;
}

/**
 * Joined, not concatenated: a template literal makes a tree of string pieces, which a map key keeps for as
 * long as the entry lives; a join makes one flat string.
 */
const keyOf = (namespace: string, name: string) => [namespace, name].join('/');

export class OwnWrites<T extends KubeObject> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(
    private readonly source: ObjectSource,
    options: OwnWritesOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? OWN_WRITE_MAX_AGE_MS;
    this.maxEntries = options.maxEntries ?? OWN_WRITES_MAX_ENTRIES;
    this.now = options.now ?? (() => performance.now());
    source.on((event) => {
      if (this.entries.size === 0) return;
      const key = keyOf(event.object.metadata.namespace ?? '', event.object.metadata.name);
      const entry = this.entries.get(key);
      if (entry && this.delivered(entry, event.type, event.object)) this.entries.delete(key);
    });
  }

  /** How many entries are kept now (for tests and the bound). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * A write answered `object`, as stored: served until the watch delivers its version. Nothing is kept when
   * the cache already holds it or a later version (the watch was quicker than the answer).
   */
  written(object: T | undefined): void {
    if (!object?.metadata?.name || revision(object.metadata.resourceVersion) === undefined) return;
    const namespace = object.metadata.namespace ?? '';
    const cached = this.source.get(namespace, object.metadata.name);
    if (cached && !ahead(object, cached)) return;
    this.keep(keyOf(namespace, object.metadata.name), { kind: 'written', object, until: this.now() + this.maxAgeMs });
  }

  /**
   * A delete of `namespace/name` was answered (or found it gone): it reads as absent until the watch delivers
   * the deletion. Nothing is kept when neither the cache nor an own write shows the object any more.
   */
  deleted(namespace: string, name: string): void {
    const key = keyOf(namespace, name);
    const shown = this.visible(key, this.source.get(namespace, name) as T | undefined);
    if (!shown) {
      this.entries.delete(key);
      return;
    }
    this.keep(key, { kind: 'deleted', uid: shown.metadata.uid, until: this.now() + this.maxAgeMs });
  }

  /** The object as this process last knows it: `cached`, unless an own write or deletion is newer. */
  get(namespace: string, name: string): T | undefined {
    const cached = this.source.get(namespace, name) as T | undefined;
    if (this.entries.size === 0) return cached;
    return this.visible(keyOf(namespace, name), cached);
  }

  private visible(key: string, cached: T | undefined): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return cached;
    if (this.now() >= entry.until) {
      this.entries.delete(key);
      return cached;
    }
    if (entry.kind === 'deleted') {
      // A cached object of another uid is a new one the watch has delivered: the deletion is behind it.
      if (cached && entry.uid !== undefined && cached.metadata.uid !== entry.uid) {
        this.entries.delete(key);
        return cached;
      }
      return undefined;
    }
    if (!cached || ahead(entry.object, cached)) return entry.object;
    this.entries.delete(key);
    return cached;
  }

  /** Whether a watch event shows what `entry` stands for, or something later: then the cache is right again. */
  private delivered(entry: Entry<T>, type: 'add' | 'update' | 'delete', object: KubeObject): boolean {
    if (entry.kind === 'deleted') {
      const sameObject = entry.uid === undefined || object.metadata.uid === entry.uid;
      return type === 'delete' ? sameObject : !sameObject;
    }
    const written = revision(entry.object.metadata.resourceVersion);
    const seen = revision(object.metadata.resourceVersion);
    // A version that is not a number cannot be placed: the cache is trusted again.
    return written === undefined || seen === undefined || seen >= written;
  }

  private keep(key: string, entry: Entry<T>): void {
    // Re-inserted, so that the Map's order stays the order of the writes and the oldest goes first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }
}
