/**
 * The small interfaces the driver needs from the outside world. The Kubernetes adapters implement them
 * (src/operator/kubernetes/informer.ts, leader.ts, watch-sources.ts); tests use fakes. Nothing in
 * src/operator/driver talks to the API server itself.
 */
import type { PostgresCluster, PostgresClusterClass, PostgresDatabase } from '../api/schema.ts';
import type { CnpgDatabase } from '../domain/database/observation.ts';
import type { CnpgCluster, KubeObject, Pooler } from '../domain/objects.ts';

export interface SourceEvent<T extends KubeObject = KubeObject> {
  type: 'add' | 'update' | 'delete';
  /** The new object; for `delete`, the last state that was known. */
  object: T;
  /** The cached object this update replaces. */
  old?: T;
}

/** A watched, cached collection of objects of one kind (an informer). */
export interface ObjectSource<T extends KubeObject = KubeObject> {
  /** The watched resource, for logs, metrics and readiness details (e.g. `secrets`). */
  readonly resource: string;
  /** True once the first complete list is in the cache. */
  readonly synced: boolean;
  /** Wall-clock ms of the last sign of life from the API server (list, watch start, event, bookmark). */
  readonly lastSeen: number;
  /** Synced, and the watch has shown signs of life recently enough to be trusted. */
  fresh(): boolean;
  /** A cached object; `namespace` is '' for cluster-scoped kinds. */
  get(namespace: string, name: string): T | undefined;
  /** Cached objects, of one namespace or of all. */
  list(namespace?: string): T[];
  /** Subscribes to changes; returns the unsubscribe function. */
  on(listener: (event: SourceEvent<T>) => void): () => void;
  start(): void;
  stop(): Promise<void>;
}

/**
 * The objects whose changes wake a PostgresCluster. Secrets and Deployments may be metadata-only
 * (the driver reads nothing but their metadata).
 */
export interface WatchSources {
  clusters: ObjectSource<PostgresCluster>;
  classes: ObjectSource<PostgresClusterClass>;
  cnpgClusters: ObjectSource<CnpgCluster>;
  poolers: ObjectSource<Pooler>;
  secrets: ObjectSource<KubeObject>;
  configMaps: ObjectSource<KubeObject>;
  deployments: ObjectSource<KubeObject>;
  /** PostgresDatabases: their own passes, and the roles their clusters push (domain/database/roles.ts). */
  databases: ObjectSource<PostgresDatabase>;
  /** CNPG Databases, which PostgresDatabases own. */
  cnpgDatabases: ObjectSource<CnpgDatabase>;
}

export const allSources = (sources: WatchSources): ObjectSource[] => Object.values(sources) as ObjectSource[];

export interface LeadershipCallbacks {
  /**
   * `continued`: this replica held the lease last and nobody else has led since (the lease still names it),
   * so what its memory kept from its last term (announcements.ts) still holds. False when another replica
   * led in between, whose passes that memory knows nothing of, and on a first term.
   */
  onStartedLeading(continued: boolean): void;
  onStoppedLeading(): void;
}

/** Who may reconcile: only the leader runs workers, standbys keep their caches warm. */
export interface Leadership {
  readonly identity: string;
  isLeader(): boolean;
  start(callbacks: LeadershipCallbacks): void;
  /** Stops campaigning; a leader releases its lease so another replica takes over at once. */
  stop(): Promise<void>;
}

/** `--leader-elect=false`: this process is the only one and leads from the start. */
export class SoleLeader implements Leadership {
  private leading = false;
  private callbacks: LeadershipCallbacks | undefined;
  constructor(readonly identity: string) {}
  isLeader(): boolean {
    return this.leading;
  }
  start(callbacks: LeadershipCallbacks): void {
    this.callbacks = callbacks;
    this.leading = true;
    callbacks.onStartedLeading(false);
  }
  async stop(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    this.callbacks?.onStoppedLeading();
  }
}
