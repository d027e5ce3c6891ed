/**
 * A CNPG simulator: plays CloudNativePG's part against the in-memory API. It moves Cluster phases and
 * `readyInstances` along with configurable delays, reconciles managed roles, runs a Deployment per
 * Pooler whose ready replicas lag behind, and takes injected faults (switchover, failover,
 * unrecoverable, a role that cannot be reconciled, a pooler that never gets ready).
 */

import type { Clock } from '../../operator/core/ports.ts';
import { CnpgPhase } from '../../operator/domain/components/cnpg-phases.ts';
import { type CnpgCluster, type KubeObject, POOLER_NAME_LABEL, type Pooler } from '../../operator/domain/objects.ts';
import type { Change, StoredObject } from '../memory/api-server.ts';
import { Heap } from './heap.ts';

/**
 * What the simulator needs from an API: the in-memory one, or a real API server (where CNPG would be).
 * `put` writes as CNPG would: `statusOnly` through the status subresource, otherwise the object itself,
 * creating it when missing.
 */
export interface SimulatorApi {
  get<T extends KubeObject = StoredObject>(ref: { kind: string; namespace: string; name: string }): T | undefined;
  list<T extends KubeObject = StoredObject>(kind: string, namespace?: string): T[];
  put(object: StoredObject, statusOnly?: boolean): unknown;
  onChange(listener: (change: Change) => void): () => void;
  /**
   * Optional: the objects of `kind` named in `refs` that exist, in `list` order. Only for an API whose
   * `onChange` reports every write of every kind the simulator reads (Clusters, Poolers, Deployments, Secrets;
   * status changes included), and whose reads show the simulator's own writes at once: the in-memory API
   * (reports as it happens), and the real one (its watches report later, and its reads lay the simulator's
   * unseen writes over the caches). The simulator then looks again only at what changed since it last looked
   * (O(changes) per event), instead of listing every Cluster after every change, which made a simulated
   * fleet quadratic in its size and made the simulator the bottleneck of a benchmark against a real API
   * server. Without it the simulator lists everything each time.
   */
  listNamed?<T extends KubeObject = StoredObject>(kind: string, refs: Iterable<Ref>): T[];
}

type Ref = { namespace: string; name: string };

export interface SimulatorDelays {
  /** From creation to the first phase. */
  firstPhaseMs: number;
  /** To get the primary ready. */
  primaryMs: number;
  /** Per additional replica. */
  replicaMs: number;
  /** Applying configuration or an image change. */
  configurationMs: number;
  /** Until a managed role is reconciled. */
  roleMs: number;
  /** Until a Pooler's Deployment has its replicas ready. */
  poolerMs: number;
}

export const defaultDelays: SimulatorDelays = {
  firstPhaseMs: 1_000,
  primaryMs: 30_000,
  replicaMs: 20_000,
  configurationMs: 10_000,
  roleMs: 2_000,
  poolerMs: 8_000,
};

interface Timer {
  at: number;
  /** Order of creation: timers due at the same instant run in the order they were set. */
  seq: number;
  key: string;
  epoch: number;
  run: () => void;
}

/** What CNPG reacts to in a Cluster's spec; a change of it starts a rollout. */
const fingerprint = (c: CnpgCluster) =>
  JSON.stringify([
    c.spec.instances,
    c.spec.imageName,
    // Sorted: a real API server returns map keys in its own order, which is no change of the spec.
    Object.entries(c.spec.postgresql?.parameters ?? {}).sort(([a], [b]) => a.localeCompare(b)),
    c.spec.postgresql?.pg_hba,
  ]);

/** Joined rather than concatenated: one flat string per key kept, not a tree of pieces (see the in-memory API). */
const joined = (...parts: Array<string | undefined>) => parts.join('/');
const keyOf = (o: { metadata: { namespace?: string; name: string } }) => joined(o.metadata.namespace, o.metadata.name);
const nameOf = (o: { metadata: { namespace?: string; name: string } }): Ref => ({
  namespace: o.metadata.namespace ?? '',
  name: o.metadata.name,
});

