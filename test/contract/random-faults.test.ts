/**
 * Events are neither lost nor repeated under faults drawn at random (issue 9, issue 10's delivery after the
 * pass): every write of the shipped driver and core fails now and then, refused or with its answer lost,
 * status writes land late, and the replica loses the lease for a while and takes it back (its next term
 * enqueues every cluster, as operator.ts does). Each seed gives one reproducible run; each cluster must
 * announce exactly what it announces without faults. The hand-picked fault patterns are in
 * events-under-faults.test.ts; this one looks for the combinations nobody thought of.
 */
import { describe, expect, it } from 'vitest';
import type { DatabasePorts } from '../../src/operator/core/database/ports.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { simulationWith } from '../../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';
import { seededRandom } from '../../src/tools/simulation/virtual-timers.ts';
import { type InjectedFaults, randomFaults } from './support/faulty-ports.ts';
import {
  finalRoles,
  liveTheStory,
  STORY_CLUSTERS,
  STORY_OBJECTS,
  storyDifference,
  storyObjects,
} from './support/fleet-story.ts';

/** More seeds, or other watch lags, for a longer search: PGFSM_FUZZ_SEEDS=1000 PGFSM_FUZZ_LAGS=0,20,200. */
const SEEDS = Number(process.env.PGFSM_FUZZ_SEEDS ?? 40);
/**
 * How late the watches deliver, in ms of virtual time (each change 0..lag later): at once, and late enough that
 * a pass reads a cache behind its own last writes (what a real watch does, and where a view goes stale).
 */
const LAGS = (process.env.PGFSM_FUZZ_LAGS ?? '0,50,1000').split(',').map(Number);
const FAULT_RATE = 0.25;

/**
 * The story of support/fleet-story.ts; with `faults`, every write fails now and then all along, and the
 * replica loses the lease for a while in every chapter.
 */
async function fleet(
  lag: number,
  databases: boolean,
  faults?: {
    ports: (ports: Ports) => Ports;
    databasePorts: (ports: DatabasePorts) => DatabasePorts;
    lease: { leading: boolean };
    random: () => number;
  },
) {
  const wrapped = faults ? { ports: faults.ports, databasePorts: faults.databasePorts } : {};
  const sim = simulationWith(storyObjects({ databases }), { ...wrapped, watchLagMs: lag });
  await liveTheStory(sim, async () => {
    if (!faults) return;
    for (let i = 0; i < 10; i++) {
      await sim.run(Math.floor(faults.random() * 1500));
      if (faults.random() >= 0.3) continue;
      faults.lease.leading = false;
      await sim.run(Math.floor(faults.random() * 3000));
      faults.lease.leading = true;
      // A new term of the same replica: every cluster is looked at again (operator.ts, startWorkers).
      sim.controller.enqueueAll();
    }
  });
  return sim;
}

/**
 * A cluster's or a database's Normal events, as a sorted multiset of reasons. The Poolers created together are
 * one event, or, when a fault cuts the pair (one written, the other failed and written by a later pass), one per
 * Pooler: each Pooler's creation counts once, whichever event says it; the same for a database's Secrets. Without
 * `pushes`, the pushes of managed roles are left to `pushesDiffer` (a database's Secrets may come in steps).
 */
const announced = (sim: Simulation, name: string, pushes = true) =>
  sim.events.events
    .filter((e) => e.type === 'Normal' && e.regarding.name === name && (pushes || e.reason !== 'ManagedRolesApplied'))
    .flatMap((e) => {
      if (e.reason === 'PoolersCreated')
        return (e.message.match(/\S+-pooler-r[wo]\b/g) ?? ['?']).map((pooler) => `PoolersCreated ${pooler}`);
      if (e.reason === 'SecretsCreated')
        return (e.message.match(/\S+ for role \w+/g) ?? ['?']).map((secret) => `SecretsCreated ${secret}`);
      return [e.reason];
    })
    .sort();

/** The story's oracle for the pushes of managed roles (support/fleet-story.ts): none repeated. */
const pushesDiffer = (calm: Simulation, sim: Simulation, name: string) => {
  const pushes = (s: Simulation) =>
    s.events.events
      .filter((e) => e.regarding.name === name && e.reason === 'ManagedRolesApplied')
      .map((e) => `${e.type} ${e.reason}: ${e.message}`);
  return storyDifference(pushes(calm), pushes(sim)).join('; ');
};

/** What `got` has more of than `expected` (+) and less of (-), as multisets: empty when they are the same. */
function difference(expected: string[], got: string[]): string {
  const count = (list: string[]) => list.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());
  const want = count(expected);
  const have = count(got);
  const out: string[] = [];
  for (const reason of new Set([...want.keys(), ...have.keys()])) {
    const delta = (have.get(reason) ?? 0) - (want.get(reason) ?? 0);
    if (delta !== 0) out.push(`${delta > 0 ? '+' : ''}${delta} ${reason}`);
  }
  return out.join(', ');
}

/** The story's runs under faults, each held against the calm one by `judge`; fails listing what differs. */
async function underFaults(
  lag: number,
  databases: boolean,
  seeds: number,
  judge: (calm: Simulation, sim: Simulation, name: string) => string,
) {
  const calm = await fleet(lag, databases);
  const total: InjectedFaults = { instead: 0, answerLost: 0, landsLate: 0, notLeader: 0 };
  const differing: string[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const random = seededRandom(seed);
    const lease = { leading: true };
    const { ports, databasePorts, injected } = randomFaults(random, FAULT_RATE, lease);
    const sim = await fleet(lag, databases, { ports, databasePorts, lease, random });
    for (const name of databases ? STORY_OBJECTS : STORY_CLUSTERS) {
      const differs = judge(calm, sim, name);
      if (differs) differing.push(`seed ${seed}, ${name}: ${differs}`);
    }
    if (JSON.stringify(finalRoles(sim)) !== JSON.stringify(finalRoles(calm)))
      differing.push(`seed ${seed}: managed roles end as ${JSON.stringify(finalRoles(sim))}`);
    for (const key of Object.keys(total) as Array<keyof InjectedFaults>) total[key] += injected[key];
  }
  // Every kind of fault happened, often.
  for (const count of Object.values(total)) expect(count).toBeGreaterThan(50);
  expect(differing).toEqual([]);
}

describe.each(LAGS)('random faults on every write, and lease losses, watches %i ms late at most', (lag) => {
  it(`lose no event and repeat none, over ${SEEDS} seeds`, async () => {
    await underFaults(lag, false, SEEDS, (calm, sim, name) => difference(announced(calm, name), announced(sim, name)));
  });

  /*
   * With the story's PostgresDatabases, their own writes failing too (randomFaults' `databasePorts`): a database
   * loses no event and repeats none, as a cluster above — its writes whose answers were lost are read back and
   * its announcements held when its status write fails (core/database/execute.ts, core/announcements.ts) — and the
   * roles pushed end the same. So do the clusters beside them: one that enters Ready in a pass whose push of its
   * databases' roles then fails stores Ready with the Ready condition False, and says `Ready` in the pass that turns
   * the condition True (core/announcements.ts, `readyOwed`; about one seed in forty lost it before).
   */
  it(`with databases: lose no database event and repeat none, over ${Math.ceil(SEEDS / 2)} seeds`, {
    timeout: 120_000,
  }, async () => {
    await underFaults(
      lag,
      true,
      Math.ceil(SEEDS / 2),
      (calm, sim, name) =>
        difference(announced(calm, name, false), announced(sim, name, false)) || pushesDiffer(calm, sim, name),
    );
  });
});
