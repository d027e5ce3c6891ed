/**
 * machines/tick.ts replays the courses XState has taken instead of running XState's bookkeeping again. A
 * replay must answer exactly as XState does: the same state, the same status, the same effects in the
 * same order, on every storable state, in worlds where each fact that steers a guard takes each of its
 * values — including ticks whose course was recorded in another world (the tree of courses is shared).
 */
import { describe, expect, it } from 'vitest';
import { initialTransition } from 'xstate';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { encodeState, impliedState, metaOf, restoreState, storableStates } from '../../machines/state-path.ts';
import { type Tick, tickMachine, tickThroughXState } from '../../machines/tick.ts';
import { CnpgPhase } from '../../src/operator/domain/components/cnpg-phases.ts';
import type { TickEvent } from '../../src/operator/domain/observation.ts';
import { type Facts, healthyFacts, tickOf } from '../../src/tools/fixtures/observations.ts';

/** Every value of each fact, one fact at a time, from the healthy world. */
const VARIANTS: { [K in keyof Facts]?: Facts[K][] } = {
  finalizer: [false],
  suspend: [true],
  policy: ['Delete'],
  classPresent: [false],
  specValid: [false],
  poolerEnabled: [false],
  roles: [[], ['app', 'reporting']],
  secret: ['missing', 'noKey', 'orphan', 'released', 'unmarked'],
  cnpg: ['missing', 'drifted', 'scaling', 'released', 'unmarked', CnpgPhase.Switchover, CnpgPhase.Unrecoverable],
  rolesState: ['pending', 'failed', 'secretMissing', 'notPushed'],
  poolers: ['missing', 'notReady', 'drifted', 'foreign', 'unmarked'],
  configMap: ['missing', 'drifted', 'released', 'foreign', 'unmarked'],
  refused: ['cluster', 'managedRoles', 'pooler'],
  upgrade: ['pending', 'halfway'],
};

const worlds: Facts[] = [healthyFacts];
for (const [fact, values] of Object.entries(VARIANTS)) {
  for (const value of values as unknown[]) worlds.push({ ...healthyFacts, [fact]: value });
}
// The deletion steps, in each world too: what is gone steers them.
worlds.push(...worlds.map((w) => ({ ...w, deletion: true })));

const plain = (t: Tick) => ({
  state: encodeState(t.taken.value),
  status: t.taken.status,
  meta: t.taken.status === 'active' ? metaOf(t.taken) : undefined,
  effects: t.effects,
});

const startsIn = (event: TickEvent) => [
  initialTransition(postgresClusterMachine)[0],
  impliedState(event),
  ...storableStates().map((s) => restoreState(s)),
];

describe('a tick replayed from a recorded course', () => {
  it('answers as XState does, in every world and from every state, recorded or replayed', () => {
    let replayed = 0;
    // Twice over: the first round records most courses (and replays those another world recorded), the
    // second replays them all.
    for (let round = 0; round < 2; round++) {
      for (const facts of worlds) {
        for (const snapshot of startsIn(tickOf(facts))) {
          if (!snapshot) throw new Error('a storable state does not restore');
          const expected = plain(tickThroughXState(snapshot, tickOf(facts)));
          const actual = plain(tickMachine(snapshot, tickOf(facts)));
          expect(actual, `${encodeState(snapshot.value)} in ${JSON.stringify(facts)}`).toEqual(expected);
          replayed++;
        }
      }
    }
    expect(replayed).toBeGreaterThan(1000);
  });

  it('gives each tick its own effects, planned on its own observation', () => {
    const from = restoreState('Deleting.Poolers');
    if (!from) throw new Error('no Deleting.Poolers');
    const world = { ...healthyFacts, deletion: true };
    const first = tickMachine(from, tickOf(world));
    const second = tickMachine(from, tickOf(world));
    expect(second.effects).toEqual(first.effects);
    expect(second.effects).not.toBe(first.effects);
    expect(second.effects.length).toBeGreaterThan(0);
    expect(second.effects[0]).not.toBe(first.effects[0]);
  });
});