/**
 * With an API that reports every change (see `SimulatorApi.listNamed`): the objects that may need another
 * look, by `keyOf`. An object left out is one the full pass would leave alone, so looking only at these
 * (still in `list` order, so writes keep their order) behaves exactly as listing everything did.
 */
interface Revisit {
  /** Clusters whose spec may differ from what `seen` holds (changed, forgotten, or stuck meanwhile). */
  clusters: Map<string, Ref>;
  /** Poolers whose instances may differ from what `seen` holds. */
  poolers: Map<string, Ref>;
  /** Clusters whose managed roles may have a new status: changed, or a password Secret of theirs did. */
  roles: Map<string, Ref>;
  /** Clusters with a role still within `roleMs`: its status moves with the clock alone. */
  rolesWaiting: Map<string, Ref>;
  /** Every cluster's roles (at the start, and when injected role errors change). */
  allRoles: boolean;
  /** The clusters whose roles name a password Secret, by the Secret's `namespace/name`. */
  secretUsers: Map<string, Map<string, Ref>>;
}

/** Distinct spec fingerprints kept for sharing (see `CnpgSimulator.prints`). */
const PRINTS_KEPT = 1_000;

/** CNPG fills in parameters of its own; pgfsm must not take them for drift. */
const CNPG_DEFAULT_PARAMETERS = { shared_buffers: '128MB', dynamic_shared_memory_type: 'posix' };

export class CnpgSimulator {
  /**
   * By (at, seq): the next timer in O(log n), where filtering and sorting every pending timer on every
   * step made a simulated fleet quadratic. A timer of an earlier epoch never runs again (epochs only
   * grow), so dropping it early from the heap changes nothing.
   */
  private readonly timers = new Heap<Timer>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  private timersSet = 0;
  private readonly epochs = new Map<string, number>();
  /** Per Cluster (and `pooler:` Pooler), the fingerprint of the spec last acted on (`remember`). */
  private readonly seen = new Map<string, string>();
  /**
   * One instance of each distinct fingerprint: a fleet's Clusters mostly share their spec, and a fingerprint of
   * its own per Cluster was most of what the simulator kept. Started over past `PRINTS_KEPT`, which costs sharing
   * only.
   */
  private readonly prints = new Map<string, string>();
  private readonly roleSeen = new Map<string, number>();
  private readonly stuck = new Set<string>();
  private readonly roleErrors = new Map<string, string>();
  private readonly poolersNeverReady = new Set<string>();
  private readonly unsubscribe: () => void;
  private revisit: Revisit | undefined;

  constructor(
    private readonly api: SimulatorApi,
    private readonly clock: Clock,
    private readonly delays: SimulatorDelays = defaultDelays,
  ) {
    if (api.listNamed) {
      const byKey = (objects: KubeObject[]) => new Map(objects.map((o) => [keyOf(o), nameOf(o)]));
      this.revisit = {
        clusters: byKey(api.list('Cluster')),
        poolers: byKey(api.list('Pooler')),
        roles: new Map(),
        rolesWaiting: new Map(),
        allRoles: true,
        secretUsers: new Map(),
      };
    }
    this.unsubscribe = api.onChange((change) => this.onChange(change));
    this.syncAll();
  }

  stop(): void {
    this.unsubscribe();
    // No more changes come in: from now on look at everything.
    this.revisit = undefined;
  }

  /** When the simulator will next change something on its own, if ever. */
  nextEventAt(): number | undefined {
    for (;;) {
      const next = this.timers.peek();
      if (!next || this.epochOf(next.key) === next.epoch) return next?.at;
      this.timers.pop();
    }
  }

  /** Runs everything due by the clock's now. */
  advance(): void {
    const now = this.clock.now();
    for (;;) {
      const due = this.timers.peek();
      if (!due || due.at > now) break;
      this.timers.pop();
      if (this.epochOf(due.key) === due.epoch) due.run();
    }
    const revisit = this.revisit;
    if (!revisit) {
      for (const cluster of this.api.list<CnpgCluster>('Cluster')) this.reconcileRoles(cluster);
      return;
    }
    const clusters = this.listOf<CnpgCluster>(
      'Cluster',
      revisit.allRoles ? undefined : [...revisit.roles, ...revisit.rolesWaiting],
    );
    revisit.allRoles = false;
    revisit.roles.clear();
    revisit.rolesWaiting.clear();
    for (const cluster of clusters) {
      if (this.reconcileRoles(cluster)) revisit.rolesWaiting.set(keyOf(cluster), nameOf(cluster));
    }
  }

