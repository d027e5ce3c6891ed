/**
 * How each kind is read and written: the one module that knows where each kind lives in the API and which
 * Content-Type each kind of write needs. The requests go through rest.ts.
 */
import type { ObjectMeta, OwnerReference } from '../api/schema.ts';
import type { ObjectRef } from '../domain/objects.ts';
import { type ResourceType, resourcePath } from './resources.ts';
import { CONTENT, type RestClient } from './rest.ts';

/** An object as the API returns it, before it is projected onto a domain shape. */
export interface RawObject {
  metadata?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface ApplyOptions {
  fieldManager: string;
  force: boolean;
  /** The caller reads the object as stored; without it the answer is dropped unparsed (rest.ts). */
  answer: boolean;
}

/** The four verbs the child ports need, for one kind. */
export interface ObjectClient {
  readonly kind: string;
  /** Secrets: errors must not repeat what the server said about the request. */
  readonly sensitive: boolean;
  read(ref: ObjectRef): Promise<RawObject>;
  /**
   * JSON merge patch (RFC 7386); a `metadata.resourceVersion` in the body makes it conditional. Answers the
   * object as stored when asked to (`answer`).
   */
  mergePatch(ref: ObjectRef, body: object, options?: { answer: boolean }): Promise<RawObject | undefined>;
  /** Answers the object as the API server stored it, when asked to (`answer`). */
  apply(ref: ObjectRef, body: object, options: ApplyOptions): Promise<RawObject | undefined>;
  remove(ref: ObjectRef): Promise<void>;
}

/**
 * The verbs for one kind. Secrets are created, never applied (the password is generated once), and their
 * errors are `sensitive`.
 */
export function objectClient(rest: RestClient, type: ResourceType): ObjectClient {
  const path = (ref: ObjectRef) => resourcePath(type, ref);
  const secret = type.kind === 'Secret';
  return {
    kind: type.kind,
    sensitive: secret,
    read: (ref) => rest.request<RawObject>({ method: 'GET', path: path(ref) }),
    mergePatch: (ref, body, options) =>
      rest.request<RawObject | undefined>({
        method: 'PATCH',
        path: path(ref),
        body,
        contentType: CONTENT.mergePatch,
        ignoreAnswer: !options?.answer,
      }),
    apply: async (ref, body, options) => {
      if (secret) throw new Error('Secrets are created, not applied');
      return rest.request<RawObject>({
        method: 'PATCH',
        path: path(ref),
        query: { fieldManager: options.fieldManager, force: options.force || undefined },
        body,
        contentType: CONTENT.apply,
        ignoreAnswer: !options.answer,
      });
    },
    remove: async (ref) => {
      await rest.request({ method: 'DELETE', path: path(ref), ignoreAnswer: true });
    },
  };
}

/**
 * The domain keeps the wire form of a timestamp (seconds, `Z`). Typed clients (client-node) deserialise them
 * into Dates; objects built by hand in tests may too.
 */
const timestamp = (value: unknown): string | undefined => {
  if (value instanceof Date) return value.toISOString().replace(/\.000Z$/, 'Z');
  return typeof value === 'string' ? value : undefined;
};

/** Annotation in which `kubectl apply` keeps the whole last applied object, values included. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The metadata the domain uses, and nothing else: `managedFields` is dropped (bulky, and nothing in the
 * core reads it), and so is kubectl's last-applied annotation, which holds a Secret's values verbatim.
 */
export function metadataOf(raw: RawObject['metadata']): ObjectMeta & { namespace?: string } {
  const m = (raw ?? {}) as Record<string, unknown>;
  const annotations = m.annotations as Record<string, string> | undefined;
  const kept = annotations ? Object.fromEntries(Object.entries(annotations).filter(([k]) => k !== LAST_APPLIED)) : {};
  const meta: ObjectMeta & { namespace?: string } = { name: String(m.name ?? '') };
  const set = <K extends keyof ObjectMeta>(key: K, value: ObjectMeta[K] | undefined) => {
    if (value !== undefined) meta[key] = value;
  };
  set('namespace', m.namespace as string | undefined);
  set('uid', m.uid as string | undefined);
  set('generation', m.generation as number | undefined);
  set('resourceVersion', m.resourceVersion as string | undefined);
  set('creationTimestamp', timestamp(m.creationTimestamp));
  set('deletionTimestamp', timestamp(m.deletionTimestamp));
  set('finalizers', m.finalizers as string[] | undefined);
  set('labels', m.labels as Record<string, string> | undefined);
  set('annotations', Object.keys(kept).length ? kept : undefined);
  set(
    'ownerReferences',
    (m.ownerReferences as OwnerReference[] | undefined)?.map((o) => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.name,
      uid: o.uid,
      ...(o.controller !== undefined ? { controller: o.controller } : {}),
      ...(o.blockOwnerDeletion !== undefined ? { blockOwnerDeletion: o.blockOwnerDeletion } : {}),
    })),
  );
  return meta;
}

/** A custom object as the domain sees it: everything but managedFields and kubectl's annotation. */
export const customObjectOf = <T>(raw: RawObject): T => ({ ...raw, metadata: metadataOf(raw.metadata) }) as T;

/**
 * The `resourceVersion` that makes a server-side apply create the object or fail: the API server creates
 * an absent object whatever version the body names (it ignores it), and refuses to change an existing one
 * whose version differs (409 Conflict). No object is ever at version 1: versions are etcd revisions, and
 * etcd starts at revision 1 with nothing stored (its first write is revision 2). "0" would not do (the
 * apply is then unconditional), nor would a precondition on `metadata.uid` (kube-apiserver 1.34 answers
 * 409 for an absent object too, and 422 "immutable" for an existing custom object). Both answers relied
 * on are tested on the real API server (test/integration/create-only-apply.test.ts).
 */
export const ONLY_IF_ABSENT = '1';

/**
 * The body of a server-side apply: the desired object with only the metadata we mean to own, plus the
 * `resourceVersion` the caller read, if any, which makes the apply conditional (409 when it moved on), or
 * {@link ONLY_IF_ABSENT}. Nothing else server-populated (managedFields is refused) and no status (a
 * subresource, ignored here).
 */
export function applyBodyOf(
  object: { metadata: ObjectMeta & { namespace?: string } } & Record<string, unknown>,
  resourceVersion?: string,
) {
  const { metadata, status: _status, ...rest } = object;
  const { name, namespace, labels, annotations, ownerReferences } = metadata;
  return { ...rest, metadata: { name, namespace, labels, annotations, ownerReferences, resourceVersion } };
}
