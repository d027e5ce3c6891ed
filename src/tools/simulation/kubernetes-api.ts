/**
 * The CNPG simulator's view of a real API server: it plays CloudNativePG against kube-apiserver in the
 * integration tests and the sandbox, where no real CNPG runs. Reads come from informers; writes go out
 * in order, as CNPG's would: status through the status subresource, spec defaults as a merge patch of
 * the keys it adds, and the Deployment of each Pooler (valid for the API server, never run: no
 * Deployment controller runs there, so its ready replicas are whatever the simulator patches in).
 *
 * Where CloudNativePG's real controller runs (the control plane's `cnpg-controlled` namespace), the simulator
 * must not act: `ignoreNamespaces` hides those namespaces from it entirely.
 */
import { AppsV1Api, CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeObject } from '../../operator/domain/objects.ts';
import { Informer, type InformerLog } from '../../operator/kubernetes/informer.ts';
import { RESOURCES } from '../../operator/kubernetes/watch-sources.ts';
import type { Change, StoredObject } from '../memory/api-server.ts';
import type { SimulatorApi } from './cnpg-simulator.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const SIMULATOR = 'cnpg-simulator';

type Kind = 'Cluster' | 'Pooler' | 'Deployment' | 'Secret';

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

export class KubernetesSimulatorApi implements SimulatorApi {
  private readonly informers: Record<Kind, Informer<KubeObject>>;
  private readonly custom: CustomObjectsApi;
  private readonly apps: AppsV1Api;
  private writes: Promise<void> = Promise.resolve();
  /** Writes that failed (other than on objects that vanished meanwhile). */
  readonly failures: string[] = [];

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
    };
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

  /** Resolves when every write issued so far has been sent. */
  idle(): Promise<void> {
    return this.writes;
  }

  private informerOf(kind: string): Informer<KubeObject> | undefined {
    return this.informers[kind as Kind];
  }

  /** Whether the simulator may see (and so act on) objects of this namespace. */
  private visible(namespace: string | undefined): boolean {
    return !this.ignored.has(namespace ?? '');
  }

  get<T extends KubeObject = StoredObject>(ref: { kind: string; namespace: string; name: string }): T | undefined {
    if (!this.visible(ref.namespace)) return undefined;
    return this.informerOf(ref.kind)?.get(ref.namespace, ref.name) as T | undefined;
  }

  list<T extends KubeObject = StoredObject>(kind: string, namespace?: string): T[] {
    const all = (this.informerOf(kind)?.list(namespace) ?? []) as T[];
    return this.ignored.size === 0 ? all : all.filter((o) => this.visible(o.metadata.namespace));
  }

  onChange(listener: (change: Change) => void): () => void {
    const offs = (['Cluster', 'Pooler'] as const).map((kind) =>
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
    const before = this.get<StoredObject>({
      kind: object.kind,
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
    });
    const copy = structuredClone(object);
    this.writes = this.writes.then(() =>
      this.write(copy, before, statusOnly).catch((error: unknown) => {
        const code = (error as { code?: number }).code;
        if (code !== 404) this.failures.push(`${copy.kind} ${copy.metadata.name}: ${String(error).slice(0, 300)}`);
      }),
    );
  }

  private async write(object: StoredObject, before: StoredObject | undefined, statusOnly: boolean): Promise<void> {
    const namespace = object.metadata.namespace ?? '';
    const name = object.metadata.name;
    if (object.kind === 'Deployment') {
      if (!statusOnly) {
        await this.apps.patchNamespacedDeployment(
          { name, namespace, body: this.deploymentOf(object), fieldManager: SIMULATOR, force: true },
          apply,
        );
      }
      if (object.status) {
        await this.apps.patchNamespacedDeploymentStatus(
          { name, namespace, body: { status: object.status } },
          mergePatch,
        );
      }
      return;
    }
    const plural = object.kind === 'Cluster' ? 'clusters' : 'poolers';
    const at = { group: 'postgresql.cnpg.io', version: 'v1', namespace, plural, name };
    if (statusOnly) {
      await this.custom.patchNamespacedCustomObjectStatus({ ...at, body: { status: object.status } }, mergePatch);
      return;
    }
    const patch = mergePatchOf(before?.spec ?? {}, object.spec);
    if (patch && Object.keys(patch as object).length > 0) {
      await this.custom.patchNamespacedCustomObject({ ...at, body: { spec: patch } }, mergePatch);
    }
  }

  /** A Deployment the API server accepts; nothing ever runs it. */
  private deploymentOf(object: StoredObject): object {
    const name = object.metadata.name;
    const replicas = (object.spec as { replicas?: number } | undefined)?.replicas ?? 1;
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: object.metadata.namespace, ownerReferences: object.metadata.ownerReferences },
      spec: {
        replicas,
        selector: { matchLabels: { 'cnpg.io/poolerName': name } },
        template: {
          metadata: { labels: { 'cnpg.io/poolerName': name } },
          spec: { containers: [{ name: 'pgbouncer', image: 'simulated/pgbouncer:never-pulled' }] },
        },
      },
    };
  }
}
