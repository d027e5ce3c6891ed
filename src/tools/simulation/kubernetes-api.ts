/**
 * The CNPG simulator's view of a real API server: it plays CloudNativePG against kube-apiserver in the
 * integration tests, the sandbox and the bench, where no real CNPG runs. Reads come from informers; writes
 * go out in order per object, as CNPG's would: status through the status subresource (a merge patch of what
 * changed), spec defaults as a merge patch of the keys it adds, and the Deployment of each Pooler (valid for
 * the API server, never run: no Deployment controller runs there, so its ready replicas are whatever the
 * simulator patches in).
 *
 * It reads its own writes: what it wrote stays in an overlay over the informers' caches until the watch
 * shows that write (a resourceVersion at least the write's), so a step that follows another at once (zero
 * delays) builds on the step before instead of on a cache that has not caught up. Without it, a pooler's
 * Deployment looked missing right after its create (the pooler then never got ready), a defaulting patch not
 * yet seen looked like a spec change (a needless rollout: Ready clusters flapped), and a status written from
 * a stale read put an older phase back.
 *
 * It reports every change of the four kinds it watches and answers `listNamed`, so the simulator looks only
 * at what changed (O(changes) per event) instead of listing the fleet on every event.
 *
 * Where CloudNativePG's real controller runs (the control plane's `cnpg-controlled` namespace), the simulator
 * must not act: `ignoreNamespaces` hides those namespaces from it entirely.
 */
import { AppsV1Api, CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type KubeObject, POOLER_NAME_LABEL } from '../../operator/domain/objects.ts';
import { Informer, type InformerLog } from '../../operator/kubernetes/informer.ts';
import { RESOURCES } from '../../operator/kubernetes/resources.ts';
import type { Change, StoredObject } from '../memory/api-server.ts';
import type { SimulatorApi } from './cnpg-simulator.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const SIMULATOR = 'cnpg-simulator';

type Kind = 'Cluster' | 'Pooler' | 'Deployment' | 'Secret' | 'Database';

/** The keys of `next` that differ from `before`, as a JSON merge patch (removed keys become null). */
export function mergePatchOf(before: unknown, next: unknown): unknown {
  if (typeof before !== 'object' || before === null || typeof next !== 'object' || next === null) return next;
  if (Array.isArray(before) || Array.isArray(next)) return next;
  const patch: Record<string, unknown> = {};
  const b = before as Record<string, unknown>;
  const n = next as Record<string, unknown>;
  for (const key of new Set([...Object.keys(b), ...Object.keys(n)])) {
    if (!(key in n)) patch[key] = null;
    else if (JSON.stringify(b[key]) !== JSON.stringify(n[key])) patch[key] = mergePatchOf(b[key], n[key]);
  }
  return patch;
}

/** The CNPG kinds the simulator writes, by their resource names. */
const PLURAL_OF: Record<string, string> = { Cluster: 'clusters', Pooler: 'poolers', Database: 'databases' };

/** Writes in flight at once, across objects; each object's writes stay in order. */
const MAX_CONCURRENT_WRITES = 16;

/** What the simulator wrote to one object and the watch has not shown yet. */
interface Own {
  /** A Deployment: the simulator owns all of it. */
  whole?: StoredObject;
  /** A Cluster's or Pooler's spec as the simulator last wrote it (only CNPG's defaults are written there). */
  spec?: unknown;
  /** A Cluster's or Pooler's status as the simulator last wrote it (CNPG owns the status). */
  status?: unknown;
  /** Writes issued and not answered yet. */
  pending: number;
  /** The newest resourceVersion the API server answered a write with. */
  version?: string;
}

/**
 * Whether the cache's `seen` version includes a write answered with `written`. resourceVersions are opaque to
 * clients in general; kube-apiserver over etcd issues them from one increasing revision, which is what this
 * tool runs against. Anything else is only trusted when equal.
 */
export function versionIncludes(seen: string | undefined, written: string): boolean {
  if (seen === undefined) return false;
  if (/^\d+$/.test(seen) && /^\d+$/.test(written)) return BigInt(seen) >= BigInt(written);
  return seen === written;
}