  // ---- faults -------------------------------------------------------------------------------------

  switchover(namespace: string, name: string, durationMs = 10_000): void {
    this.operation(namespace, name, CnpgPhase.Switchover, durationMs, (c) => {
      c.status = { ...c.status, currentPrimary: `${name}-2`, phaseReason: 'Switching over to a new primary' };
    });
  }

  failover(namespace: string, name: string, durationMs = 15_000): void {
    this.operation(namespace, name, CnpgPhase.FailOver, durationMs, (c) => {
      const ready = Math.max((c.status?.readyInstances ?? 1) - 1, 0);
      c.status = { ...c.status, readyInstances: ready, currentPrimary: `${name}-2`, phaseReason: 'Primary lost' };
    });
  }

  /** CNPG gives up; it stays so until `recover`. */
  unrecoverable(namespace: string, name: string): void {
    const key = joined(namespace, name);
    this.stuck.add(key);
    this.bump(key);
    this.mutate(namespace, name, (c) => {
      c.status = { ...c.status, phase: CnpgPhase.Unrecoverable, phaseReason: 'Injected fault' };
    });
  }

  recover(namespace: string, name: string): void {
    const key = joined(namespace, name);
    this.stuck.delete(key);
    const epoch = this.bump(key);
    this.at(key, epoch, this.delays.configurationMs, () => this.healthy(namespace, name));
  }

  roleCannotReconcile(namespace: string, cluster: string, role: string, message: string): void {
    this.roleErrors.set(`${namespace}/${cluster}/${role}`, message);
    if (this.revisit) this.revisit.allRoles = true;
  }

  poolerNeverReady(namespace: string, pooler: string): void {
    this.poolersNeverReady.add(`${namespace}/${pooler}`);
  }

  clearFaults(): void {
    this.roleErrors.clear();
    if (this.revisit) this.revisit.allRoles = true;
    this.poolersNeverReady.clear();
    for (const key of [...this.stuck]) {
      const [namespace = '', name = ''] = key.split('/');
      this.recover(namespace, name);
    }
    for (const pooler of this.api.list<Pooler>('Pooler')) this.rolloutPooler(pooler);
  }

  // ---- reactions ----------------------------------------------------------------------------------

  private onChange(change: Change): void {
    this.noteChange(change);
    const { kind } = change.object;
    // A Database is applied once its owner role exists: CNPG's roles report arrives as the Cluster's status.
    if ((kind === 'Database' && change.type !== 'deleted') || (kind === 'Cluster' && change.statusOnly)) {
      this.syncDatabases();
    }
    if (change.statusOnly) return;
    if (change.type === 'deleted') {
      // A new object of the same name starts from scratch.
      const id = keyOf(change.object);
      this.seen.delete(kind === 'Pooler' ? joined('pooler:', id) : id);
      return;
    }
    if (kind === 'Cluster' || kind === 'Pooler') this.syncAll();
  }

  /** What a change may make worth another look (only with an API that reports every change). */
  private noteChange({ type, object }: Change): void {
    const revisit = this.revisit;
    if (!revisit) return;
    const id = keyOf(object);
    const ref = nameOf(object);
    if (object.kind === 'Cluster') {
      revisit.clusters.set(id, ref);
      revisit.roles.set(id, ref);
    } else if (object.kind === 'Pooler') revisit.poolers.set(id, ref);
    else if (object.kind === 'Secret') {
      for (const [key, user] of revisit.secretUsers.get(`${ref.namespace}/${ref.name}`) ?? []) {
        revisit.roles.set(key, user);
      }
    }
    // A deletion of any kind forgets what was seen under its name (see `onChange`).
    if (type === 'deleted') (object.kind === 'Pooler' ? revisit.poolers : revisit.clusters).set(id, ref);
  }

