/**
 * An in-memory Kubernetes API for the simulation and the tests: objects with uid, resourceVersion and
 * generation, finalizers and deletion timestamps, owner-reference garbage collection, server-side apply
 * per field manager, change notifications, and injectable failures. It is a test double behind the
 * ports, not a substitute for the real API server (the integration suite uses a real one).
 */
import { type ErrorClass, PortError } from '../../operator/core/errors.ts';
import type { KubeObject, ObjectRef } from '../../operator/domain/objects.ts';
import { type ManagedFields, serverSideApply } from './ssa.ts';

export type StoredObject = KubeObject & { [field: string]: unknown };

export interface Change {
  type: 'added' | 'modified' | 'deleted';
  object: StoredObject;
  /** Only `status` changed: controllers do not react to their own status writes. */
  statusOnly: boolean;
}

export type Verb = 'get' | 'create' | 'apply' | 'update' | 'updateStatus' | 'delete';

interface Fault {
  kind: string;
  verb: Verb;
  errorClass: ErrorClass;
  /** How many calls fail; Infinity until cleared. */
  times: number;
}

/**
 * A validating admission webhook: sees a write (the object as it would be stored, and the stored one
 * before it) and returns the message it refuses it with, or nothing to admit it.
 */
export type Admission = (write: {
  verb: Verb;
  manager?: string;
  object: StoredObject;
  previous: StoredObject | undefined;
}) => string | undefined;

/**
 * A deep copy of JSON-shaped data that shares its strings (immutable) with the original. structuredClone copies
 * every string as well, so each copy of a stored object — the store's, every watcher's cache, each read — held
 * strings of its own: most of a simulated fleet's memory. Anything not plain (none is expected) is cloned.
 */
function copyOf<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  // A spread, then the nested parts: the copy gets its properties laid out in one go, about a quarter smaller than
  // an object grown one property at a time (which keeps them in a separate backing store).
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const key in out) {
    const part = out[key];
    if (typeof part === 'object' && part !== null) out[key] = copyOf(part);
  }
  return out as T;
}

/**
 * Fields whose values repeat across a fleet's objects — kinds, API versions, the namespace, reasons,
 * phases and timestamps (a simulated fleet spans minutes: a few hundred distinct instants) — yet arrive as a string
 * of their own in each write (an operator's status, a template literal, a parse). The store keeps one instance of
 * each such value (`Strings`). Names, uids and messages are left out: nearly every one is distinct (a message
 * names its cluster), and the pool would keep stale ones for what the sharing saves (a pool of every string, and
 * one with messages, measured larger than the duplicates they removed).
 */
const POOLED_FIELDS = new Set([
  'apiVersion',
  'kind',
  'namespace',
  'type',
  'status',
  'reason',
  'phase',
  'state',
  'lastTransitionTime',
  'creationTimestamp',
  'deletionTimestamp',
  'stateSince',
]);
/** Past this many values the pool starts over: it follows what is written, at the cost of some sharing only. */
const POOLED_MAX = 20_000;

class Strings {
  private readonly pool = new Map<string, string>();

  shared(value: string): string {
    const known = this.pool.get(value);
    if (known !== undefined) return known;
    if (this.pool.size >= POOLED_MAX) this.pool.clear();
    this.pool.set(value, value);
    return value;
  }
}

/**
 * `next` with every part that equals the same part of `previous` (same keys in the same order, same values)
 * replaced by that part of `previous`, strings included, and the values of POOLED_FIELDS by the pool's. A new version of a stored object then holds only what
 * changed: a status write shares the spec, the metadata's labels and owners
 * and the unchanged conditions with the version before it, instead of a full copy per write that the heap keeps
 * until the next full GC. `next` must be this server's own copy (it is changed in place); stored objects are
 * never changed.
 */
function sharedWith(next: unknown, previous: unknown, strings: Strings, field?: string): unknown {
  if (next === previous) return previous;
  if (typeof next === 'string') return field !== undefined && POOLED_FIELDS.has(field) ? strings.shared(next) : next;
  if (typeof next !== 'object' || next === null) return next;
  const prior = typeof previous === 'object' && previous !== null ? previous : undefined;
  if (Array.isArray(next)) {
    const before = Array.isArray(prior) ? prior : undefined;
    let same = before !== undefined && next.length === before.length;
    for (let i = 0; i < next.length; i++) {
      const part = sharedWith(next[i], before?.[i], strings);
      next[i] = part;
      same &&= part === before?.[i];
    }
    return same ? previous : next;
  }
  const before = prior !== undefined && !Array.isArray(prior) ? (prior as Record<string, unknown>) : undefined;
  const after = next as Record<string, unknown>;
  const keys = Object.keys(after);
  const previousKeys = before ? Object.keys(before) : [];
  let same = before !== undefined && keys.length === previousKeys.length;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const part = sharedWith(after[key], before?.[key], strings, key);
    after[key] = part;
    same &&= previousKeys[i] === key && part === before?.[key];
  }
  return same ? previous : next;
}