const keyOfRef = (kind: string, namespace: string | undefined, name: string) => `${kind}/${namespace ?? ''}/${name}`;

export class KubernetesSimulatorApi implements SimulatorApi {
  private readonly informers: Record<Kind, Informer<KubeObject>>;
  private readonly custom: CustomObjectsApi;
  private readonly apps: AppsV1Api;
  /** Per object: the last write queued for it (writes to one object go out in order). */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly own = new Map<string, Own>();
  private inFlight = 0;
  private readonly waitingForSlot: Array<() => void> = [];
  /** Writes that failed (other than on objects that vanished meanwhile). */
  readonly failures: string[] = [];
  /** Requests sent, for a caller that accounts for the simulator's share of the API server's load. */
  readonly stats = { writes: 0, skipped: 0 };

  private readonly ignored: ReadonlySet<string>;

  constructor(
    kc: KubeConfig,
    options: { namespace?: string; log?: InformerLog; ignoreNamespaces?: readonly string[] } = {},
  ) {
    this.ignored = new Set(options.ignoreNamespaces ?? []);
    const informer = (resource: (typeof RESOURCES)[keyof typeof RESOURCES], metadataOnly = false) =>
      new Informer<KubeObject>(kc, {
        resource,
        ...(options.namespace ? { namespace: options.namespace } : {}),
        ...(options.log ? { log: options.log } : {}),
        metadataOnly,
        // A simulator wants to see its own writes quickly; relist often in case a watch event is lost.
        relistIntervalMs: 30_000,
      });
    this.informers = {
      Cluster: informer(RESOURCES.cnpgClusters),
      Pooler: informer(RESOURCES.poolers),
      Deployment: informer(RESOURCES.deployments),
      // Only whether a role's password Secret exists matters: metadata, never data.
      Secret: informer(RESOURCES.secrets, true),
      Database: informer(RESOURCES.cnpgDatabases),
    };
    // Registered before any `onChange` listener, so a listener woken by the watch's copy of a write reads
    // that copy, not the overlay.
    for (const [kind, informer] of Object.entries(this.informers)) {
      informer.on(({ type, object }) => {
        const key = keyOfRef(kind, object.metadata.namespace, object.metadata.name);
        const own = this.own.get(key);
        if (!own) return;
        if (type === 'delete') this.own.delete(key);
        else this.forgetIfSeen(key, own, object);
      });
    }
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.apps = kc.makeApiClient(AppsV1Api);
  }

