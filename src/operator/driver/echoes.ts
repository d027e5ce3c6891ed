/**
 * The watch events a cluster's own pass raised and already saw, which wake nothing.
 *
 * A pass that follows its writes (core/follow.ts) ticks again on the objects as the API server's answers
 * show them: the ConfigMap it applied, the Secret it created, its PostgresCluster with the finalizer added.
 * The watch then delivers each of those writes as an event at exactly that version. Woken by it, the next
 * pass read what the last one had decided on and did nothing: measured on the real API server, one pass
 * in four to Ready was that one, woken by the echo of the ConfigMap written on the way to Ready (issue 10).
 *
 * So the outcome of a pass names the versions it followed, and an event that concerns that cluster and
 * shows one of them does not wake it: neither one that comes while the pass runs (held until its outcome
 * says whether the pass saw it), nor one that comes after. Any other event wakes it as before: another
 * version of the object (someone else's write, before or after ours), a delete, an event of another
 * cluster's (a Secret one cluster created and another's role names wakes the other). A version is
 * immutable, so an event at a version the pass followed shows it nothing it did not decide on. What is
 * remembered is bounded: an echo that comes after the entry was dropped wakes a pass that finds nothing to
 * do, as before. Only wakes are dropped, never writes: the informers' caches take every event, and the
 * periodic resync enqueues every cluster whatever is remembered here.
 *
 * The status a pass writes is the same case, apart (controller.ts): the version its write left the cluster
 * at is the one status-only update that wakes nothing. Anyone else's status wakes the cluster, so that its
 * pass writes back what the world says (mapping.ts, `clusterUpdateOf`).
 */
import type { ObjectVersion } from '../core/follow.ts';
import type { SourceEvent } from './sources.ts';

/** Objects whose followed versions have not all come back yet, at most: 4 per cluster for a thousand clusters. */
export const MAX_AWAITED_ECHOES = 4096;

/**
 * The object an event is about, and the version it shows; no version for a delete (never an echo, though
 * it is the object's next event). Undefined for an object without a name.
 */
function sightingOf({ type, object }: SourceEvent): Sighting | undefined {
  const { name, namespace = '', resourceVersion } = object.metadata ?? {};
  if (typeof name !== 'string') return undefined;
  const version = type !== 'delete' && typeof resourceVersion === 'string' ? resourceVersion : undefined;
  return { object: { kind: object.kind, namespace, name }, ...(version !== undefined ? { version } : {}) };
}

/**
 * Whether `version` is one of the versions `awaited` holds for `id`, which it then uses up together with those
 * written before it: the watch delivers an object's versions in order, so those can no longer come. Any other
 * version is the object's next event, after which none of them can come either: all are forgotten.
 */
function useUp(awaited: Map<string, readonly string[]>, id: string, version: string | undefined): boolean {
  const versions = awaited.get(id);
  if (versions === undefined) return false;
  const at = version === undefined ? -1 : versions.indexOf(version);
  if (at < 0 || at === versions.length - 1) awaited.delete(id);
  else awaited.set(id, versions.slice(at + 1));
  return at >= 0;
}

interface Sighting {
  object: Omit<ObjectVersion, 'resourceVersion'>;
  version?: string;
}

/** One object as one cluster's pass sees it. */
const idOf = (key: string, { kind, namespace, name }: Omit<ObjectVersion, 'resourceVersion'>) =>
  `${key}\u0000${kind}\u0000${namespace}\u0000${name}`;

export class Echoes {
  /** Per key whose pass is running: what the events that concerned it meanwhile showed, in order. */
  private readonly held = new Map<string, Array<Sighting | undefined>>();
  /**
   * By key and object, the versions passes followed whose events have not come yet, in the order they were
   * written (the next pass may write the object again before the event of the last one's write came); least
   * recently awaited first.
   */
  private readonly awaited = new Map<string, readonly string[]>();

  private readonly bound: number;
  /** Told of each event recognised as an echo (the metrics count them). */
  private readonly dropped: () => void;

  constructor(options: { bound?: number; onEcho?: () => void } = {}) {
    this.bound = options.bound ?? MAX_AWAITED_ECHOES;
    this.dropped = options.onEcho ?? (() => {});
  }

  /** A pass of `key` starts: events that concern it are held until it ends. */
  started(key: string): void {
    this.held.set(key, []);
  }

  /** Whether `event`, which concerns `key`, wakes it now (false also when it is held for the running pass). */
  wakes(key: string, event: SourceEvent): boolean {
    const sighting = sightingOf(event);
    if (sighting && useUp(this.awaited, idOf(key, sighting.object), sighting.version)) {
      this.dropped();
      return false;
    }
    const held = this.held.get(key);
    if (!held) return true;
    held.push(sighting);
    return false;
  }

  /**
   * The pass of `key` ended, having followed `followed`: whether an event held while it ran must wake it
   * (the key is then queued again, as an event during a pass always did). Followed versions whose event
   * has not come yet are remembered for it.
   */
  ended(key: string, followed: readonly ObjectVersion[] = []): boolean {
    const held = this.held.get(key) ?? [];
    this.held.delete(key);
    const unseen = new Map<string, readonly string[]>();
    for (const version of followed) {
      const id = idOf(key, version);
      unseen.set(id, [...(unseen.get(id) ?? []), version.resourceVersion]);
    }
    let wake = false;
    for (const sighting of held) {
      if (sighting && useUp(unseen, idOf(key, sighting.object), sighting.version)) this.dropped();
      else wake = true;
    }
    for (const [id, versions] of unseen) for (const version of versions) this.await(id, version);
    return wake;
  }

  /** How many followed versions are waiting for their event (for tests). */
  get awaiting(): number {
    return this.awaited.size;
  }

  private await(id: string, resourceVersion: string): void {
    const earlier = this.awaited.get(id) ?? [];
    this.awaited.delete(id);
    this.awaited.set(id, [...earlier, resourceVersion]);
    if (this.awaited.size <= this.bound) return;
    const oldest = this.awaited.keys().next();
    if (!oldest.done) this.awaited.delete(oldest.value);
  }
}
