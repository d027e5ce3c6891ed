/**
 * How a machine's state is stored in a resource's `status.state`, and trusted again: the one codec both
 * machines use (state-path.ts binds it to the cluster machine, database-state-path.ts to the database machine).
 * A state is stored as its leaf path joined by dots ("Provisioning.Cluster"); no machine has parallel states
 * (the package lint checks), so one path is the whole state value.
 */
import { type AnyStateMachine, initialTransition, pathToStateValue, type StateValue, transition } from 'xstate';
import type { StateMeta } from './meta.ts';
import { stateMessage, stateReason } from './summary.ts';
import { leaves, walk } from './walk.ts';

export function encodeState(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, child] = Object.entries(value)[0] ?? [];
  if (key === undefined || child === undefined) return '';
  return `${key}.${encodeState(child)}`;
}

interface Stored {
  metadata: { deletionTimestamp?: string };
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
}

export interface CodecOptions {
  /** The resource's kind, as messages name it. */
  kind: string;
  /** Whether a stored path names deletion (which needs the deletion timestamp). */
  isDeleting: (path: string) => boolean;
}

export function stateCodec<M extends AnyStateMachine>(machine: M, options: CodecOptions) {
  type Snapshot = ReturnType<M['resolveState']>;
  /** Snapshots restored so far, by stored path: immutable, and the machines have no context, so shared. */
  const restored = new Map<string, Snapshot>();
  let initial: Snapshot | undefined;
  const storable: readonly string[] = Object.freeze(
    leaves(walk(machine))
      .filter((s) => s.type === 'atomic')
      .map((s) => s.path),
  );
  const storableSet: ReadonlySet<string> = new Set(storable);

  /** The stored snapshot, or undefined when there is none or it names a state this version does not have. */
  function restoreState(stored: string | undefined): Snapshot | undefined {
    if (!stored) return undefined;
    const known = restored.get(stored);
    if (known) return known;
    try {
      const snapshot = machine.resolveState({ value: pathToStateValue(stored.split('.')), context: {} }) as Snapshot;
      if (encodeState(snapshot.value) === stored) restored.set(stored, snapshot);
      return snapshot;
    } catch {
      return undefined;
    }
  }

  /** The initial snapshot, made once: XState builds an actor scope for every `initialTransition`. */
  function initialState(): Snapshot {
    initial ??= (initialTransition as (m: AnyStateMachine) => [unknown, unknown])(machine)[0] as Snapshot;
    return initial;
  }

  /** The meta of the active atomic state (compound parents declare none): what the status projects. */
  function metaOf(snapshot: Snapshot): StateMeta<string> {
    const metas = Object.values(snapshot.getMeta()) as StateMeta<string>[];
    const meta = metas.at(-1);
    if (!meta) throw new Error(`state ${JSON.stringify(snapshot.value)} declares no meta`);
    return meta;
  }

  /**
   * Why the stored state does not fit the world, or undefined when it does (state-path.ts says why each rule
   * holds): deletion needs the deletion timestamp, only states this version stores, and the rest of the status
   * names the same state in its `Reconciling` condition.
   */
  function storedStateMisfit(stored: string | undefined, object: Stored): string | undefined {
    const reconciling = object.status?.conditions?.find((c) => c.type === 'Reconciling');
    if (stored === undefined) {
      return reconciling ? 'status.state is missing from a status pgfsm wrote' : undefined;
    }
    if (options.isDeleting(stored) && !object.metadata.deletionTimestamp) {
      return `it names deletion, but the ${options.kind} has no deletionTimestamp`;
    }
    if (!storableSet.has(stored)) return 'it is not a state pgfsm stores';
    const named =
      reconciling !== undefined &&
      ((reconciling.status === 'True' && reconciling.reason === stateReason(stored)) ||
        reconciling.message === stateMessage(stored));
    if (!named) return 'the rest of the status was written in another state (its Reconciling condition names another)';
    return undefined;
  }

  /** The state the world implies: one tick from the initial state, its actions dropped. */
  function impliedState(event: Parameters<M['transition']>[1]): Snapshot {
    const start = initialState();
    const step = transition as (m: AnyStateMachine, s: Snapshot, e: unknown) => [Snapshot, unknown];
    const [settled] = step(machine, start, event);
    return settled.status === 'done' ? start : settled;
  }

  /** The `Reconciling` condition by which a status written in `state` names it when it has nothing more to say. */
  function namingCondition(state: string, lastTransitionTime: string) {
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

  return {
    restoreState,
    initialState,
    metaOf,
    storedStateMisfit,
    impliedState,
    namingCondition,
    storableStates: (): string[] => [...storable],
  };
}