/** Freezes every object and array of a stored version (already frozen parts are shared ones, frozen before). */
function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const part of Object.values(value)) deepFreeze(part);
}

/**
 * Under the tests, stored versions are frozen: a watcher or a caller that changed one (it is shared with the
 * watchers' caches and with the versions after it) would throw there instead of changing them all unseen.
 * Not in a fleet: freezing every version costs a walk of it per write.
 */
const FREEZE_STORED = process.env.VITEST !== undefined;

/**
 * Joined, not concatenated: a template literal makes a tree of string pieces (a ConsString per `+`), which a Map
 * key keeps for as long as the object is stored; a join makes one flat string, about half the size.
 */
const refKey = (ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>) => [ref.kind, ref.namespace, ref.name].join('/');

/** Kinds whose spec changes bump `metadata.generation`. */
const GENERATION_KINDS = new Set(['PostgresCluster', 'PostgresClusterClass', 'Cluster', 'Pooler', 'Deployment']);

export class MemoryApiServer {
  private readonly objects = new Map<string, StoredObject>();
  private readonly managedFields = new Map<string, ManagedFields>();
  /**
   * One instance of each distinct field set and of each distinct manager-to-fields map: the objects of a fleet
   * are applied with the same fields, so each object's entry is a shared, never changed instance (a few such
   * instances in all) instead of a Map and Sets of path strings per object and per apply.
   */
  private readonly fieldSets = new Map<string, ReadonlySet<string>>();
  private readonly fieldMaps = new Map<string, ManagedFields>();
  private readonly fieldSetKeys = new WeakMap<ReadonlySet<string>, string>();
  /**
   * When each stored key was (last) inserted into `objects`: `list` returns objects in that order (a Map
   * iterates in insertion order), so sorting by it lets `listNamed` answer in the same order without
   * scanning the whole store.
   */
  private readonly insertedAt = new Map<string, number>();
  private insertions = 0;
  private readonly strings = new Strings();
  private readonly listeners: Array<(change: Change) => void> = [];
  private readonly undelivered: Change[] = [];
  private delivering = false;
  private faults: Fault[] = [];
  private readonly admissions: Admission[] = [];
  private revision = 0;
  private uids = 0;
  /**
   * The writes the API accepted, for tests that count writes: every one, unless a simulation keeps only the
   * latest (SimulationOptions.logs); `writeCount` counts them all.
   */
  readonly writes: Array<{ verb: Verb; kind: string; name: string }> = [];
  writeCount = 0;

  constructor(private readonly now: () => number = Date.now) {}

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /** Makes the next `times` calls of `verb` on `kind` fail with `errorClass`. */
  injectFault(kind: string, verb: Verb, errorClass: ErrorClass, times = 1): void {
    this.faults.push({ kind, verb, errorClass, times });
  }

  clearFaults(): void {
    this.faults = [];
  }

  /** Adds a validating webhook for create and apply; a refusal is `rejected`, as the API server's 422. */
  admit(admission: Admission): void {
    this.admissions.push(admission);
  }

  private admitted(verb: Verb, object: StoredObject, previous: StoredObject | undefined, manager?: string): void {
    for (const admission of this.admissions) {
      const refusal = admission({ verb, object, previous, ...(manager !== undefined ? { manager } : {}) });
      if (refusal !== undefined) {
        throw new PortError('rejected', `${verb} ${object.kind} ${object.metadata.name}: ${refusal}`, refusal);
      }
    }
  }

  private check(kind: string, verb: Verb): void {
    const fault = this.faults.find((f) => f.kind === kind && f.verb === verb && f.times > 0);
    if (!fault) return;
    fault.times--;
    throw new PortError(fault.errorClass, `injected ${fault.errorClass} on ${verb} ${kind}`);
  }

  get<T extends KubeObject = StoredObject>(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): T | undefined {
    this.check(ref.kind, 'get');
    const found = this.objects.get(refKey(ref));
    return found ? (copyOf(found) as unknown as T) : undefined;
  }

  list<T extends KubeObject = StoredObject>(kind: string, namespace?: string): T[] {
    return [...this.objects.values()]
      .filter((o) => o.kind === kind && (namespace === undefined || o.metadata.namespace === namespace))
      .map((o) => copyOf(o) as unknown as T);
  }

