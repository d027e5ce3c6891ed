/**
 * The guard catalogue: every guard of the lifecycle machine, once, with what it means in words, whether
 * it is a gate, the domain check it calls and that check itself. The machine's `setup({ guards })` is
 * built from it, and the diagram's guard table and `explain` read it, so a guard's meaning, its gate
 * flag and its implementation cannot drift apart.
 *
 * Gates are the guards every live state checks first on each tick, in catalogue order; each names the
 * state it leads to. A state that embodies a gate (Pending for the finalizer, Suspended, a failure)
 * stays there while its own gate holds.
 */
import {
  type Assessment,
  assessTick,
  backupWrites,
  clusterUpdateInSteps,
  deletionRequested,
  finalizerPresent,
  isBusy,
  isFailed,
  isReady,
  restoreWaiting,
  suspendRequested,
} from '../src/operator/domain/assessment.ts';
import { namedClass } from '../src/operator/domain/config.ts';
import { ownsAChild, policyApplied, poolersGone } from '../src/operator/domain/deletion.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { COMPONENTS, type Component, Reason } from '../src/operator/domain/vocabulary.ts';
import type { Chart } from './walk.ts';

/** `E`: the machine's tick (the cluster's by default; the database machine's catalogue passes its own). */
export interface GuardEntry<P = undefined, E = TickEvent> {
  /** One line for readers: the diagram's guard table and `explain`. */
  meaning: string;
  /** Set on a gate: the state it leads to (as a `#id` target). */
  gate?: { target: string };
  /** The domain function the guard asks, by name (checked against `holds` by the machine lint). */
  check: string;
  holds: (event: E, params: P) => boolean;
}

type ComponentParams = { component: Component };

const a = (event: TickEvent): Assessment => assessTick(event);
const allReady = (x: Assessment) => COMPONENTS.every((c) => isReady(x, c));
/** The earlier components a step needs: a step acts only when all of them are healthy. */
const earlierReady = (x: Assessment, step: Component) =>
  COMPONENTS.slice(0, COMPONENTS.indexOf(step)).every((c) => isReady(x, c));

/**
 * Reasons of a component that is only being brought up to date, not lost. An update the API server
 * refused is one too: the running cluster is as it was, and its failure state announces the refusal.
 */
const UPDATE_REASONS: ReadonlySet<string> = new Set([
  Reason.CNPGClusterUpdating,
  Reason.CNPGClusterUpdatingInSteps,
  Reason.PoolerUpdating,
  Reason.ConfigMapDrifted,
  Reason.ClusterSpecRejected,
  Reason.ManagedRolesSpecRejected,
  Reason.PoolerSpecRejected,
]);