  /** Every object of `kind`, or (with `revisit`) only those in `looked`; either way in `list` order. */
  private listOf<T extends KubeObject>(kind: string, looked?: Array<[string, Ref]>): T[] {
    if (!looked || !this.api.listNamed) return this.api.list<T>(kind);
    const refs = looked.map((entry) => entry[1]);
    return this.api.listNamed<T>(kind, refs);
  }

  /**
   * After a pass over `looked` (a snapshot of `pending`): keeps pending only those whose object still
   * differs from what `seen` holds, e.g. a stuck Cluster, or one changed again while the pass ran.
   */
  private settle(
    kind: string,
    looked: Array<[string, Ref]>,
    pending: Map<string, Ref>,
    inStep: (o: KubeObject) => boolean,
  ): void {
    const current = new Map(this.listOf(kind, looked).map((o) => [keyOf(o), o]));
    for (const [key, ref] of looked) {
      const object = current.get(key);
      if (object && !inStep(object)) pending.set(key, ref);
      else pending.delete(key);
    }
  }

  private syncAll(): void {
    const revisit = this.revisit;
    const looked = revisit && [...revisit.clusters];
    for (const cluster of this.listOf<CnpgCluster>('Cluster', looked)) this.syncCluster(cluster);
    if (revisit && looked) {
      this.settle(
        'Cluster',
        looked,
        revisit.clusters,
        (c) => this.seen.get(keyOf(c)) === fingerprint(c as CnpgCluster),
      );
    }
    const lookedPoolers = revisit && [...revisit.poolers];
    for (const pooler of this.listOf<Pooler>('Pooler', lookedPoolers)) {
      const key = joined('pooler:', keyOf(pooler));
      const print = JSON.stringify(pooler.spec.instances ?? 1);
      if (this.seen.get(key) !== print) {
        this.remember(key, print);
        this.rolloutPooler(pooler);
      }
    }
    if (revisit && lookedPoolers) {
      const print = (p: KubeObject) => JSON.stringify((p as Pooler).spec.instances ?? 1);
      this.settle(
        'Pooler',
        lookedPoolers,
        revisit.poolers,
        (p) => this.seen.get(joined('pooler:', keyOf(p))) === print(p),
      );
    }
  }

  private syncCluster(cluster: CnpgCluster): void {
    const key = keyOf(cluster);
    const print = fingerprint(cluster);
    const before = this.seen.get(key);
    if (before === print || this.stuck.has(key)) return;
    this.remember(key, print);
    const { namespace = '', name } = cluster.metadata;
    const epoch = this.bump(key);
    if (before === undefined) {
      // CNPG's defaulting webhook adds parameters of its own when the cluster is created.
      const defaulted = structuredClone(cluster);
      defaulted.spec.postgresql = {
        ...defaulted.spec.postgresql,
        parameters: { ...CNPG_DEFAULT_PARAMETERS, ...defaulted.spec.postgresql?.parameters },
      };
      this.remember(key, fingerprint(defaulted));
      this.api.put(defaulted as unknown as StoredObject);
      this.at(key, epoch, this.delays.firstPhaseMs, () =>
        this.mutate(namespace, name, (c) => {
          c.status = {
            phase: CnpgPhase.FirstPrimary,
            // As CNPG's reconcileImage does first, on every reconcile: the image it has taken up.
            image: c.spec.imageName,
            instances: c.spec.instances ?? 1,
            readyInstances: 0,
            writeService: `${name}-rw`,
            readService: `${name}-r`,
          };
        }),
      );
      this.at(key, epoch, this.delays.firstPhaseMs + this.delays.primaryMs, () =>
        this.addReplicas(namespace, name, key, epoch),
      );
      return;
    }
    const wanted = cluster.spec.instances ?? 1;
    const ready = cluster.status?.readyInstances ?? 0;
    if (wanted !== (cluster.status?.instances ?? wanted) || ready < wanted) {
      this.mutate(namespace, name, (c) => {
        c.status = {
          ...c.status,
          image: c.spec.imageName,
          instances: wanted,
          readyInstances: Math.min(ready, wanted),
          phase: CnpgPhase.CreatingReplica,
        };
      });
      this.at(key, epoch, this.delays.replicaMs, () => this.addReplicas(namespace, name, key, epoch));
      return;
    }
    this.operation(namespace, name, CnpgPhase.ApplyingConfiguration, this.delays.configurationMs, (c) => {
      c.status = { ...c.status, image: c.spec.imageName };
    });
  }

