/**
 * Just enough server-side apply for the in-memory API: each field manager owns the leaf fields it
 * applied last; a new apply removes the fields it no longer sets and merges the rest. Arrays are
 * atomic leaves. This is what lets the cluster spec and the managed roles be applied apart without
 * either one dropping the other, exactly as the real API server behaves.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Leaf paths of an object (arrays and scalars are leaves). */
export function leafPaths(value: Json, prefix: string[] = []): string[][] {
  return Object.entries(value).flatMap(([k, v]) =>
    isObject(v) && Object.keys(v).length > 0 ? leafPaths(v, [...prefix, k]) : [[...prefix, k]],
  );
}

const key = (path: string[]) => path.join('\u0000');

function removePath(target: Json, path: string[]): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  if (rest.length === 0) {
    delete target[head];
    return;
  }
  const child = target[head];
  if (!isObject(child)) return;
  removePath(child, rest);
  if (Object.keys(child).length === 0) delete target[head];
}

function merge(target: Json, patch: Json): void {
  for (const [k, v] of Object.entries(patch)) {
    const current = target[k];
    if (isObject(v) && isObject(current)) merge(current, v);
    else target[k] = structuredClone(v);
  }
}

/** Fields owned per manager, per object. */
export type ManagedFields = Map<string, Set<string>>;

/**
 * Applies `applied` (the fields to own, without name/namespace identity) onto `live` for `manager`,
 * mutating `live` and `managed`.
 */
export function serverSideApply(live: Json, applied: Json, manager: string, managed: ManagedFields): void {
  const nextPaths = leafPaths(applied);
  const next = new Set(nextPaths.map(key));
  const before = managed.get(manager) ?? new Set<string>();
  const ownedByOthers = new Set([...managed.entries()].filter(([m]) => m !== manager).flatMap(([, s]) => [...s]));
  for (const old of before) {
    if (!next.has(old) && !ownedByOthers.has(old)) removePath(live, old.split('\u0000'));
  }
  merge(live, applied);
  managed.set(manager, next);
}
