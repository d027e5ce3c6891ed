/** The ports over the in-memory API: what the simulation and the tests run the real core against. */
import type {
  OwnerReference,
  PostgresCluster,
  PostgresClusterClass,
  PostgresClusterStatus,
  PostgresDatabase,
  PostgresDatabaseStatus,
} from '../../operator/api/schema.ts';
import { PortError } from '../../operator/core/errors.ts';
import type {
  AppliedChildPort,
  BackupPorts,
  ChildPort,
  Clock,
  ClusterKey,
  EventSink,
  EventSubject,
  Ports,
} from '../../operator/core/ports.ts';
import type { CnpgBackup, ObjectStore, ScheduledBackup } from '../../operator/domain/backup/objects.ts';
import { namedClass } from '../../operator/domain/config.ts';
import type { KubeEvent, SecretTemplate } from '../../operator/domain/effects.ts';
import type {
  CnpgCluster,
  ConfigMap,
  KubeObject,
  ObjectRef,
  Pooler,
  PoolerView,
  SecretView,
} from '../../operator/domain/objects.ts';
import { ADOPT_ANNOTATION, FIELD_MANAGER } from '../../operator/domain/vocabulary.ts';
import { generatePassword } from '../../operator/kubernetes/password.ts';
import type { MemoryApiServer, StoredObject } from './api-server.ts';

/** A recorded event, as the events API would store it. */
export interface RecordedEvent extends KubeEvent {
  regarding: { namespace: string; name: string; uid?: string };
  time: number;
}

export class MemoryEventSink implements EventSink {
  readonly events: RecordedEvent[] = [];
  /** Emits still to fail, as the Kubernetes sink fails once its own retries are spent. */
  private failures = 0;
  constructor(private readonly clock: Clock) {}
  /** The next `times` emits fail (with a timeout) and record nothing. */
  failNext(times = 1): void {
    this.failures += times;
  }
  async emit(regarding: EventSubject, event: KubeEvent): Promise<void> {
    if (this.failures > 0) {
      this.failures--;
      throw new PortError('timeout', `injected timeout on create Event ${event.reason}`);
    }
    const { namespace, name, uid } = regarding.metadata;
    this.events.push({ ...event, regarding: { namespace, name, ...(uid ? { uid } : {}) }, time: this.clock.now() });
  }
}

export class ManualClock implements Clock {
  constructor(private time: number) {}
  now(): number {
    return this.time;
  }
  set(time: number): void {
    this.time = time;
  }
  advance(ms: number): void {
    this.time += ms;
  }
}

const ownerPatch = (object: StoredObject, mutate: (owners: OwnerReference[]) => OwnerReference[]) => {
  const next = structuredClone(object);
  next.metadata.ownerReferences = mutate(next.metadata.ownerReferences ?? []);
  return next;
};

export class MemoryChildPort<T extends KubeObject> implements ChildPort<T> {
  constructor(
    protected readonly api: MemoryApiServer,
    private readonly project: (object: StoredObject) => T = (o) => o as unknown as T,
  ) {}
  async get(ref: ObjectRef): Promise<T | undefined> {
    const object = this.api.get(ref);
    return object ? this.project(object) : undefined;
  }
  async delete(ref: ObjectRef): Promise<void> {
    if (this.api.get(ref)) this.api.delete(ref);
  }
  async setOwner(ref: ObjectRef, owner: OwnerReference): Promise<T | undefined> {
    const object = this.api.get(ref);
    if (!object) return undefined;
    return this.stored(
      this.api.update(ownerPatch(object, (owners) => [...owners.filter((o) => o.uid !== owner.uid), owner])),
    );
  }
  async releaseOwner(ref: ObjectRef, ownerUid: string): Promise<T | undefined> {
    const object = this.api.get(ref);
    if (!object) return undefined;
    const released = ownerPatch(object, (owners) => owners.filter((o) => o.uid !== ownerUid));
    // As the Kubernetes adapter does: the release hands the object over to a future cluster of the name.
    if (released.metadata.ownerReferences?.length !== object.metadata.ownerReferences?.length)
      released.metadata.annotations = { ...released.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
    return this.stored(this.api.update(released));
  }
  /** A write's answer, as the API would send it: a copy, so that nothing the caller keeps changes the store. */
  protected stored(object: StoredObject): T {
    return this.project(structuredClone(object));
  }
}

/** Strips values: the core must never hold a secret value. */
export const secretViewOf = (object: StoredObject): SecretView => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: object.metadata,
  keys: Object.keys({
    ...((object.data as Record<string, string> | undefined) ?? {}),
    ...((object.stringData as Record<string, string> | undefined) ?? {}),
  }).sort(),
});

/**
 * A resource of ours (PostgresCluster, PostgresDatabase): read, listed, its finalizers and its status, each write
 * conditional on the version the caller read, as on the real API (kubernetes/postgres-cluster.ts).
 */
