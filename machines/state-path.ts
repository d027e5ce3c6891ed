/**
 * The machine's state as stored in `status.state`: leaf paths joined by dots ("Provisioning.Cluster").
 * The machine has no parallel states (the package lint checks), so one path is the whole state value.
 */
import { pathToStateValue, type StateValue } from 'xstate';
import { lifecycleChart } from './chart.ts';
import type { StateMeta } from './meta.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
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
  try {
    return postgresClusterMachine.resolveState({ value: pathToStateValue(stored.split('.')), context: {} });
  } catch {
    return undefined;
  }
}

/** Every state a PostgresCluster can be stored in (atomic, not final), in machine order. */
export const storableStates = (): string[] =>
  leaves(lifecycleChart)
    .filter((s) => s.type === 'atomic')
    .map((s) => s.path);

/** The meta of the active atomic state (compound parents declare none): what the status projects. */
export function metaOf(snapshot: Snapshot): StateMeta {
  const metas = Object.values(snapshot.getMeta()) as StateMeta[];
  const meta = metas.at(-1);
  if (!meta) throw new Error(`state ${JSON.stringify(snapshot.value)} declares no meta`);
  return meta;
}
