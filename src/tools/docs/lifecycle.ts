/**
 * Explores what the lifecycle produces: from every state the machine can be stored in, one tick of
 * every sample world, through the pure machine (`transition`) and through the real reconcile core on a
 * frozen world (writes accepted, writes accepted long after the progress deadline, writes rejected).
 * The events and conditions found are the reference tables' raw material: nothing is copied from the
 * source text, so a reason added to a planner or a health check shows up here on the next generation.
 */
import { transition } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import {
  encodeState,
  initialState,
  namingCondition,
  restoreState,
  storableStates,
} from '../../../machines/state-path.ts';
import type { PostgresCluster, PostgresClusterStatus } from '../../operator/api/schema.ts';
import { reconcile } from '../../operator/core/reconcile.ts';
import type { Effect, KubeEvent, Write } from '../../operator/domain/effects.ts';
import type { TickEvent } from '../../operator/domain/observation.ts';
import { frozenPorts, type WriteMode } from './world.ts';

/** Where an event comes from. */
export type EventSource = 'write' | 'readiness' | 'transition' | 'writeFailure';

export interface ObservedEvent {
  event: KubeEvent;
  source: EventSource;
  /** The write it reports (`write`) or that failed (`writeFailure`), e.g. `apply Cluster`. */
  write?: string;
  /** The stored state the pass started from and the state it reached. */
  from: string;
  to: string;
}

export interface ObservedCondition {
  type: string;
  status: string;
  reason: string;
}

export interface Exploration {
  /** Every state a PostgresCluster can be stored in (atomic, not final), in machine order. */
  states: string[];
  events: ObservedEvent[];
  conditions: ObservedCondition[];
}

/** `apply Cluster`, `create Secret`, `add finalizer`…: a write as the tables name it. */
export function describeWrite(write: Write): string {
  switch (write.type) {
    case 'addFinalizer':
      return 'add finalizer';
    case 'removeFinalizer':
      return 'remove finalizer';
    case 'createSecret':
      return 'create Secret';
    case 'apply':
      return write.component === 'managedRoles'
        ? `apply ${write.object.kind} (managed roles)`
        : `apply ${write.object.kind}`;
    case 'delete':
      return `delete ${write.ref.kind}`;
    case 'setOwner':
      return `set owner of ${write.ref.kind}`;
    case 'releaseOwner':
      return `release ${write.ref.kind}`;
  }
}

const PAST_DEADLINE_MS = 60_000;

function withStatus(tick: TickEvent, status: PostgresClusterStatus | undefined): PostgresCluster {
  const { status: _ignored, ...cluster } = tick.observation.cluster;
  return status ? { ...cluster, status } : cluster;
}

/**
 * One tick of each sample from each storable state (and from no stored state at all). The events the
 * core adds to the machine's (a component condition turning True, a write failing) are told apart by
 * `readinessReasons`, the reasons of the former.
 */
export async function explore(
  ticks: readonly TickEvent[],
  readinessReasons: ReadonlySet<string>,
): Promise<Exploration> {
  const states = storableStates();
  const events: ObservedEvent[] = [];
  const conditions: ObservedCondition[] = [];
  for (const from of [undefined, ...states]) {
    const snapshot = restoreState(from) ?? initialState();
    for (const tick of ticks) {
      const [next, actions] = transition(postgresClusterMachine, snapshot, tick);
      const to = encodeState(next.value);
      const effects = actions.filter((a) => a.type === 'effect').map((a) => a.params as Effect);
      const start = from ?? '(none)';
      for (const effect of effects) {
        if (effect.type === 'event') events.push({ event: effect.event, source: 'transition', from: start, to });
        else if (effect.event) {
          events.push({ event: effect.event, source: 'write', write: describeWrite(effect), from: start, to });
        }
      }
      const firstWrite = effects.find((e): e is Write => e.type !== 'event');
      const announced = new Set(effects.flatMap((e) => (e.type === 'event' ? [e.event.reason] : [])));

      const runs: Array<[WriteMode, number]> = [
        ['accept', tick.now],
        ['accept', tick.now - tick.settings.progressDeadlineMs - PAST_DEADLINE_MS],
        ['reject', tick.now],
      ];
      for (const [mode, since] of runs) {
        // The sample's own status carries what the world remembers (a refused write), the rest is the run's.
        const remembered = tick.observation.cluster.status;
        // The seeded status names its state in its conditions too, as every status pgfsm writes does;
        // a `status.state` alone would be discarded as written by hand (StoredStateDiscarded).
        const at = new Date(since).toISOString();
        const others = (remembered?.conditions ?? []).filter((c) => c.type !== 'Reconciling');
        const stored = from
          ? { ...remembered, state: from, stateSince: at, conditions: [...others, namingCondition(from, at)] }
          : undefined;
        const cluster = withStatus(tick, stored);
        const { ports, recorder } = frozenPorts(tick.observation, cluster, mode, tick.now);
        const key = { namespace: cluster.metadata.namespace, name: cluster.metadata.name };
        await reconcile(key, { ports, settings: tick.settings });
        for (const status of recorder.statuses) {
          for (const c of status.conditions ?? [])
            conditions.push({ type: c.type, status: c.status, reason: c.reason });
        }
        for (const event of recorder.events) {
          if (announced.has(event.reason)) continue;
          if (event.type === 'Normal' && readinessReasons.has(event.reason)) {
            if (mode === 'accept') events.push({ event, source: 'readiness', from: start, to });
          } else if (mode === 'reject' && firstWrite) {
            events.push({ event, source: 'writeFailure', write: describeWrite(firstWrite), from: start, to });
          }
        }
      }
    }
  }
  return { states, events, conditions };
}
