/**
 * One tick of the lifecycle machine: the state it reaches and the effects its actions ask for — what
 * XState's pure `transition()` returns, at a fraction of its cost.
 *
 * `transition(machine, snapshot, event)` builds a new inert actor for every call, and an actor's
 * constructor computes the machine's initial state: for this machine that was about as much work as the
 * tick itself once the assessment is memoised (npm run bench, "engine"). The scope is only where the
 * macrostep reports actions and finds `self` and `system`; the machine is pure (no invoke, no spawn, no
 * delayed events: the package lint holds it to that), so nothing ever registers in that system or is
 * deferred, and one scope built once serves every tick. Each tick still gets its own action list.
 */
import { type AnyActorScope, createActor } from 'xstate';
import type { Effect } from '../src/operator/domain/effects.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
import type { Snapshot } from './state-path.ts';

/** Built as XState's own `transition()` builds its throwaway scope, once. */
function inertScope(): Omit<AnyActorScope, 'actionExecutor'> {
  const self = createActor(postgresClusterMachine);
  return {
    self,
    defer: () => {},
    id: '',
    logger: () => {},
    sessionId: '',
    stopChild: () => {},
    system: self.system,
    emit: () => {},
  };
}

let scope: Omit<AnyActorScope, 'actionExecutor'> | undefined;

export function tickMachine(snapshot: Snapshot, event: TickEvent): { taken: Snapshot; effects: Effect[] } {
  scope ??= inertScope();
  const effects: Effect[] = [];
  const actorScope = {
    ...scope,
    actionExecutor: (action: { type: string; params?: unknown }) => {
      if (action.type === 'effect') effects.push(action.params as Effect);
    },
  } as AnyActorScope;
  const taken = postgresClusterMachine.transition(snapshot, event, actorScope) as Snapshot;
  return { taken, effects };
}
