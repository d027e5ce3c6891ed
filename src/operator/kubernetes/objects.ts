/**
 * How each kind is read and written: the one module that knows which client-node API serves which kind
 * and which Content-Type each kind of write needs (client-node 1.4.0 otherwise sends JSON patch).
 */
import {
  type CoreV1Api,
  type CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import type { ObjectMeta, OwnerReference } from '../api/schema.ts';
import type { ObjectRef } from '../domain/objects.ts';

/** An object as the API returns it, before it is projected onto a domain shape. */
export interface RawObject {
  metadata?: V1ObjectMeta | Record<string, unknown>;
  [field: string]: unknown;
}

export interface ApplyOptions {
  fieldManager: string;
  force: boolean;
}

/** The four verbs the child ports need, for one kind. */
export interface ObjectClient {
  readonly kind: string;
  /** Secrets: errors must not repeat what the server said about the request. */
  readonly sensitive: boolean;
  read(ref: ObjectRef): Promise<RawObject>;
  /** JSON merge patch (RFC 7386); a `metadata.resourceVersion` in the body makes it conditional. */
  mergePatch(ref: ObjectRef, body: object): Promise<void>;
  /** Answers the object as the API server stored it. */
  apply(ref: ObjectRef, body: object, options: ApplyOptions): Promise<RawObject>;
  remove(ref: ObjectRef): Promise<void>;
}

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const serverSideApply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

export interface CustomKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

export function customObjectClient(api: CustomObjectsApi, type: CustomKind): ObjectClient {
  const { kind, ...path } = type;
  const at = (ref: ObjectRef) => ({ ...path, namespace: ref.namespace, name: ref.name });
  return {
    kind,
    sensitive: false,
    read: async (ref) => (await api.getNamespacedCustomObject(at(ref))) as RawObject,
    mergePatch: async (ref, body) => {
      await api.patchNamespacedCustomObject({ ...at(ref), body }, mergePatch);
    },
    apply: async (ref, body, options) =>
      (await api.patchNamespacedCustomObject({ ...at(ref), body, ...options }, serverSideApply)) as RawObject,
    remove: async (ref) => {
      await api.deleteNamespacedCustomObject(at(ref));
    },
  };
}

export function configMapClient(core: CoreV1Api): ObjectClient {
  const at = (ref: ObjectRef) => ({ namespace: ref.namespace, name: ref.name });
  return {
    kind: 'ConfigMap',
    sensitive: false,
    read: async (ref) => (await core.readNamespacedConfigMap(at(ref))) as RawObject,
    mergePatch: async (ref, body) => {
      await core.patchNamespacedConfigMap({ ...at(ref), body }, mergePatch);
    },
    apply: async (ref, body, options) =>
      (await core.patchNamespacedConfigMap({ ...at(ref), body, ...options }, serverSideApply)) as RawObject,
    remove: async (ref) => {
      await core.deleteNamespacedConfigMap(at(ref));
    },
  };
}

/** Secrets are created, never applied (the password is generated once); the responses are dropped unread. */
export function secretClient(core: CoreV1Api): ObjectClient {
  const at = (ref: ObjectRef) => ({ namespace: ref.namespace, name: ref.name });
  return {
    kind: 'Secret',
    sensitive: true,
    read: async (ref) => (await core.readNamespacedSecret(at(ref))) as RawObject,
    mergePatch: async (ref, body) => {
      await core.patchNamespacedSecret({ ...at(ref), body }, mergePatch);
    },
    apply: async () => {
      throw new Error('Secrets are created, not applied');
    },
    remove: async (ref) => {
      await core.deleteNamespacedSecret(at(ref));
    },
  };
}

/** Typed clients deserialise timestamps into Dates; the domain keeps the wire form (seconds, `Z`). */
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