export const GUARDS = {
  deletionRequested: {
    meaning: 'The PostgresCluster has a deletionTimestamp',
    gate: { target: '#postgresCluster.Deleting' },
    check: 'deletionRequested',
    holds: (event) => deletionRequested(event.observation),
  },
  finalizerMissing: {
    meaning:
      'Our finalizer is not (or no longer) on the PostgresCluster, and there is something for it to guard: a child ' +
      'we own, or a spec and class pgfsm can act on',
    gate: { target: '#postgresCluster.Pending' },
    check: 'finalizerPresent',
    // The finalizer guards children: with none of ours and a spec or class that cannot be acted on, nothing
    // will be created, so the failure is reported first (the class and spec gates below) without it. An
    // object stored before a CRD rule may take status writes yet refuse every metadata write, its finalizer
    // included; judging it first is what lets its status name the field.
    holds: (event) => !finalizerPresent(event.observation) && (a(event).merge.ok || ownsAChild(event.observation)),
  },
  suspendRequested: {
    meaning: '`spec.suspend` is true',
    gate: { target: '#postgresCluster.Suspended' },
    check: 'suspendRequested',
    holds: (event) => suspendRequested(event.observation),
  },
  classMissing: {
    meaning: 'The PostgresClusterClass named by `spec.class` was not observed',
    gate: { target: '#postgresCluster.Failed.ClassMissing' },
    check: 'clusterClass',
    // A spec that names no class (none, or not a string) is invalid, not missing its class: InvalidSpec says which field.
    holds: (event) => !event.observation.clusterClass && namedClass(event.observation.cluster) !== undefined,
  },
  specInvalid: {
    meaning: 'Merging the class defaults with the spec failed validation',
    gate: { target: '#postgresCluster.Failed.InvalidSpec' },
    check: 'merge',
    holds: (event) => !a(event).merge.ok,
  },
  componentReady: {
    meaning: "The component's health check says Ready",
    check: 'isReady',
    holds: (event, params: ComponentParams) => isReady(a(event), params.component),
  },
  componentFailed: {
    meaning: "Every earlier component is Ready and this component's check says Failed (a failure, not a block)",
    check: 'isFailed',
    holds: (event, params: ComponentParams) =>
      earlierReady(a(event), params.component) && isFailed(a(event), params.component),
  },
  clusterUpdateInSteps: {
    meaning:
      'The CNPG Cluster must change its image and its PostgreSQL parameters, which CNPG refuses in one update ' +
      'under primaryUpdateMethod switchover: the parameters go first, the image once CNPG is healthy again',
    check: 'clusterUpdateInSteps',
    holds: (event) => clusterUpdateInSteps(a(event)),
  },
  databaseRolesBehind: {
    meaning:
      'Every component is Ready, and only roles PostgresDatabases ask for differ from what CNPG has: pushed ' +
      'without leaving Ready (a database being added is no change of the cluster)',
    check: 'databaseRolesPush',
    holds: (event) => allReady(a(event)) && a(event).databaseRolesPush.length > 0,
  },
  backupsBehind: {
    meaning:
      'Every component is Ready, and a backup object is not as wanted (the ScheduledBackup, the Backup a new ' +
      'pgfsm.io/backup-now token asks for, a drifted ObjectStore, or the ScheduledBackup and ObjectStore of a ' +
      'cluster whose backups were switched off, to delete): written without leaving Ready',
    check: 'backupWrites',
    holds: (event) => allReady(a(event)) && backupWrites(a(event)).length > 0,
  },
  restoreReady: {
    meaning:
      'No restore is to run (none asked for, or the CNPG Cluster exists), its source resolves and its read-only ' +
      'ObjectStore is as wanted, or it is refused (the Cluster step fails it): nothing more to wait for',
    check: 'restoreWaiting',
    holds: (event) => !restoreWaiting(a(event)),
  },
  allReady: {
    meaning: 'Every component is Ready',
    check: 'allReady',
    holds: (event) => allReady(a(event)),
  },
  cnpgBusy: {
    meaning:
      'CNPG is busy (switchover, failover, restart, upgrade, …) with a CNPG Cluster that is as pgfsm wants it, ' +
      'while the rest is Ready (a change pgfsm still has to roll out is provisioning, not degradation)',
    check: 'isBusy',
    holds: (event) => {
      const x = a(event);
      return isBusy(x, 'cluster') && COMPONENTS.every((c) => c === 'cluster' || isReady(x, c));
    },
  },
  routineChange: {
    meaning:
      'The spec has a generation the status has not observed, or every component not Ready is only being updated ' +
      'or had its update refused (otherwise leaving Ready warns `NotReady`)',
    check: 'isReady',
    // Leaving Ready is routine when the user changed the spec or a class change or a repair is rolling
    // out; anything else (an object gone, replicas no longer ready) is a loss.
    holds: (event) => {
      const { metadata, status } = event.observation.cluster;
      const observed = status?.observedGeneration;
      if (observed !== undefined && metadata.generation !== observed) return true;
      const x = a(event);
      return COMPONENTS.every((c) => isReady(x, c) || UPDATE_REASONS.has(x.health[c]?.reason ?? ''));
    },
  },
  // The two deletion steps lead on to the next cleanup write, so each asks for the deletion timestamp
  // itself: the world decides what is destroyed, never a stored Deleting state alone.
  poolersGone: {
    meaning: 'Deletion is requested and neither the rw nor the ro Pooler exists any more',
    check: 'poolersGone',
    holds: (event) => deletionRequested(event.observation) && poolersGone(event.observation),
  },
  policyApplied: {
    meaning:
      'Deletion is requested and no Cluster, Secret, ConfigMap or backup object (ObjectStore, ScheduledBackup, ' +
      'Backup) still names this PostgresCluster as its owner',
    check: 'policyApplied',
    holds: (event) => deletionRequested(event.observation) && policyApplied(event.observation),
  },
} satisfies Record<string, GuardEntry<never>>;