  /**
   * The objects of `kind` named in `refs` that exist, copied and in the order `list` would return them,
   * at the cost of the names asked for rather than of the whole store (the CNPG simulator asks after
   * every change for the few objects that changed; a `list` each time made a fleet quadratic).
   */
  listNamed<T extends KubeObject = StoredObject>(
    kind: string,
    refs: Iterable<Pick<ObjectRef, 'namespace' | 'name'>>,
  ): T[] {
    const keys = new Set<string>();
    for (const ref of refs) {
      const key = refKey({ kind, namespace: ref.namespace, name: ref.name });
      if (this.objects.has(key)) keys.add(key);
    }
    return [...keys]
      .sort((a, b) => (this.insertedAt.get(a) ?? 0) - (this.insertedAt.get(b) ?? 0))
      .map((key) => copyOf(this.objects.get(key)) as unknown as T);
  }

  /**
   * Changes go out in the order they were stored, as a watch delivers them: a listener that writes (the
   * CNPG simulator reacting to a change) queues its own change behind the one being delivered, instead of
   * overtaking it, so that no listener ever sees an older version of an object after a newer one. All are
   * delivered before the outermost write returns.
   */
  private notify(type: Change['type'], object: StoredObject, statusOnly = false): void {
    // The stored object itself: it is never changed (see `store`), and a watcher's cache keeps what it is given,
    // as an informer keeps what the watch decoded; a copy per change doubled what a fleet keeps.
    this.undelivered.push({ type, object, statusOnly });
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (let change = this.undelivered.shift(); change; change = this.undelivered.shift()) {
        for (const listener of [...this.listeners]) listener(change);
      }
    } finally {
      this.delivering = false;
    }
  }

  private stamp(object: StoredObject, previous: StoredObject | undefined): void {
    this.revision++;
    object.metadata.resourceVersion = String(this.revision);
    if (!previous) {
      object.metadata.uid ??= `uid-${++this.uids}`;
      object.metadata.creationTimestamp ??= new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
      if (GENERATION_KINDS.has(object.kind)) object.metadata.generation = 1;
      return;
    }
    object.metadata.uid = previous.metadata.uid;
    object.metadata.creationTimestamp = previous.metadata.creationTimestamp;
    const specChanged = JSON.stringify(object.spec) !== JSON.stringify(previous.spec);
    object.metadata.generation =
      (previous.metadata.generation ?? 1) + (specChanged && GENERATION_KINDS.has(object.kind) ? 1 : 0);
  }

  /**
   * Stores `written` (this server's own copy, changed here) as the object's new version. A stored version is never
   * changed afterwards, by this server or anyone: it shares its unchanged parts with the version before it
   * (`sharedWith`), and the watchers are handed it as it is (`notify`). Reads hand out copies.
   */
  private store(written: StoredObject, verb: Verb, statusOnly = false): StoredObject {
    const key = refKey({
      kind: written.kind,
      namespace: written.metadata.namespace ?? '',
      name: written.metadata.name,
    });
    const previous = this.objects.get(key);
    this.stamp(written, previous);
    const object = sharedWith(written, previous, this.strings) as StoredObject;
    if (FREEZE_STORED) deepFreeze(object);
    this.objects.set(key, object);
    if (!previous) this.insertedAt.set(key, ++this.insertions);
    this.writes.push({ verb, kind: object.kind, name: object.metadata.name });
    this.writeCount++;
    this.notify(previous ? 'modified' : 'added', object, statusOnly);
    return copyOf(object);
  }

  create(object: StoredObject): StoredObject {
    this.check(object.kind, 'create');
    const ref = { kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name };
    if (this.objects.has(refKey(ref)))
      throw new PortError('conflict', `${object.kind} ${object.metadata.name} already exists`);
    this.admitted('create', object, undefined);
    return this.store(copyOf(object), 'create');
  }

  /** Server-side apply of `object` by `manager`; creates the object when missing. */
  apply(object: StoredObject, manager: string): StoredObject {
    this.check(object.kind, 'apply');
    const key = refKey({ kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name });
    const existing = this.objects.get(key);
    if (existing?.metadata.deletionTimestamp) throw new PortError('conflict', `${object.kind} is being deleted`);
    const live: StoredObject = existing
      ? copyOf(existing)
      : ({
          apiVersion: object.apiVersion,
          kind: object.kind,
          metadata: { name: object.metadata.name, namespace: object.metadata.namespace },
        } as StoredObject);
    const {
      metadata,
      apiVersion: _a,
      kind: _k,
      status: _s,
      ...body
    } = copyOf(object) as StoredObject & { status?: unknown };
    const { name: _n, namespace: _ns, ...ownedMeta } = metadata;
    // A copy: a refused apply must leave the field ownership as it was (the sets themselves are never changed).
    const fields: ManagedFields = new Map(this.managedFields.get(key));
    serverSideApply(live as unknown as Record<string, unknown>, { metadata: ownedMeta, ...body }, manager, fields);
    this.admitted('apply', live, existing, manager);
    this.managedFields.set(key, this.interned(fields));
    return this.store(live, 'apply');
  }

  /** The shared instance of `fields` (see `fieldSets`). */
  private interned(fields: ManagedFields): ManagedFields {
    const parts: string[] = [];
    for (const [manager, owned] of fields) {
      let setKey = this.fieldSetKeys.get(owned);
      if (setKey === undefined) {
        setKey = [...owned].join('\u0001');
        const shared = this.fieldSets.get(setKey);
        if (shared) fields.set(manager, shared as Set<string>);
        else {
          this.fieldSets.set(setKey, owned);
          this.fieldSetKeys.set(owned, setKey);
        }
      }
      parts.push(`${manager}\u0002${setKey}`);
    }
    const mapKey = parts.join('\u0003');
    const shared = this.fieldMaps.get(mapKey);
    if (shared) return shared;
    this.fieldMaps.set(mapKey, fields);
    return fields;
  }

  /** A full update of an existing object (optimistic concurrency on resourceVersion when given). */
  update(object: StoredObject): StoredObject {
    this.check(object.kind, 'update');
    const key = refKey({ kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name });
    const existing = this.objects.get(key);
    if (!existing) throw new PortError('notFound', `${object.kind} ${object.metadata.name} not found`);
    if (object.metadata.resourceVersion && object.metadata.resourceVersion !== existing.metadata.resourceVersion) {
      throw new PortError('conflict', `${object.kind} ${object.metadata.name} was modified`);
    }
    const next = copyOf(object);
    next.status = existing.status;
    if (existing.metadata.deletionTimestamp) next.metadata.deletionTimestamp = existing.metadata.deletionTimestamp;
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.remove(key, existing);
      return next;
    }
    return this.store(next, 'update');
  }

  /**
   * Replaces `status` (a merge patch of the whole status on the /status subresource), conditional on
   * `resourceVersion` when given, as a patch carrying `metadata.resourceVersion` is.
   */
  updateStatus(
    ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>,
    status: unknown,
    resourceVersion?: string,
  ): StoredObject {
    this.check(ref.kind, 'updateStatus');
    const existing = this.objects.get(refKey(ref));
    if (!existing) throw new PortError('notFound', `${ref.kind} ${ref.name} not found`);
    if (resourceVersion !== undefined && resourceVersion !== existing.metadata.resourceVersion) {
      throw new PortError('conflict', `${ref.kind} ${ref.name} was modified`);
    }
    // Only the metadata is stamped: the rest of the stored version is shared, never changed.
    const next = { ...existing, metadata: { ...existing.metadata }, status: copyOf(status) } as StoredObject;
    return this.store(next, 'updateStatus', true);
  }

  /** Writes an object as another controller would (no field ownership), e.g. CNPG's own changes. */
  put(object: StoredObject, statusOnly = false): StoredObject {
    const key = refKey({ kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name });
    const existing = this.objects.get(key);
    const next = copyOf(object);
    if (existing) next.metadata.resourceVersion = existing.metadata.resourceVersion;
    return this.store(next, 'update', statusOnly);
  }

  delete(ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>): void {
    this.check(ref.kind, 'delete');
    const key = refKey(ref);
    const existing = this.objects.get(key);
    if (!existing) throw new PortError('notFound', `${ref.kind} ${ref.name} not found`);
    if ((existing.metadata.finalizers ?? []).length > 0) {
      if (existing.metadata.deletionTimestamp) return;
      const next = copyOf(existing);
      next.metadata.deletionTimestamp = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
      this.store(next, 'delete');
      return;
    }
    this.remove(key, existing);
  }

  /** Removes an object and, like the garbage collector, every object it owns. */
  private remove(key: string, existing: StoredObject): void {
    this.objects.delete(key);
    this.insertedAt.delete(key);
    this.managedFields.delete(key);
    this.writes.push({ verb: 'delete', kind: existing.kind, name: existing.metadata.name });
    this.writeCount++;
    this.notify('deleted', existing);
    const uid = existing.metadata.uid;
    for (const [childKey, child] of [...this.objects]) {
      if ((child.metadata.ownerReferences ?? []).some((o) => o.uid === uid)) {
        if ((child.metadata.finalizers ?? []).length > 0) {
          const next = copyOf(child);
          next.metadata.deletionTimestamp ??= new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
          this.store(next, 'delete');
        } else if (this.objects.has(childKey)) this.remove(childKey, child);
      }
    }
  }
}
