/**
 * Class deletion protection: the finalizer `pgfsm.io/class-in-use` on each PostgresClusterClass some
 * PostgresCluster uses (domain/class-protection.ts decides; this module reads the caches and writes). A class's
 * pass runs in the controller's queue under a key of its own (`PostgresClusterClass:<name>`), woken by the
 * class's own changes and by a cluster naming it appearing, going or starting its deletion.
 *
 * Exactly once under watch lag:
 * - decided on the caches, each finalizer write conditional on the resourceVersion of the class decided on (a
 *   merge patch of the list, as the cluster's finalizer is written): a decision on a stale class conflicts and
 *   runs again, it never drops someone else's finalizer;
 * - the class as this process's own last finalizer write left it is read until the watch delivers that write
 *   (own-writes.ts), so the pass after an add does not add again;
 * - before removing, the clusters naming the class are listed from the API itself (as pvc-protection asks the
 *   API server before it lets a claim go): one the clusters' watch has not delivered yet keeps the finalizer,
 *   and its watch event wakes the class again.
 *
 * While a class in use is being deleted, each cluster using it gets one Warning Event saying so (once per
 * cluster and per deletion of the class, in this process's memory: a restart may say it once more). Its
 * conditions do not change: the class still exists and the cluster keeps working with it.
 */
import type { PostgresCluster, PostgresClusterClass } from '../api/schema.ts';
import type { Ports } from '../core/ports.ts';
import { type ReconcileOutcome, requeueAfterError } from '../core/reconcile.ts';
import {
  CLASS_DELETION_EVENT_REASON,
  CLASS_FINALIZER,
  type ClassUser,
  classDeletionMessage,
  classProtection,
  classUsers,
} from '../domain/class-protection.ts';
import { namedClass } from '../domain/config.ts';
import type { KubeEvent } from '../domain/effects.ts';
import { defaultSettings, type Settings } from '../domain/observation.ts';
import { isRecord } from '../domain/records.ts';
import type { Logger } from './logger.ts';
import { OwnWrites } from './own-writes.ts';
import type { SourceEvent, WatchSources } from './sources.ts';

/** The queue key of a class: apart from the clusters' `namespace/name` and the databases' keys. */
export const CLASS_KEY_PREFIX = 'PostgresClusterClass:';
export const classKeyString = (name: string) => `${CLASS_KEY_PREFIX}${name}`;
export const isClassKey = (key: string) => key.startsWith(CLASS_KEY_PREFIX);

const deleting = (object: unknown) =>
  isRecord(object) && isRecord(object.metadata) && Boolean(object.metadata.deletionTimestamp);
const nameOf = (object: unknown) =>
  isRecord(object) && isRecord(object.metadata) && typeof object.metadata.name === 'string'
    ? object.metadata.name
    : undefined;

/**
 * The classes whose protection one watch event may change: the class itself (its finalizers, its deletion),
 * and the class a PostgresCluster names when the cluster appears, goes, or starts its deletion. A cluster's
 * status and spec changes wake nothing (`spec.class` is immutable). Never throws, whatever the caches hold.
 */
export function classesFor(event: SourceEvent): string[] {
  const { object, old } = event;
  if (object.kind === 'PostgresClusterClass') {
    const name = nameOf(object);
    return name && event.type !== 'delete' ? [name] : [];
  }
  if (object.kind !== 'PostgresCluster') return [];
  const named = namedClass(object);
  if (event.type !== 'update' || !old) return named ? [named] : [];
  const before = namedClass(old);
  if (before === named && deleting(old) === deleting(object)) return [];
  return [...new Set([before, named])].filter((n): n is string => n !== undefined);
}

export interface ClassProtectionOptions {
  sources: Pick<WatchSources, 'classes' | 'clusters'>;
  /** The class port (its finalizer writes fenced, as every write) and the event sink. */
  ports: Pick<Ports, 'classes' | 'events'>;
  logger?: Logger;
  /** The requeue after an error follows the clusters' rules (core/outcome.ts), with their delay. */
  settings?: Pick<Settings, 'requeueDelayMs'>;
}

/** One operator process's class protection: what the controller runs for a class key. */
export class ClassProtection {
  private readonly own: OwnWrites<PostgresClusterClass>;
  /** By class uid (one deletion of one class): the uids of the clusters told of it. */
  private readonly told = new Map<string, Set<string>>();

