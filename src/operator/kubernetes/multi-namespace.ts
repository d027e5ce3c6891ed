/**
 * The namespaced install mode (`pgfsm run --namespace a,b`): its token may list and watch a kind only
 * inside each watched namespace, and Kubernetes has no request that lists several namespaces at once. So
 * each namespaced kind gets one informer per namespace, and this joins them into the one source per kind
 * the driver reads, with the same meaning as a single informer over exactly those namespaces:
 * - synced / fresh only when every part is (a namespace not listed yet could hide a cluster);
 * - lastSeen is the oldest part's, so readiness and the staleness metric report the weakest watch;
 * - get and list(namespace) ask the one part that owns that namespace (another namespace holds nothing);
 * - list() concatenates, and a listener hears every part (each object lives in exactly one part).
 */
import type { KubeObject } from '../domain/objects.ts';
import type { ObjectSource, SourceEvent } from '../driver/sources.ts';

/** DNS-1123 label: what the API server accepts as a namespace name. */
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_LABEL = 63;

/**
 * The namespaces of `--namespace a,b` (spaces around commas allowed). Empty or absent means every
 * namespace (undefined). Throws a message naming the bad entry: an entry that is not a namespace name
 * would only surface later as a 404 or 403 from every informer, and a duplicate as doubled events.
 */
export function parseNamespaceList(value: string | undefined): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const names = value.split(',').map((n) => n.trim());
  const seen = new Set<string>();
  for (const name of names) {
    if (name === '') throw new Error(`empty namespace name in "${value}" (write a,b without an empty entry)`);
    if (name.length > MAX_LABEL || !DNS_1123_LABEL.test(name)) {
      throw new Error(
        `"${name}" is not a namespace name (a DNS-1123 label: at most ${MAX_LABEL} lowercase letters, digits and '-', starting and ending with a letter or digit)`,
      );
    }
    if (seen.has(name)) throw new Error(`namespace "${name}" is listed twice`);
    seen.add(name);
  }
  return names;
}

export class MultiNamespaceSource<T extends KubeObject> implements ObjectSource<T> {
  private readonly parts: ReadonlyMap<string, ObjectSource<T>>;

  /** `parts`: one source per namespace, each watching only that namespace. */
  constructor(
    readonly resource: string,
    parts: ReadonlyMap<string, ObjectSource<T>>,
  ) {
    if (parts.size === 0) throw new Error(`${resource}: no namespace to watch`);
    this.parts = parts;
  }

  get synced(): boolean {
    return [...this.parts.values()].every((p) => p.synced);
  }

  get lastSeen(): number {
    return Math.min(...[...this.parts.values()].map((p) => p.lastSeen));
  }

  fresh(): boolean {
    return [...this.parts.values()].every((p) => p.fresh());
  }

  get(namespace: string, name: string): T | undefined {
    return this.parts.get(namespace)?.get(namespace, name);
  }

  list(namespace?: string): T[] {
    if (namespace !== undefined) return this.parts.get(namespace)?.list(namespace) ?? [];
    return [...this.parts.values()].flatMap((p) => p.list());
  }

  on(listener: (event: SourceEvent<T>) => void): () => void {
    const unsubscribes = [...this.parts.values()].map((p) => p.on(listener));
    return () => {
      for (const unsubscribe of unsubscribes) unsubscribe();
    };
  }

  start(): void {
    for (const part of this.parts.values()) part.start();
  }

  async stop(): Promise<void> {
    await Promise.all([...this.parts.values()].map((p) => p.stop()));
  }
}
