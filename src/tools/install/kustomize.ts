/**
 * What `kubectl apply -k <dir>` sends, for the subset of kustomize that deploy/ uses: `resources` (files
 * and directories, recursively) and `patches` written as inline JSON 6902 operations with a `target`.
 * The unit tests render deploy/ and its overlays with it, and the integration tests install the RBAC of
 * an overlay from it, so that no test needs the kustomize binary; anything else in a kustomization
 * (generators, transformers, strategic-merge patches, ...) is refused instead of silently ignored, so the
 * output cannot drift from what kustomize itself would render. The objects keep the wire form (YAML as
 * written); `asModel` turns them into what client-node's typed APIs expect.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type KubernetesObject, loadYaml } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';

export interface RenderedObject {
  /** The file the object comes from, as given (an absolute path when the directory was). */
  file: string;
  object: WireObject;
}

/** A manifest as written: the wire names (`x-kubernetes-validations`, not client-node's model names). */
export type WireObject = KubernetesObject & Record<string, unknown>;

interface Target {
  group?: string;
  version?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

interface Operation {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'patches']);
const KNOWN_TARGET = new Set(['group', 'version', 'kind', 'name', 'namespace']);

function parseFile(path: string): WireObject[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as WireObject | null;
    return value ? [value] : [];
  });
}

const groupOf = (apiVersion: string | undefined) => (apiVersion?.includes('/') ? apiVersion.split('/')[0] : '');
const versionOf = (apiVersion: string | undefined) => apiVersion?.split('/').at(-1);

function matches(object: WireObject, target: Target): boolean {
  return (
    (target.group === undefined || groupOf(object.apiVersion) === target.group) &&
    (target.version === undefined || versionOf(object.apiVersion) === target.version) &&
    (target.kind === undefined || object.kind === target.kind) &&
    (target.name === undefined || object.metadata?.name === target.name) &&
    (target.namespace === undefined || object.metadata?.namespace === target.namespace)
  );
}

/** RFC 6901: `/a/b~1c` is a, b/c. */
const pointer = (path: string) =>
  path
    .split('/')
    .slice(1)
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));

/** RFC 6902 add, replace and remove, on a copy. */
export function applyJsonPatch<T>(document: T, operations: readonly Operation[]): T {
  const root = structuredClone(document) as unknown;
  for (const { op, path, value } of operations) {
    const keys = pointer(path);
    const last = keys.pop();
    if (last === undefined) throw new Error(`patch: ${op} at the root is not supported`);
    let parent = root as Record<string, unknown> | unknown[];
    for (const key of keys) {
      const next = Array.isArray(parent) ? parent[Number(key)] : parent[key];
      if (typeof next !== 'object' || next === null) throw new Error(`patch: ${path}: ${key} does not exist`);
      parent = next as Record<string, unknown> | unknown[];
    }
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      const inRange = Number.isInteger(index) && index >= 0 && index <= parent.length;
      if (!inRange || (op !== 'add' && index >= parent.length)) throw new Error(`patch: ${path}: no such index`);
      if (op === 'add') parent.splice(index, 0, structuredClone(value));
      else if (op === 'replace') parent[index] = structuredClone(value);
      else parent.splice(index, 1);
    } else {
      if (op !== 'add' && !(last in parent)) throw new Error(`patch: ${path} does not exist`);
      if (op === 'remove') delete parent[last];
      else parent[last] = structuredClone(value);
    }
  }
  return root as T;
}

/**
 * The objects a kustomization directory installs, in kustomize's resource order, each with its file.
 * `files` collects every manifest file read (for "is every file installed" checks).
 */
export function renderKustomization(dir: string, files: string[] = []): RenderedObject[] {
  const path = join(dir, 'kustomization.yaml');
  const kustomization = (parse(readFileSync(path, 'utf8')) ?? {}) as Record<string, unknown>;
  for (const field of Object.keys(kustomization)) {
    if (!KNOWN_FIELDS.has(field)) throw new Error(`${path}: "${field}" is not supported by this renderer`);
  }
  const rendered = ((kustomization.resources as string[] | undefined) ?? []).flatMap((resource) => {
    const at = join(dir, resource);
    if (!existsSync(at)) throw new Error(`${path}: ${resource} does not exist`);
    if (statSync(at).isDirectory()) return renderKustomization(at, files);
    files.push(at);
    return parseFile(at).map((object) => ({ file: at, object }));
  });
  const ids = rendered.map(({ object: o }) => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice) throw new Error(`${path}: ${twice} is listed twice (kustomize refuses that too)`);
  for (const [i, patch] of ((kustomization.patches as Array<Record<string, unknown>> | undefined) ?? []).entries()) {
    const where = `${path}: patches[${i}]`;
    const target = patch.target as Target | undefined;
    if (!target || typeof patch.patch !== 'string' || Object.keys(patch).some((k) => k !== 'target' && k !== 'patch')) {
      throw new Error(`${where}: only an inline JSON 6902 patch with a target is supported`);
    }
    for (const key of Object.keys(target)) {
      if (!KNOWN_TARGET.has(key)) throw new Error(`${where}: target.${key} is not supported`);
    }
    const operations = parse(patch.patch) as Operation[];
    if (!Array.isArray(operations)) throw new Error(`${where}: a strategic-merge patch is not supported`);
    const hits = rendered.filter((r) => matches(r.object, target));
    // kustomize passes over a target that matches nothing; here that is a mistake worth failing on.
    if (hits.length === 0) throw new Error(`${where}: the target ${JSON.stringify(target)} matches no object`);
    for (const hit of hits) hit.object = applyJsonPatch(hit.object, operations);
  }
  return rendered;
}

/** The objects as client-node's typed APIs want them (model names, e.g. `x_kubernetes_validations`). */
export const asModel = (objects: readonly WireObject[]): KubernetesObject[] =>
  objects.map((o) => loadYaml<KubernetesObject>(JSON.stringify(o)));

/** `Kind namespace/name (file)`, for test messages. */
export const describeRendered = (r: RenderedObject, root: string) =>
  `${r.object.kind} ${r.object.metadata?.namespace ? `${r.object.metadata.namespace}/` : ''}${r.object.metadata?.name} (${relative(root, r.file)})`;
