/**
 * The machine's state as stored in `status.state`: leaf paths joined by dots ("Provisioning.Cluster").
 * The machine has no parallel states, so one path is the whole state value.
 */
import { pathToStateValue, type StateValue } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';

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
