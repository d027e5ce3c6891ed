/**
 * The states a PostgresCluster can be in, read from the machine itself: every atomic and final state
 * with the `meta` it declares. Walking the machine (rather than listing states) means a state added
 * tomorrow shows up in the health artefacts and their tests without anyone remembering to add it.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import type { StateMeta } from '../../../machines/meta.ts';

export interface MachineState {
  /** Dotted path below the root, as published in `status.state`, e.g. `Provisioning.Secret`. */
  state: string;
  meta: StateMeta;
}

/** Atomic and final states in document order (the order the diagrams use, so tables line up). */
export function machineStates(machine: AnyStateMachine): MachineState[] {
  const out: MachineState[] = [];
  const visit = (node: AnyStateNode) => {
    for (const child of Object.values(node.states) as AnyStateNode[]) {
      const state = child.path.join('.');
      // A parallel region would publish a composite state value; the projection does not handle one.
      if (child.type === 'parallel' || child.type === 'history') {
        throw new Error(`${state}: ${child.type} states are not supported by the health artefacts`);
      }
      if (child.type === 'compound') {
        visit(child);
        continue;
      }
      // Every publishable state must declare its meta: the projection cannot compute a status without it.
      if (!child.meta) throw new Error(`${state} declares no meta`);
      out.push({ state, meta: child.meta as StateMeta });
    }
  };
  visit(machine.root);
  return out;
}