type Catalogue = typeof GUARDS;
export type GuardName = keyof Catalogue;
type ParamsOf<K extends GuardName> = Parameters<Catalogue[K]['holds']>[1];
/** The guards that carry a `gate`. */
export type Gate = { [K in GuardName]: Catalogue[K] extends { gate: object } ? K : never }[GuardName];

/** The catalogue in the shape `setup({ guards })` takes; XState passes `{ context, event }` and params. */
export const guardImplementations = Object.fromEntries(
  Object.entries(GUARDS).map(([name, entry]) => [
    name,
    ({ event }: { event: TickEvent }, params: unknown) => (entry.holds as GuardEntry<unknown>['holds'])(event, params),
  ]),
) as { [K in GuardName]: (args: { event: TickEvent }, params: ParamsOf<K>) => boolean };

/** A catalogue's gates, in the order every live state checks them. */
export const gatesOf = <G extends string>(catalogue: object) =>
  Object.entries(catalogue as Record<string, { gate?: { target: string } }>).flatMap(([guard, entry]) =>
    entry.gate ? [{ guard: guard as G, target: entry.gate.target }] : [],
  );

/** The gates in the order every live state checks them. */
export const GATES = gatesOf<Gate>(GUARDS);

/**
 * The gate transitions a live state checks first: each gate to its state, except the state's own gate (`own`),
 * which keeps it there (with `ownActions` when staying does something, as Pending adds the finalizer).
 */
export const gateTransitions =
  <G extends string>(gates: ReadonlyArray<{ guard: G; target: string }>) =>
  (own?: G, ownActions?: 'addFinalizer') =>
    gates.map(({ guard, target }) =>
      guard === own ? { guard, ...(ownActions ? { actions: ownActions } : {}) } : { guard, target },
    );

/** What the readers of a guard catalogue ask of it: the diagram's guard table, its picture, `explain`. */
export interface GuardReader {
  /** Whether the guard is a gate (checked first by every live state). */
  isGate: (name: string) => boolean;
  /** Its meaning in words; undefined for a name the catalogue does not hold. */
  meaningOf: (name: string) => string | undefined;
  /** Guard names in first-use order; throws when the catalogue and the machine disagree. */
  usedGuards: (chart: Chart) => string[];
}

/** A catalogue's readers, and its guards evaluated on a tick (`E`) as the machine would. */
export interface GuardCatalogue<E> extends GuardReader {
  /** Evaluates a guard of the catalogue on a tick; throws on an unknown name. */
  guardHolds: (name: string, params: unknown, event: E) => boolean;
}

/**
 * The readers over one machine's catalogue (this file's for the cluster, database-guards.ts's for the
 * database): `file` names it in the messages that ask for it to be brought up to date.
 */
export function catalogueOf<E>(
  guards: Readonly<Record<string, GuardEntry<never, E>>>,
  file: string,
): GuardCatalogue<E> {
  const entryOf = (name: string): GuardEntry<unknown, E> | undefined =>
    Object.hasOwn(guards, name) ? (guards[name] as GuardEntry<unknown, E>) : undefined;
  return {
    isGate: (name) => entryOf(name)?.gate !== undefined,
    meaningOf: (name) => entryOf(name)?.meaning,
    guardHolds: (name, params, event) => {
      const entry = entryOf(name);
      if (!entry) throw new Error(`guard ${name} is not in the catalogue (${file})`);
      return entry.holds(event, params);
    },
    usedGuards: (chart) => {
      const used = [...new Set(chart.states.flatMap((s) => s.transitions.flatMap((t) => t.guard?.names ?? [])))];
      const undescribed = used.filter((name) => !entryOf(name));
      const unused = Object.keys(guards).filter((name) => !used.includes(name));
      if (undescribed.length || unused.length) {
        throw new Error(`${file} is out of date: describe [${undescribed.join(', ')}], remove [${unused.join(', ')}]`);
      }
      return used;
    },
  };
}

/** The cluster machine's catalogue, read through `catalogueOf`. */
export const clusterGuards: GuardCatalogue<TickEvent> = catalogueOf(GUARDS, 'machines/guards.ts');

export const { isGate, meaningOf, guardHolds, usedGuards } = clusterGuards;