export function memoryOwnerPort<T extends KubeObject & { metadata: { namespace: string } }, S>(
  api: MemoryApiServer,
  kind: string,
) {
  /**
   * Updates the stored object's finalizers as of the version the caller read (a stale caller conflicts); `edit`
   * returns undefined when there is nothing to change. What to change is decided on the caller's view of the
   * finalizers, as the Kubernetes adapter decides it: a caller whose view lags (a cache that has not caught up
   * with the finalizer added) writes, and conflicts, rather than finding the live object already as it wants it.
   */
  const editFinalizers = (object: T, edit: (finalizers: string[]) => string[] | undefined) => {
    const { namespace, name } = object.metadata;
    const live = api.get<StoredObject>({ kind, namespace, name });
    const finalizers = live && edit(object.metadata.finalizers ?? []);
    if (!live || !finalizers) return undefined;
    live.metadata.finalizers = finalizers;
    live.metadata.resourceVersion = object.metadata.resourceVersion;
    return api.update(live).metadata.resourceVersion;
  };
  return {
    async get(key: ClusterKey) {
      return api.get<T>({ kind, namespace: key.namespace, name: key.name });
    },
    async list(namespace: string) {
      return api.list<T>(kind, namespace);
    },
    async addFinalizer(object: T, finalizer: string) {
      return editFinalizers(object, (finalizers) =>
        finalizers.includes(finalizer) ? undefined : [...finalizers, finalizer],
      );
    },
    async removeFinalizer(object: T, finalizer: string) {
      return editFinalizers(object, (finalizers) => finalizers.filter((f) => f !== finalizer));
    },
    async writeStatus(object: T, status: S) {
      const ref = { kind, namespace: object.metadata.namespace, name: object.metadata.name };
      return api.updateStatus(ref, status as object, object.metadata.resourceVersion) as unknown as T;
    },
  };
}

/** The class port: its finalizer written as the cluster's is, conditional on the version the caller read. */
function memoryClassPort(api: MemoryApiServer): Ports['classes'] {
  const at = (name: string) => ({ kind: 'PostgresClusterClass', namespace: '', name });
  const editFinalizers = (clusterClass: PostgresClusterClass, edit: (finalizers: string[]) => string[] | undefined) => {
    const live = api.get<StoredObject>(at(clusterClass.metadata.name));
    const finalizers = live && edit(clusterClass.metadata.finalizers ?? []);
    if (!live || !finalizers) return undefined;
    live.metadata.finalizers = finalizers;
    live.metadata.resourceVersion = clusterClass.metadata.resourceVersion;
    return api.update(live).metadata.resourceVersion;
  };
  return {
    async get(name) {
      return api.get<PostgresClusterClass>(at(name));
    },
    async addFinalizer(clusterClass, finalizer) {
      return editFinalizers(clusterClass, (finalizers) =>
        finalizers.includes(finalizer) ? undefined : [...finalizers, finalizer],
      );
    },
    async removeFinalizer(clusterClass, finalizer) {
      return editFinalizers(clusterClass, (finalizers) =>
        finalizers.includes(finalizer) ? finalizers.filter((f) => f !== finalizer) : undefined,
      );
    },
    async usersOf(name) {
      return api.list<PostgresCluster>('PostgresCluster').filter((cluster) => namedClass(cluster) === name);
    },
  };
}

export function memoryPorts(api: MemoryApiServer, clock: Clock, events: EventSink = new MemoryEventSink(clock)): Ports {
  const secrets = new (class extends MemoryChildPort<SecretView> {
    async create(template: SecretTemplate): Promise<SecretView> {
      const created = this.api.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: template.ref.name,
          namespace: template.ref.namespace,
          labels: template.labels,
          ownerReferences: [template.owner],
        },
        type: 'kubernetes.io/basic-auth',
        data: {
          username: Buffer.from(template.username).toString('base64'),
          password: Buffer.from(generatePassword()).toString('base64'),
        },
      });
      return secretViewOf(created);
    }
  })(api, secretViewOf);

  const cnpgClusters = new (class extends MemoryChildPort<CnpgCluster> {
    async apply(object: CnpgCluster, part: 'cluster' | 'managedRoles'): Promise<CnpgCluster> {
      const manager = part === 'cluster' ? FIELD_MANAGER : `${FIELD_MANAGER}-roles`;
      return this.stored(this.api.apply(object as unknown as StoredObject, manager));
    }
  })(api);

  const poolers = new (class extends MemoryChildPort<Pooler> {
    async view(ref: ObjectRef): Promise<PoolerView | undefined> {
      const pooler = this.api.get<Pooler>(ref);
      if (!pooler) return undefined;
      const deployment = this.api.get<StoredObject>({ kind: 'Deployment', namespace: ref.namespace, name: ref.name });
      const readyReplicas = (deployment?.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0;
      return { pooler, readyReplicas };
    }
    async apply(object: Pooler): Promise<Pooler> {
      return this.stored(this.api.apply(object as unknown as StoredObject, FIELD_MANAGER));
    }
  })(api);

  const configMaps = new (class extends MemoryChildPort<ConfigMap> {
    async apply(object: ConfigMap): Promise<ConfigMap> {
      return this.stored(this.api.apply(object as unknown as StoredObject, FIELD_MANAGER));
    }
  })(api);

  return {
    backupObjects: memoryBackupPorts(api),
    clusters: memoryOwnerPort<PostgresCluster, PostgresClusterStatus>(api, 'PostgresCluster'),
    databases: memoryOwnerPort<PostgresDatabase, PostgresDatabaseStatus>(api, 'PostgresDatabase'),
    classes: memoryClassPort(api),
    secrets,
    cnpgClusters,
    poolers,
    configMaps,
    events,
    clock,
  };
}

/** A child applied whole by pgfsm's field manager: the backup kinds (issue 36). */
class MemoryAppliedPort<T extends KubeObject> extends MemoryChildPort<T> implements AppliedChildPort<T> {
  async apply(object: T): Promise<T> {
    return this.stored(this.api.apply(object as unknown as StoredObject, FIELD_MANAGER));
  }
}

export const memoryBackupPorts = (api: MemoryApiServer): BackupPorts => ({
  objectStores: new MemoryAppliedPort<ObjectStore>(api),
  scheduledBackups: new MemoryAppliedPort<ScheduledBackup>(api),
  backups: new MemoryAppliedPort<CnpgBackup>(api),
});