  async start(timeoutMs = 30_000): Promise<void> {
    for (const i of Object.values(this.informers)) i.start();
    const deadline = Date.now() + timeoutMs;
    while (!Object.values(this.informers).every((i) => i.synced)) {
      if (Date.now() > deadline) throw new Error('simulator informers did not sync (are the CNPG CRDs installed?)');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await this.idle();
    await Promise.all(Object.values(this.informers).map((i) => i.stop()));
  }

  /** Resolves when every write issued so far has been answered. */
  async idle(): Promise<void> {
    await Promise.all([...this.chains.values()]);
  }

  /** Objects whose writes the watch has not shown yet (0 once the caches caught up). */
  get unseenWrites(): number {
    return this.own.size;
  }

  private informerOf(kind: string): Informer<KubeObject> | undefined {
    return this.informers[kind as Kind];
  }

  /** Whether the simulator may see (and so act on) objects of this namespace. */
  private visible(namespace: string | undefined): boolean {
    return !this.ignored.has(namespace ?? '');
  }

  /** The cached object with the simulator's own unseen writes laid over it. */
  private overlaid(cached: KubeObject | undefined, key: string): KubeObject | undefined {
    const own = this.own.get(key);
    if (!own) return cached;
    if (own.whole) return own.whole;
    if (!cached) return undefined;
    const object = { ...cached } as StoredObject;
    if (own.spec !== undefined) object.spec = own.spec as StoredObject['spec'];
    if (own.status !== undefined) object.status = own.status as StoredObject['status'];
    return object;
  }

  /**
   * A copy, as the in-memory API gives: the simulator changes what it reads before writing it back, and a
   * change made to the cached object itself would already be "before" the write (no patch sent) and would
   * hide the watch's view.
   */
  get<T extends KubeObject = StoredObject>(ref: { kind: string; namespace: string; name: string }): T | undefined {
    if (!this.visible(ref.namespace)) return undefined;
    const cached = this.informerOf(ref.kind)?.get(ref.namespace, ref.name);
    const object = this.overlaid(cached, keyOfRef(ref.kind, ref.namespace, ref.name));
    return object && (structuredClone(object) as T);
  }

  list<T extends KubeObject = StoredObject>(kind: string, namespace?: string): T[] {
    const all = this.informerOf(kind)?.list(namespace) ?? [];
    return all
      .filter((o) => this.visible(o.metadata.namespace))
      .map((o) => structuredClone(this.overlaid(o, keyOfRef(kind, o.metadata.namespace, o.metadata.name))) as T);
  }

  /** The named objects that exist, each read as `get` reads it: O(refs), not O(fleet). */
  listNamed<T extends KubeObject = StoredObject>(
    kind: string,
    refs: Iterable<{ namespace: string; name: string }>,
  ): T[] {
    const found = new Map<string, T>();
    for (const ref of refs) {
      const key = keyOfRef(kind, ref.namespace, ref.name);
      if (found.has(key)) continue;
      const object = this.get<T>({ kind, ...ref });
      if (object) found.set(key, object);
    }
    return [...found.values()];
  }

  /**
   * Every change the watches show, of every kind the simulator reads (Clusters, Poolers, Deployments and
   * password Secrets), status changes included: what `listNamed` asks of an API.
   */
  onChange(listener: (change: Change) => void): () => void {
    const offs = (Object.keys(this.informers) as Kind[]).map((kind) =>
      this.informers[kind].on((event) => {
        const { object, old } = event;
        if (!this.visible(object.metadata.namespace)) return;
        const type = event.type === 'add' ? 'added' : event.type === 'update' ? 'modified' : 'deleted';
        const statusOnly =
          event.type === 'update' &&
          old !== undefined &&
          JSON.stringify((old as StoredObject).spec) === JSON.stringify((object as StoredObject).spec) &&
          old.metadata.generation === object.metadata.generation;
        listener({ type, object: object as StoredObject, statusOnly });
      }),
    );
    return () => {
      for (const off of offs) off();
    };
  }

  put(object: StoredObject, statusOnly = false): void {
    if (!this.visible(object.metadata.namespace)) {
      throw new Error(
        `the simulator may not write in namespace ${object.metadata.namespace}: CNPG's controller acts there`,
      );
    }
    const namespace = object.metadata.namespace ?? '';
    const key = keyOfRef(object.kind, namespace, object.metadata.name);
    const before = this.get<StoredObject>({ kind: object.kind, namespace, name: object.metadata.name });
    const copy = structuredClone(object);
    const own = this.own.get(key) ?? { pending: 0 };
    this.own.set(key, own);
    if (copy.kind === 'Deployment') own.whole = copy;
    else if (statusOnly) own.status = copy.status;
    else own.spec = copy.spec;
    own.pending++;
    const previous = this.chains.get(key) ?? Promise.resolve();
    const chain = previous.then(() =>
      this.slot(() => this.write(copy, before, statusOnly)).then(
        (version) => this.answered(key, own, version),
        (error: unknown) => {
          // The cache is the truth again: whatever this write meant to change did not happen.
          if (this.own.get(key) === own) this.own.delete(key);
          const code = (error as { code?: number }).code;
          if (code !== 404) this.failures.push(`${copy.kind} ${copy.metadata.name}: ${String(error).slice(0, 300)}`);
        },
      ),
    );
    this.chains.set(key, chain);
    void chain.then(() => {
      if (this.chains.get(key) === chain) this.chains.delete(key);
    });
  }

  private answered(key: string, own: Own, version: string | undefined): void {
    own.pending--;
    if (version && (!own.version || versionIncludes(version, own.version))) own.version = version;
    if (this.own.get(key) !== own) return;
    const [kind = '', namespace = '', name = ''] = key.split('/');
    this.forgetIfSeen(key, own, this.informerOf(kind)?.get(namespace, name));
  }

  /** Drops the overlay once nothing is in flight and the cache holds the last write (or nothing was sent). */
  private forgetIfSeen(key: string, own: Own, cached: KubeObject | undefined): void {
    if (own.pending > 0) return;
    if (own.version === undefined || versionIncludes(cached?.metadata.resourceVersion, own.version)) {
      this.own.delete(key);
    }
  }

  /** Runs `send` when fewer than MAX_CONCURRENT_WRITES are in flight: a burst never opens a connection per write. */
  private async slot<T>(send: () => Promise<T>): Promise<T> {
    while (this.inFlight >= MAX_CONCURRENT_WRITES) await new Promise<void>((r) => this.waitingForSlot.push(r));
    this.inFlight++;
    try {
      return await send();
    } finally {
      this.inFlight--;
      this.waitingForSlot.shift()?.();
    }
  }

  /** Sends one write; returns the resourceVersion the API server answered with, if anything was sent. */
  private async write(
    object: StoredObject,
    before: StoredObject | undefined,
    statusOnly: boolean,
  ): Promise<string | undefined> {
    const namespace = object.metadata.namespace ?? '';
    const name = object.metadata.name;
    let version: string | undefined;
    if (object.kind === 'Deployment') {
      if (!statusOnly) {
        this.stats.writes++;
        const applied = await this.apps.patchNamespacedDeployment(
          { name, namespace, body: this.deploymentOf(object), fieldManager: SIMULATOR, force: true },
          apply,
        );
        version = applied.metadata?.resourceVersion;
      }
      if (object.status) {
        this.stats.writes++;
        const patched = await this.apps.patchNamespacedDeploymentStatus(
          { name, namespace, body: { status: object.status } },
          mergePatch,
        );
        version = patched.metadata?.resourceVersion ?? version;
      }
      return version;
    }
    const plural = PLURAL_OF[object.kind] ?? 'poolers';
    const at = { group: 'postgresql.cnpg.io', version: 'v1', namespace, plural, name };
    // Only what changed since the simulator's own last view, with removed keys as null (a merge patch of the
    // whole status would leave a dropped key, such as phaseReason after a switchover, on the server).
    const part = statusOnly ? 'status' : 'spec';
    const patch = mergePatchOf(before?.[part] ?? {}, object[part] ?? {});
    if (!patch || (typeof patch === 'object' && Object.keys(patch).length === 0)) {
      this.stats.skipped++;
      return undefined;
    }
    this.stats.writes++;
    const written = (
      statusOnly
        ? await this.custom.patchNamespacedCustomObjectStatus({ ...at, body: { status: patch } }, mergePatch)
        : await this.custom.patchNamespacedCustomObject({ ...at, body: { spec: patch } }, mergePatch)
    ) as KubeObject;
    return written.metadata?.resourceVersion;
  }

  /** A Deployment the API server accepts; nothing ever runs it. */
  private deploymentOf(object: StoredObject): object {
    const name = object.metadata.name;
    const replicas = (object.spec as { replicas?: number } | undefined)?.replicas ?? 1;
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name,
        namespace: object.metadata.namespace,
        labels: { [POOLER_NAME_LABEL]: name },
        ownerReferences: object.metadata.ownerReferences,
      },
      spec: {
        replicas,
        selector: { matchLabels: { [POOLER_NAME_LABEL]: name } },
        template: {
          metadata: { labels: { [POOLER_NAME_LABEL]: name } },
          spec: { containers: [{ name: 'pgbouncer', image: 'simulated/pgbouncer:never-pulled' }] },
        },
      },
    };
  }
}