  constructor(private readonly options: ClassProtectionOptions) {
    this.own = new OwnWrites<PostgresClusterClass>(options.sources.classes);
  }

  /** One pass for the class `name`. */
  async pass(name: string): Promise<ReconcileOutcome> {
    const key = { namespace: '', name };
    const { sources, ports } = this.options;
    const clusterClass = this.own.get('', name);
    const outcome = (fields: Partial<ReconcileOutcome>): ReconcileOutcome => ({
      key,
      found: clusterClass !== undefined,
      requeue: { kind: 'none' },
      statusWritten: false,
      writes: 0,
      events: [],
      ...fields,
    });
    if (!clusterClass) {
      for (const uid of this.told.keys())
        if (!sources.classes.list().some((c) => c.metadata.uid === uid)) this.told.delete(uid);
      return outcome({});
    }
    // Who uses it matters only while it is being deleted (they are told); otherwise only whether anyone does.
    const users = classUsers(name, sources.clusters.list(), clusterClass.metadata.deletionTimestamp ? undefined : 1);
    const decision = classProtection(clusterClass, users);
    const uid = clusterClass.metadata.uid ?? name;
    if (!decision.waiting) this.told.delete(uid);
    let writes = 0;
    const events: KubeEvent[] = [];
    try {
      if (decision.action === 'add') {
        this.written(clusterClass, await ports.classes.addFinalizer(clusterClass, CLASS_FINALIZER), (f) => [
          ...f,
          CLASS_FINALIZER,
        ]);
        writes++;
      } else if (decision.action === 'remove') {
        // The cache says nobody uses it; the API says for sure.
        const live = classUsers(name, await ports.classes.usersOf(name));
        if (live.length > 0) {
          this.options.logger?.debug(
            { class: name, users: live.length },
            'class still in use by clusters the cache does not show yet: keeping its finalizer',
          );
        } else {
          this.written(clusterClass, await ports.classes.removeFinalizer(clusterClass, CLASS_FINALIZER), (f) =>
            f.filter((x) => x !== CLASS_FINALIZER),
          );
          writes++;
        }
      }
      if (decision.waiting) events.push(...(await this.tell(clusterClass, users)));
      return outcome({ writes, events });
    } catch (error) {
      return outcome({
        writes,
        events,
        error,
        requeue: requeueAfterError(error, this.options.settings ?? defaultSettings),
      });
    }
  }

  /** A finalizer write answered with its version: the class at that version, kept until the watch delivers it. */
  private written(clusterClass: PostgresClusterClass, version: string | undefined, edit: (f: string[]) => string[]) {
    if (version === undefined) return;
    const { metadata } = clusterClass;
    const finalizers = edit(metadata.finalizers ?? []);
    // The last finalizer of a class being deleted: the API server deletes it (its watch may say so first).
    if (metadata.deletionTimestamp && finalizers.length === 0) this.own.deleted('', metadata.name);
    else this.own.written({ ...clusterClass, metadata: { ...metadata, finalizers, resourceVersion: version } });
  }

  /** The Warning to each user of a class being deleted not told yet; what was sent. */
  private async tell(clusterClass: PostgresClusterClass, users: readonly ClassUser[]): Promise<KubeEvent[]> {
    const { sources, ports, logger } = this.options;
    const name = clusterClass.metadata.name;
    const uid = clusterClass.metadata.uid ?? name;
    let told = this.told.get(uid);
    if (!told) {
      told = new Set();
      this.told.set(uid, told);
      logger?.warn(
        { class: name, users: users.map((u) => `${u.namespace}/${u.name}`) },
        'PostgresClusterClass is being deleted while in use: it stays until no PostgresCluster uses it',
      );
    }
    const sent: KubeEvent[] = [];
    for (const user of users) {
      const id = user.uid ?? `${user.namespace}/${user.name}`;
      if (told.has(id)) continue;
      const cluster: PostgresCluster | undefined = sources.clusters.get(user.namespace, user.name);
      if (!cluster) continue;
      const event: KubeEvent = {
        type: 'Warning',
        reason: CLASS_DELETION_EVENT_REASON,
        action: 'WaitForClassUsers',
        message: classDeletionMessage(name, users, user.namespace),
      };
      await ports.events.emit(
        {
          apiVersion: cluster.apiVersion,
          kind: cluster.kind,
          metadata: { ...cluster.metadata, namespace: user.namespace },
        },
        event,
      );
      told.add(id);
      sent.push(event);
    }
    return sent;
  }
}
