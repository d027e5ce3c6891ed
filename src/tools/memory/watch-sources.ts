/**
 * The driver's watch sources over the in-memory API: one informer-like cache per kind, filled by a list
 * on `start` and kept up by the API's change notifications. They emit what the Kubernetes informers
 * (src/operator/kubernetes/informer.ts) emit — `add` for the initial list and for new objects, `update`
 * with the `old` object when the resourceVersion moved, `delete` with the last known state, and a
 * `delete` for an object that stops passing the filter — so that the driver's own mapping and its
 * status-only filter decide which clusters wake, exactly as in production.
 *
 * Delivery is synchronous and in the order the API stored the changes (see MemoryApiServer.notify):
 * the same writes always give the same events.
 */
import type { Clock } from '../../operator/core/ports.ts';
import type { KubeObject } from '../../operator/domain/objects.ts';
import type { ObjectSource, SourceEvent, WatchSources } from '../../operator/driver/sources.ts';
import type { Timers } from '../../operator/driver/workqueue.ts';
import {
  cachedFormOf,
  selectedBy,
  type WatchShape,
  watchSourcesFrom,
} from '../../operator/kubernetes/watch-sources.ts';
import type { Change, MemoryApiServer } from './api-server.ts';

interface Shape<T extends KubeObject> {
  kind: string;
  resource: string;
  /** What the cache keeps of an object (metadata-only kinds keep nothing else). */
  transform?: (object: KubeObject) => T;
  /** Which objects the cache keeps at all (a label selector or a client-side filter). */
  filter?: (object: T) => boolean;
}

export class MemoryObjectSource<T extends KubeObject> implements ObjectSource<T> {
  readonly resource: string;
  synced = false;
  lastSeen = 0;
  private readonly cache = new Map<string, Map<string, T>>();
  private readonly listeners: Array<(event: SourceEvent<T>) => void> = [];
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly api: MemoryApiServer,
    private readonly clock: Clock,
    private readonly shape: Shape<T>,
    /** How a change reaches the cache: at once (the default), or later, in order (WatchLag). */
    private readonly deliver: (observe: () => void) => void = (observe) => observe(),
  ) {
    this.resource = shape.resource;
  }

  /** The in-memory API loses no change: a started source is as fresh as it gets. */
  fresh(): boolean {
    return this.synced && this.unsubscribe !== undefined;
  }

  get(namespace: string, name: string): T | undefined {
    return this.cache.get(namespace)?.get(name);
  }

  list(namespace?: string): T[] {
    if (namespace !== undefined) return [...(this.cache.get(namespace)?.values() ?? [])];
    return [...this.cache.values()].flatMap((objects) => [...objects.values()]);
  }

  on(listener: (event: SourceEvent<T>) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  start(): void {
    if (this.unsubscribe) return;
    this.unsubscribe = this.api.onChange((change) => {
      if (change.object.kind === this.shape.kind) this.deliver(() => this.observe(change.type, change.object));
    });
    for (const object of this.api.list(this.shape.kind)) this.observe('added', object);
    this.synced = true;
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private observe(type: Change['type'], raw: KubeObject): void {
    this.lastSeen = this.clock.now();
    const namespace = raw.metadata.namespace ?? '';
    const name = raw.metadata.name;
    const object = this.normalize(raw);
    const old = this.get(namespace, name);
    if (type === 'deleted' || !object) {
      if (!old) return;
      this.cache.get(namespace)?.delete(name);
      this.emit({ type: 'delete', object: object ?? old });
      return;
    }
    let objects = this.cache.get(namespace);
    if (!objects) {
      objects = new Map();
      this.cache.set(namespace, objects);
    }
    objects.set(name, object);
    if (!old) this.emit({ type: 'add', object });
    else if (old.metadata.resourceVersion !== object.metadata.resourceVersion) {
      this.emit({ type: 'update', object, old });
    }
  }

  private normalize(raw: KubeObject): T | undefined {
    const object = this.shape.transform ? this.shape.transform(raw) : (raw as T);
    return this.shape.filter && !this.shape.filter(object) ? undefined : object;
  }

  private emit(event: SourceEvent<T>): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

/**
 * A watch that delivers each change some time after the API stored it, as a real watch does (the API server's
 * watch cache, the network, the informer's queue): a cache that lags behind what was just written is where
 * a controller decides on a stale view. Changes of one kind keep their order, as one watch stream does; the
 * kinds lag independently, as separate watches do.
 */
export interface WatchLag {
  timers: Pick<Timers, 'setTimeout'>;
  /** The lag of one change, in ms (drawn per change, e.g. from a seeded random source). */
  delayMs: () => number;
}

/** `deliver` for one watch stream: each change after its lag, never before the change before it. */
function lagging(lag: WatchLag, clock: Clock): (observe: () => void) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (observe) => {
    const now = clock.now();
    last = Math.max(last, now + lag.delayMs());
    lag.timers.setTimeout(observe, last - now);
  };
}

/**
 * The watch sources `pgfsm run` would have, shaped as it shapes them, over the in-memory API; with `lag`,
 * every change reaches them late (WatchLag), without it at once.
 */
export function memoryWatchSources(api: MemoryApiServer, clock: Clock, lag?: WatchLag): WatchSources {
  return watchSourcesFrom(
    <T extends KubeObject>(shape: WatchShape) =>
      new MemoryObjectSource<T>(
        api,
        clock,
        {
          kind: shape.resource.kind,
          resource: shape.resource.plural,
          transform: (object) => cachedFormOf(shape)(object) as T,
          // The label selector the API server would apply, then the client's filter: as `pgfsm run` sees them.
          filter: (object) => selectedBy(shape, object) && (shape.filter?.(object) ?? true),
        },
        lag ? lagging(lag, clock) : undefined,
      ),
  );
}
