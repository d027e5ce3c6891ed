import type { OwnerReference, PostgresCluster } from '../api/schema.ts';
import { objectStoreName, scheduledBackupName } from '../domain/backup/names.ts';
import { cnpgDrift, SPEC_WRITTEN_AT_ANNOTATION } from '../domain/components/cluster.ts';
import { configMapDrift } from '../domain/components/configmap.ts';
import { poolerDrift } from '../domain/components/pooler.ts';
import { type Effect, joinsLast, type KubeEvent, type Write, warning } from '../domain/effects.ts';
import { holds } from '../domain/holds.ts';
import {
  type CnpgCluster,
  type ConfigMap,
  type KubeObject,
  type ObjectRef,
  type Pooler,
  refOf,
} from '../domain/objects.ts';
import { EventReason, FINALIZER } from '../domain/vocabulary.ts';
import { classOf, type ErrorClass } from './errors.ts';

export { holds };

import type { AppliedChildPort, ChildPort, Ports } from './ports.ts';

/** The port of a backup kind (issue 36), which an adapter may not have (ports.ts). */
function backupPort(ports: Ports, kind: string): AppliedChildPort<KubeObject> | undefined {
  const port =
    kind === 'ObjectStore'
      ? ports.backupObjects?.objectStores
      : kind === 'ScheduledBackup'
        ? ports.backupObjects?.scheduledBackups
        : kind === 'Backup'
          ? ports.backupObjects?.backups
          : undefined;
  return port as AppliedChildPort<KubeObject> | undefined;
}

const BACKUP_KINDS: ReadonlySet<string> = new Set(['ObjectStore', 'ScheduledBackup', 'Backup']);

function childPort(ports: Ports, ref: Pick<ObjectRef, 'kind'>): ChildPort<KubeObject> {
  if (BACKUP_KINDS.has(ref.kind)) {
    const port = backupPort(ports, ref.kind);
    if (!port) throw new Error(`no port for kind ${ref.kind}: these ports hold no backup objects`);
    return port;
  }
  switch (ref.kind) {
    case 'Secret':
      return ports.secrets;
    case 'Cluster':
      return ports.cnpgClusters;
    case 'Pooler':
      return ports.poolers;
    case 'ConfigMap':
      return ports.configMaps;
    default:
      throw new Error(`no port for kind ${ref.kind}`);
  }
}

/**
 * The CNPG Cluster as written, with when (SPEC_WRITTEN_AT_ANNOTATION): the shell's clock, since the core has
 * none, and the only fact by which a later pass can tell CNPG's status may still describe the spec before it.
 */
const stamped = (object: CnpgCluster, now: number): CnpgCluster => ({
  ...object,
  metadata: {
    ...object.metadata,
    annotations: { ...object.metadata.annotations, [SPEC_WRITTEN_AT_ANNOTATION]: String(now) },
  },
});

/** Performs one write; a finalizer write answers the resourceVersion the cluster is at after it. */
async function write(ports: Ports, cluster: PostgresCluster, effect: Write): Promise<unknown> {
  switch (effect.type) {
    case 'addFinalizer':
      return ports.clusters.addFinalizer(cluster, FINALIZER);
    case 'removeFinalizer':
      return ports.clusters.removeFinalizer(cluster, FINALIZER);
    case 'createSecret':
      return ports.secrets.create(effect.secret);
    case 'apply':
      // The backup objects go by kind: they are planned by the cluster step and by Ready (domain/backup/judge.ts).
      if (BACKUP_KINDS.has(effect.object.kind)) {
        return (childPort(ports, effect.object) as AppliedChildPort<KubeObject>).apply(effect.object);
      }
      switch (effect.component) {
        case 'cluster':
          return ports.cnpgClusters.apply(stamped(effect.object as CnpgCluster, ports.clock.now()), 'cluster');
        case 'managedRoles':
          return ports.cnpgClusters.apply(effect.object as CnpgCluster, effect.component);
        case 'pooler':
          return ports.poolers.apply(effect.object as Pooler);
        case 'configMap':
          return ports.configMaps.apply(effect.object as ConfigMap);
        default:
          throw new Error(`cannot apply component ${effect.component}`);
      }
    case 'delete':
      return childPort(ports, effect.ref).delete(effect.ref);
    case 'setOwner':
      return childPort(ports, effect.ref).setOwner(effect.ref, effect.owner);
    case 'releaseOwner':
      return childPort(ports, effect.ref).releaseOwner(effect.ref, effect.ownerUid);
  }
}

/**
 * Error classes in which the API server answered, and said no: the write did not happen. After any other
 * (a timeout, a connection cut, a 5xx) the request may have been carried out and only its answer lost.
 */