  /** One more ready instance, then again later, until all are ready. */
  private addReplicas(namespace: string, name: string, key: string, epoch: number): void {
    const cluster = this.api.get<CnpgCluster>(refOf(namespace, name));
    if (!cluster) return;
    const wanted = cluster.spec.instances ?? 1;
    const ready = Math.min((cluster.status?.readyInstances ?? 0) + 1, wanted);
    if (ready >= wanted) {
      this.healthy(namespace, name);
      return;
    }
    this.mutate(namespace, name, (c) => {
      c.status = {
        ...c.status,
        readyInstances: ready,
        instances: wanted,
        phase: CnpgPhase.CreatingReplica,
        currentPrimary: `${name}-1`,
      };
    });
    this.at(key, epoch, this.delays.replicaMs, () => this.addReplicas(namespace, name, key, epoch));
  }

  private healthy(namespace: string, name: string): void {
    this.mutate(namespace, name, (c) => {
      const wanted = c.spec.instances ?? 1;
      const { phaseReason: _dropped, ...rest } = c.status ?? {};
      c.status = {
        ...rest,
        phase: CnpgPhase.Healthy,
        instances: wanted,
        readyInstances: wanted,
        currentPrimary: c.status?.currentPrimary ?? `${name}-1`,
        writeService: `${name}-rw`,
        readService: `${name}-r`,
      };
    });
  }

  private operation(
    namespace: string,
    name: string,
    phase: string,
    durationMs: number,
    extra?: (c: CnpgCluster) => void,
  ): void {
    const key = joined(namespace, name);
    const epoch = this.bump(key);
    this.mutate(namespace, name, (c) => {
      c.status = { ...c.status, phase };
      extra?.(c);
    });
    this.at(key, epoch, durationMs, () => this.healthy(namespace, name));
  }

  /** Returns whether a role is still within `roleMs` (its status will change with time alone). */
  private reconcileRoles(cluster: CnpgCluster): boolean {
    const { namespace = '', name } = cluster.metadata;
    if (cluster.status?.phase !== CnpgPhase.Healthy) return false;
    let waiting = false;
    const now = this.clock.now();
    const reconciled: string[] = [];
    const pending: string[] = [];
    const cannotReconcile: Record<string, string[]> = {};
    for (const role of cluster.spec.managed?.roles ?? []) {
      const roleKey = joined(namespace, name, role.name, role.ensure, role.passwordSecret?.name ?? '');
      const first = this.roleSeen.get(roleKey) ?? now;
      this.roleSeen.set(roleKey, first);
      if (role.passwordSecret && this.revisit) {
        const users = this.revisit.secretUsers;
        const secret = `${namespace}/${role.passwordSecret.name}`;
        users.set(secret, (users.get(secret) ?? new Map()).set(keyOf(cluster), nameOf(cluster)));
      }
      const error = this.roleErrors.get(`${namespace}/${name}/${role.name}`);
      const secretMissing =
        role.ensure !== 'absent' &&
        role.passwordSecret !== undefined &&
        !this.api.get({ kind: 'Secret', namespace, name: role.passwordSecret.name });
      if (error) cannotReconcile[role.name] = [error];
      else if (secretMissing || now - first < this.delays.roleMs) {
        pending.push(role.name);
        waiting ||= !secretMissing;
        if (!secretMissing)
          this.at(
            joined('roles:', namespace, name),
            this.epochOf(joined('roles:', namespace, name)),
            first + this.delays.roleMs - now,
            () => {},
          );
      } else reconciled.push(role.name);
    }
    const status = {
      byStatus: {
        reconciled: reconciled.sort(),
        'pending-reconciliation': pending.sort(),
        reserved: ['postgres', 'streaming_replica'],
      },
      cannotReconcile,
    };
    if (JSON.stringify(cluster.status?.managedRolesStatus) === JSON.stringify(status)) return waiting;
    this.mutate(namespace, name, (c) => {
      c.status = { ...c.status, managedRolesStatus: status };
    });
    return waiting;
  }

