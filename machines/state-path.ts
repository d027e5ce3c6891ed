/**
 * The cluster machine's state as stored in `status.state`, through the one codec both machines use
 * (state-codec.ts).
 *
 * Why the stored state is trusted only when the world agrees (`storedStateMisfit`): anyone who may patch
 * `postgresclusters/status` can write any value there.
 * - A Deleting state needs the deletion timestamp: only deleting the object sets it, no status patch can.
 * - Only a state this version stores: not garbage, not a compound state, not the final state (its pass
 *   removes the finalizer and stores nothing).
 * - The rest of the status names the same state: every status pgfsm writes names its state a second time,
 *   in its `Reconciling` condition (the state's reason while reconciling, `State <state>` otherwise), in
 *   the same write. A status whose `state` alone was changed names another one.
 *
 * Whether a state's own gate still holds is deliberately not asked: a state whose cause has gone (a failure
 * fixed, `spec.suspend` set back to false) is exactly the stored state a legitimate pass leaves, and its
 * one-time events (`Resumed`, `Ready`) are then due. Every state an untampered pass stores fits, so a
 * restart never loses its place (the path tests restart at every step to check it).
 *
 * When it does not fit, the pass restores `impliedState`: one tick from the initial state, its actions
 * dropped (the level-based pipeline finds its place, the gates theirs), and announces only what a pass from
 * there would: no `Ready`, `Resumed` or failure Warning merely because a value was written by hand.
 * Deletion runs to the final state only by its writes, so then the pass starts from the initial state itself.
 */
import type { StateMeta } from './meta.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
import { encodeState, stateCodec } from './state-codec.ts';
import { isDeletingState } from './states.ts';

export { encodeState };

const codec = stateCodec(postgresClusterMachine, { kind: 'PostgresCluster', isDeleting: isDeletingState });

export type Snapshot = ReturnType<typeof postgresClusterMachine.resolveState>;

export const { restoreState, initialState, impliedState, namingCondition, storableStates } = codec;

interface StoredCluster {
  metadata: { deletionTimestamp?: string; generation?: number };
  spec?: { suspend?: unknown };
  status?: Parameters<typeof codec.storedStateMisfit>[1]['status'] & { observedGeneration?: number };
}

/**
 * Why the stored state does not fit the world (state-codec.ts's rules), plus one of the cluster's own:
 * `Suspended` needs evidence that the spec suspended the cluster. Its exit announces `Resumed`, and a status
 * patch can write the state and the condition naming it alike, so those two are no evidence. The status
 * also says which generation of the spec it was written for (`observedGeneration`, stamped by every pass):
 * a pass stores `Suspended` only from a spec with `suspend: true`, so a stored `Suspended` whose generation is
 * the spec's current one while that spec does not suspend was never written by a pass. A legitimate resume
 * always changes the spec, so its generation is newer than the status's. (A forger who also lowers
 * observedGeneration is not caught: nothing in the status can prove what an older spec said.)
 */
export function storedStateMisfit(stored: string | undefined, object: StoredCluster): string | undefined {
  const misfit = codec.storedStateMisfit(stored, object);
  if (misfit || stored !== 'Suspended' || object.spec?.suspend === true) return misfit;
  const written = object.status?.observedGeneration;
  const current = object.metadata.generation;
  if (written === undefined || current === undefined || written >= current) {
    return `it says the cluster is suspended, but spec.suspend is not true in generation ${current ?? '?'}, the one the status was written for`;
  }
  return undefined;
}

/** The meta of the active atomic state (compound parents declare none): what the status projects. */
export const metaOf = (snapshot: Snapshot) => codec.metaOf(snapshot) as StateMeta;