const ANSWERED: ReadonlySet<ErrorClass> = new Set<ErrorClass>([
  'conflict',
  'rejected',
  'forbidden',
  'notFound',
  'namespaceTerminating',
  'tooManyRequests',
]);

const ownedBy = (object: KubeObject, owner: OwnerReference) =>
  (object.metadata.ownerReferences ?? []).some((o) => holds(o, owner));

/**
 * After a write whose answer was lost: whether the object read back is what the write meant to leave —
 * the created Secret owned by this cluster, every field applied in place, the owner reference set. Only
 * then is the write counted as done; otherwise (or when the read fails too) it stays a failure.
 */
const landed = (cachedOrDirect: Ports, effect: Write) => landedAfterAll(() => readBack(cachedOrDirect, effect));

/**
 * Whether a write whose answer was lost landed, as `readBack` says (a read that throws says 'unknown'); a
 * PostgresDatabase's pass reads its writes back through this too (core/database/execute.ts).
 */
export async function landedAfterAll(readBack: () => Promise<boolean | 'unknown'>): Promise<boolean> {
  // A read that fails (each port read is already tried a few times) is tried again: a write that landed but
  // is counted as failed loses its event for good, since the next pass finds the object there.
  for (let attempt = 1; ; attempt++) {
    const answer = await readBack().catch(() => 'unknown' as const);
    if (answer !== 'unknown' || attempt === LANDED_READS) return answer === true;
  }
}

/** How many times `landed` asks before it gives up and counts the write as failed. */
const LANDED_READS = 3;

async function readBack(cachedOrDirect: Ports, effect: Write): Promise<boolean | 'unknown'> {
  // A cache may not hold the write yet: the read must ask the API.
  const ports = cachedOrDirect.direct ?? cachedOrDirect;
  try {
    switch (effect.type) {
      case 'createSecret': {
        const secret = await ports.secrets.get(effect.secret.ref);
        return secret !== undefined && ownedBy(secret, effect.secret.owner);
      }
      case 'apply': {
        const ref = refOf(effect.object);
        const read = await childPort(ports, ref).get(ref);
        return holds(read, effect.object) && driftLeft(effect, read).length === 0;
      }
      case 'setOwner': {
        const object = await childPort(ports, effect.ref).get(effect.ref);
        return object !== undefined && ownedBy(object, effect.owner);
      }
      default:
        return false;
    }
  } catch {
    return 'unknown';
  }
}

/**
 * What the next pass would still judge drifted on an object read back after an apply: a field or key the apply
 * was to remove (a parameter no longer set, the poolers' endpoints once the pooler is off) is still there
 * when the apply did not land, which `holds` cannot see, since it lets others add what they like.
 */
function driftLeft(effect: Extract<Write, { type: 'apply' }>, read: KubeObject | undefined): string[] {
  if (!read) return [];
  switch (effect.component) {
    case 'cluster':
      return cnpgDrift(read as CnpgCluster, effect.object as CnpgCluster);
    case 'pooler':
      return poolerDrift(read as Pooler, effect.object as Pooler);
    case 'configMap':
      return configMapDrift(read as ConfigMap, effect.object as ConfigMap);
    default:
      return [];
  }
}

/** An error that leaves open whether its write happened: the API server did not answer it. */
export const answerMayBeLost = (error: unknown) => !ANSWERED.has(classOf(error));

/** A write that failed in a way that leaves open whether it happened, and that a read can settle. */
const mayHaveLanded = (effect: Write, error: unknown) =>
  (effect.type === 'createSecret' || effect.type === 'apply' || effect.type === 'setOwner') && answerMayBeLost(error);

/** What the shell knows of the world besides the cluster itself, to judge a destructive write. */
export interface WorldFacts {
  /** The observed spec switches the connection pooler off (merged with the class, and valid). */
  poolerSwitchedOff: boolean;
  /** The observed spec and class give the cluster no backups (merged, and valid): `backup.enabled: false`, no policy. */
  backupsSwitchedOff: boolean;
}

/**
 * Why a write must not run now, or undefined. The last line of defence against a machine that was
 * misled (a `status.state` written by hand, a bug): the world decides what is destroyed, not the stored
 * state. Deleting a child, releasing our owner reference from it and removing the finalizer are cleanup,
 * and cleanup happens only once the PostgresCluster carries a deletion timestamp — which only a delete
 * of the object sets, never a status patch.
 *
 * The one delete the pipeline makes on a live cluster is a Pooler's, when the observed spec switches the
 * pooler off: that removes a stateless proxy, not the database, and must keep working. It is scoped by
 * the world rather than by which action planned it, so a Deleting state entered by mistake cannot use
 * it: a Pooler is deleted without a deletion timestamp only while the spec says the pooler is off. The same
 * holds for the ScheduledBackup and the ObjectStore of the cluster's own name while its spec and class give it no
 * backups (issue 36): they hold no backup data (the archive is in the bucket, the Backups are kept), and a
 * ScheduledBackup left behind asks every day for a backup that can only fail.
 */