  private rolloutPooler(pooler: Pooler): void {
    const { namespace = '', name } = pooler.metadata;
    const key = joined('pooler:', namespace, name);
    const epoch = this.bump(key);
    const replicas = pooler.spec.instances ?? 1;
    const current = this.api.get<StoredObject>({ kind: 'Deployment', namespace, name });
    const readyNow = Math.min(
      (current?.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0,
      replicas,
    );
    this.api.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name,
        namespace,
        // As CNPG labels it (since v1.22): the operator's Deployment watch selects by this label.
        labels: { [POOLER_NAME_LABEL]: name },
        ownerReferences: [
          { apiVersion: pooler.apiVersion, kind: 'Pooler', name, uid: pooler.metadata.uid ?? '', controller: true },
        ],
      },
      spec: { replicas },
      status: { replicas, readyReplicas: readyNow },
    });
    this.api.put(
      {
        ...(this.api.get<StoredObject>(refOfPooler(namespace, name)) ?? pooler),
        status: { instances: replicas },
      } as StoredObject,
      true,
    );
    if (this.poolersNeverReady.has(`${namespace}/${name}`)) return;
    this.at(key, epoch, this.delays.poolerMs, () => {
      const deployment = this.api.get<StoredObject>({ kind: 'Deployment', namespace, name });
      if (!deployment) return;
      this.api.put({ ...deployment, status: { replicas, readyReplicas: replicas } }, true);
    });
  }

  /**
   * CNPG's Database controller, reduced to what pgfsm reads: a Database whose owner role CNPG has reconciled
   * on its Cluster is applied (`status.applied` for its generation); until then it has no status.
   */
  private syncDatabases(): void {
    for (const database of this.api.list<SimulatedDatabase>('Database')) {
      const { namespace = '', generation } = database.metadata;
      if (database.status?.applied && database.status.observedGeneration === generation) continue;
      const cluster = this.api.get<CnpgCluster>(refOf(namespace, database.spec?.cluster?.name ?? ''));
      const reconciled = cluster?.status?.managedRolesStatus?.byStatus?.reconciled ?? [];
      if (!reconciled.includes(database.spec?.owner ?? '')) continue;
      this.api.put(
        { ...database, status: { applied: true, observedGeneration: generation } } as unknown as StoredObject,
        true,
      );
    }
  }

  // ---- plumbing -----------------------------------------------------------------------------------

  private remember(key: string, print: string): void {
    let shared = this.prints.get(print);
    if (shared === undefined) {
      if (this.prints.size >= PRINTS_KEPT) this.prints.clear();
      this.prints.set(print, print);
      shared = print;
    }
    this.seen.set(key, shared);
  }

  private epochOf(key: string): number {
    return this.epochs.get(key) ?? 0;
  }

  /** Starts a new epoch for a key: timers of earlier epochs no longer fire. */
  private bump(key: string): number {
    const epoch = this.epochOf(key) + 1;
    this.epochs.set(key, epoch);
    return epoch;
  }

  private at(key: string, epoch: number, delayMs: number, run: () => void): void {
    this.timers.push({ at: this.clock.now() + Math.max(delayMs, 0), seq: ++this.timersSet, key, epoch, run });
  }

  private mutate(namespace: string, name: string, change: (c: CnpgCluster) => void, statusOnly = true): void {
    const cluster = this.api.get<CnpgCluster>(refOf(namespace, name));
    if (!cluster) return;
    change(cluster);
    this.api.put(cluster as unknown as StoredObject, statusOnly);
  }
}

const refOf = (namespace: string, name: string) => ({ kind: 'Cluster', namespace, name });

type SimulatedDatabase = KubeObject & {
  spec?: { cluster?: { name?: string }; owner?: string };
  status?: { applied?: boolean; observedGeneration?: number };
};
const refOfPooler = (namespace: string, name: string) => ({ kind: 'Pooler', namespace, name });
