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
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = copyOf((value as Record<string, unknown>)[key]);
  return out as T;
}

const refKey = (ref: Pick<ObjectRef, 'kind' | 'namespace' | 'name'>) => `${ref.kind}/${ref.namespace}/${ref.name}`;

/** Kinds whose spec changes bump `metadata.generation`. */
const GENERATION_KINDS = new Set(['PostgresCluster', 'PostgresClusterClass', 'Cluster', 'Pooler', 'Deployment']);

export class MemoryApiServer {
  private readonly objects = new Map<string, StoredObject>();
  private readonly managedFields = new Map<string, ManagedFields>();
  /**
   * When each stored key was (last) inserted into `objects`: `list` returns objects in that order (a Map
   * iterates in insertion order), so sorting by it lets `listNamed` answer in the same order without
   * scanning the whole store.
   */
  private readonly insertedAt = new Map<string, number>();
  private insertions = 0;
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
    this.undelivered.push({ type, object: copyOf(object), statusOnly });
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

  private store(object: StoredObject, verb: Verb, statusOnly = false): StoredObject {
    const key = refKey({ kind: object.kind, namespace: object.metadata.namespace ?? '', name: object.metadata.name });
    const previous = this.objects.get(key);
    this.stamp(object, previous);
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
    // A copy: a refused apply must leave the field ownership as it was.
    const fields: ManagedFields = new Map(
      [...(this.managedFields.get(key) ?? [])].map(([m, owned]) => [m, new Set(owned)]),
    );
    serverSideApply(live as unknown as Record<string, unknown>, { metadata: ownedMeta, ...body }, manager, fields);
    this.admitted('apply', live, existing, manager);
    this.managedFields.set(key, fields);
    return this.store(live, 'apply');
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
    const next = copyOf(existing);
    next.status = copyOf(status);
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
