/**
 * Which objects of one kind name each Secret, kept from their own watch events (mapping.ts: the clusters' role
 * password Secrets; database-mapping.ts: the databases' connection Secrets). A module of its own: both mappings
 * use it, and they import each other.
 */
import type { ClusterKey } from '../core/ports.ts';
import type { KubeObject } from '../domain/objects.ts';
import { isRecord } from '../domain/records.ts';
import type { SourceEvent } from './sources.ts';

/** A cached object's key, or undefined when its metadata is not even a name (it may hold anything). */
function keyOf(object: KubeObject): ClusterKey | undefined {
  const metadata: unknown = object.metadata;
  if (!isRecord(metadata) || typeof metadata.name !== 'string' || !metadata.name) return undefined;
  return { namespace: typeof metadata.namespace === 'string' ? metadata.namespace : '', name: metadata.name };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * Which objects of one kind name each Secret, kept from their own watch events, so that a Secret event finds them
 * without scanning every object of its namespace: a fleet creates a superuser Secret per cluster (and a Secret per
 * database role), and a scan for each would make mapping the fleet's Secret events quadratic.
 */
export class SecretNameIndex {
  /** `namespace/secret` → names of the objects naming it. */
  private readonly users = new Map<string, Set<string>>();
  /** `namespace/object` → the Secrets it names, as last indexed. */
  private readonly named = new Map<string, readonly string[]>();

  constructor(
    private readonly kind: string,
    /** The Secrets an object names; never throws, whatever the object holds. */
    private readonly namesOf: (object: KubeObject) => readonly string[],
  ) {}

  /** Takes in a watch event of the indexed kind (any other kind is ignored). */
  update(event: SourceEvent): void {
    if (event.object.kind !== this.kind) return;
    const key = keyOf(event.object);
    if (!key) return;
    const id = `${key.namespace}/${key.name}`;
    const before = this.named.get(id) ?? [];
    const after = event.type === 'delete' ? [] : this.namesOf(event.object);
    if (sameList(before, after)) return;
    for (const secret of before) {
      const users = this.users.get(`${key.namespace}/${secret}`);
      users?.delete(key.name);
      if (users?.size === 0) this.users.delete(`${key.namespace}/${secret}`);
    }
    for (const secret of after) {
      const at = `${key.namespace}/${secret}`;
      const users = this.users.get(at) ?? new Set<string>();
      users.add(key.name);
      this.users.set(at, users);
    }
    if (after.length > 0) this.named.set(id, after);
    else this.named.delete(id);
  }

  /** The objects naming `secret`, as keys. */
  using(namespace: string, secret: string): ClusterKey[] {
    return [...(this.users.get(`${namespace}/${secret}`) ?? [])].map((name) => ({ namespace, name }));
  }
}
