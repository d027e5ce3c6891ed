/**
 * The machine's state as stored in `status.state`: leaf paths joined by dots ("Provisioning.Cluster").
 * The machine has no parallel states (the package lint checks), so one path is the whole state value.
 */
import { initialTransition, pathToStateValue, type StateValue, transition } from 'xstate';
import type { PostgresCluster } from '../src/operator/api/schema.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { lifecycleChart } from './chart.ts';
import type { StateMeta } from './meta.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
import { isDeletingState } from './states.ts';
import { stateMessage, stateReason } from './summary.ts';
import { leaves } from './walk.ts';

export function encodeState(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, child] = Object.entries(value)[0] ?? [];
  if (key === undefined || child === undefined) return '';
  return `${key}.${encodeState(child)}`;
}

export type Snapshot = ReturnType<typeof postgresClusterMachine.resolveState>;

/**
 * The snapshot stored in the status, or undefined when there is none or it names a state this version
 * does not have (then the machine starts afresh; the level-based pipeline finds its place in one tick).
 */
export function restoreState(stored: string | undefined): Snapshot | undefined {
  if (!stored) return undefined;
  const known = RESTORED.get(stored);
  if (known) return known;
  try {
    const snapshot = postgresClusterMachine.resolveState({ value: pathToStateValue(stored.split('.')), context: {} });
    // Only the machine's own state paths are kept, so the memo holds at most one entry per state.
    if (encodeState(snapshot.value) === stored) RESTORED.set(stored, snapshot);
    return snapshot;
  } catch {
    return undefined;
  }
}

/**
 * The machine's initial snapshot, where a cluster with no stored state starts. Made once: XState builds an
 * actor scope for every `initialTransition`, which on the first pass of each new cluster cost more than
 * that pass's tick (2 % of the operator's CPU at 300 clusters, issue 10). Shared as RESTORED's are.
 */
export function initialState(): Snapshot {
  INITIAL ??= initialTransition(postgresClusterMachine)[0];
  return INITIAL;
}
let INITIAL: Snapshot | undefined;

/**
 * Snapshots restored so far, by stored path: a pass restores one on every tick, and resolving it costs as much
 * as a short tick. Sharing is safe: a snapshot is immutable (a transition returns a new one) and the machine
 * has no context.
 */
const RESTORED = new Map<string, Snapshot>();

/** Every state a PostgresCluster can be stored in (atomic, not final), in machine order; walked once. */
const STORABLE: readonly string[] = Object.freeze(
  leaves(lifecycleChart)
    .filter((s) => s.type === 'atomic')
    .map((s) => s.path),
);
const STORABLE_SET: ReadonlySet<string> = new Set(STORABLE);
export const storableStates = (): string[] => [...STORABLE];

/** The meta of the active atomic state (compound parents declare none): what the status projects. */
export function metaOf(snapshot: Snapshot): StateMeta {
  const metas = Object.values(snapshot.getMeta()) as StateMeta[];
  const meta = metas.at(-1);
  if (!meta) throw new Error(`state ${JSON.stringify(snapshot.value)} declares no meta`);
  return meta;
}

/**
 * Why the stored state does not fit the world, or undefined when it does. The stored state is only a
 * hint: anyone who may patch `postgresclusters/status` can write any value there, so it is trusted only
 * when the world agrees with it.
 *
 * - A Deleting state needs the deletion timestamp: only deleting the object sets it, no status patch can.
 * - Only a state this version stores: not garbage, not a compound state, not the final state (its pass
 *   removes the finalizer and stores nothing).
 * - The rest of the status names the same state: every status pgfsm writes names its state a second time,
 *   in its `Reconciling` condition (the state's reason while reconciling, `State <state>` otherwise), in
 *   the same write. A status whose `state` alone was changed names another one.
 *
 * Whether a state's own gate still holds is deliberately not asked: a state whose cause has gone (a
 * failure fixed, `spec.suspend` set back to false) is exactly the stored state a legitimate pass leaves,
 * and its one-time events (`Resumed`, `ClusterReady`) are then due. Every state an untampered pass stores
 * fits, so a restart never loses its place (the path tests restart at every step to check it).
 */
export function storedStateMisfit(
  stored: string | undefined,
  cluster: Pick<PostgresCluster, 'metadata' | 'status'>,
): string | undefined {
  const reconciling = cluster.status?.conditions?.find((c) => c.type === 'Reconciling');
  if (stored === undefined) {
    // A new object has no status yet; one that has conditions but no state lost it to a hand.
    return reconciling ? 'status.state is missing from a status pgfsm wrote' : undefined;
  }
  if (isDeletingState(stored) && !cluster.metadata.deletionTimestamp) {
    return 'it names deletion, but the PostgresCluster has no deletionTimestamp';
  }
  if (!STORABLE_SET.has(stored)) return 'it is not a state pgfsm stores';
  const named =
    reconciling !== undefined &&
    ((reconciling.status === 'True' && reconciling.reason === stateReason(stored)) ||
      reconciling.message === stateMessage(stored));
  if (!named) return 'the rest of the status was written in another state (its Reconciling condition names another)';
  return undefined;
}

/**
 * The state the world implies, to restore from when the stored one does not fit: one tick from the
 * initial state, its actions dropped (the level-based pipeline finds its place, the gates theirs). The
 * pass then ticks from there as it would from a stored state, so it makes the writes and announces
 * only what a pass from that state would: no `ClusterReady`, `Resumed` or failure Warning merely because
 * a value was written by hand. Deletion runs to the final state only by its writes (the finalizer's
 * removal): then the pass starts from the initial state itself, which announces nothing on that way.
 */
export function impliedState(event: TickEvent): Snapshot {
  const initial = initialState();
  const [settled] = transition(postgresClusterMachine, initial, event);
  return settled.status === 'done' ? initial : settled;
}

/**
 * The `Reconciling` condition by which a status written in `state` names it when it has nothing more to
 * say (`State <state>`): for tools and tests that seed a stored state, so that it fits like one pgfsm wrote.
 */
export function namingCondition(state: string, lastTransitionTime: string) {
  const snapshot = restoreState(state);
  if (!snapshot) throw new Error(`${state} is not a state of the machine`);
  return {
    type: 'Reconciling',
    status: 'False' as const,
    reason: metaOf(snapshot).phase,
    message: stateMessage(state),
    lastTransitionTime,
  };
}