export function destructionRefused(effect: Write, cluster: PostgresCluster, world: WorldFacts): string | undefined {
  if (cluster.metadata.deletionTimestamp) return undefined;
  const destructive =
    effect.type === 'removeFinalizer' ||
    effect.type === 'releaseOwner' ||
    (effect.type === 'delete' &&
      !(effect.ref.kind === 'Pooler' && world.poolerSwitchedOff) &&
      !(world.backupsSwitchedOff && retiredBackupObject(effect.ref, cluster)));
  if (!destructive) return undefined;
  const target = 'ref' in effect ? ` ${effect.ref.kind} ${effect.ref.name}` : '';
  return `${effect.type}${target} refused: the PostgresCluster has no deletionTimestamp, so nothing of it is destroyed or released`;
}

/** The cluster's own ScheduledBackup or ObjectStore, by name: never a Backup, nor a restore's source store. */
const retiredBackupObject = (ref: ObjectRef, cluster: PostgresCluster) =>
  (ref.kind === 'ScheduledBackup' && ref.name === scheduledBackupName(cluster.metadata.name)) ||
  (ref.kind === 'ObjectStore' && ref.name === objectStoreName(cluster.metadata.name));

/** An event to emit; `announcement` marks a transition's own event rather than a write's report. */
export interface PendingEvent {
  event: KubeEvent;
  announcement: boolean;
}

export interface Execution {
  /** Events of the writes that succeeded and the transition announcements, in order. */
  events: PendingEvent[];
  /** The first write that failed; nothing after it ran. */
  failure?: { effect: Write; error: unknown };
  /**
   * The cluster as the pass read it, at the resourceVersion its own finalizer writes led to: what the
   * status write must be conditional on (ports.ts), since those writes moved the version on.
   */
  cluster: PostgresCluster;
  /** A destructive write refused without a deletion timestamp; nothing after it ran (see `destructionRefused`). */
  refused?: { effect: Write; why: string };
  writes: number;
  /**
   * Each write made, in order, with what the API server answered (core/follow.ts reads them): undefined
   * for a write whose answer was lost and that a read showed had landed, since that read is not the answer.
   */
  answers: WriteAnswer[];
}

export interface WriteAnswer {
  effect: Write;
  answer: unknown;
}

const announcementsIn = (effects: readonly Effect[]): PendingEvent[] =>
  effects.flatMap((e) => (e.type === 'event' ? [{ event: e.event, announcement: true }] : []));

export async function executeEffects(
  ports: Ports,
  cluster: PostgresCluster,
  effects: Effect[],
  world: WorldFacts,
): Promise<Execution> {
  const events: PendingEvent[] = [];
  const answers: WriteAnswer[] = [];
  let writes = 0;
  let current = cluster;
  for (const [index, effect] of effects.entries()) {
    if (effect.type === 'event') {
      events.push({ event: effect.event, announcement: true });
      continue;
    }
    const why = destructionRefused(effect, cluster, world);
    if (why) {
      // Never silent: a Warning on the object (and the outcome carries it for the driver's log). The
      // writes after it are not made either: they were planned as one sequence with this one.
      events.push({ event: warning(EventReason.DestructiveWriteRefused, 'Refuse', why), announcement: false });
      return { events, refused: { effect, why }, writes, answers, cluster: current };
    }
    try {
      const answer = await write(ports, current, effect);
      if (typeof answer === 'string')
        current = { ...current, metadata: { ...current.metadata, resourceVersion: answer } };
      answers.push({ effect, answer });
      writes++;
    } catch (error) {
      // A lost answer is not a failure when the write evidently happened: reported as done, with its own
      // event, rather than as a failure whose Warning says the object was not created.
      if (!(mayHaveLanded(effect, error) && (await landed(ports, effect)))) {
        // The writes after it are not made, but the pass still stores the state it reached: the announcements
        // of that transition stand (entering Ready, say, before a roles push that failed), for announce() to
        // judge as it judges any (core/announcements.ts).
        const after = announcementsIn(effects.slice(index + 1));
        return { events: [...events, ...after], failure: { effect, error }, writes, answers, cluster: current };
      }
      answers.push({ effect, answer: undefined });
      writes++;
    }
    if (effect.event) {
      // Writes planned together are one report when each of them was made (domain/effects.ts, joinReports).
      const last = events.at(-1);
      if (effect.joins && joinsLast(effect, last && !last.announcement ? last.event : undefined)) {
        events[events.length - 1] = { event: effect.joins.event, announcement: false };
      } else {
        events.push({ event: effect.event, announcement: false });
      }
    }
  }
  return { events, writes, answers, cluster: current };
}
