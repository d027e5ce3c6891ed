/**
 * The fault suite's kill -9 (test/integration/faults.test.ts) on the simulation, where PostgresDatabases can live
 * (the suite's `pgfsm run` has no PostgreSQL to grant in, issue 37): the fleet story of support/fleet-story.ts,
 * its databases included, with the operator process restarted at random moments of every chapter, watches late.
 * A restart loses what the process kept (queue, caches, own writes, Events not yet sent), as a kill does. Every
 * cluster and database must end where it ends without restarts, no event may repeat, nothing may be created
 * twice, and the managed roles must end the same.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresDatabase } from '../../src/operator/api/schema.ts';
import { NS, simulationWith } from '../../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';
import { seededRandom } from '../../src/tools/simulation/virtual-timers.ts';
import {
  eventsByCluster,
  finalRoles,
  liveTheStory,
  STORY_CLUSTERS,
  STORY_DATABASES,
  storyDifference,
  storyObjects,
} from './support/fleet-story.ts';

const SEEDS = Number(process.env.PGFSM_RESTART_SEEDS ?? 10);
const LAG_MS = 200;

/** Where each object ended: its state, or gone. */
function ends(sim: Simulation) {
  const state = (kind: string, name: string) =>
    sim.api.get<PostgresDatabase>({ kind, namespace: NS, name })?.status?.state ?? 'gone';
  return [
    ...STORY_CLUSTERS.map((name) => `${name} ${state('PostgresCluster', name)}`),
    ...STORY_DATABASES.map((name) => `${name} ${state('PostgresDatabase', name)}`),
  ];
}

/** The Normal events but the pushes of managed roles (judged apart: they may come in other steps). */
const normal = (events: readonly string[]) =>
  events.filter((line) => line.startsWith('Normal ') && !line.includes(' ManagedRolesApplied: '));

/** What `got` says more often than `expected`. */
function surplus(expected: readonly string[], got: readonly string[]): string[] {
  const left = [...expected];
  return got.filter((line) => {
    const at = left.indexOf(line);
    if (at < 0) return true;
    left.splice(at, 1);
    return false;
  });
}

/** An event said twice that says a creation: the object was created twice. */
const createdTwice = (events: readonly string[]) =>
  events.filter((line, i) => /Created: /.test(line) && events.indexOf(line) !== i);

async function story(seed?: number) {
  const sim = simulationWith(storyObjects(), { watchLagMs: LAG_MS });
  const random = seed === undefined ? undefined : seededRandom(seed);
  let restarts = 0;
  await liveTheStory(sim, async () => {
    if (!random) return;
    for (let i = 0; i < 3; i++) {
      await sim.run(Math.floor(random() * 4_000));
      sim.restartOperator();
      restarts++;
    }
  });
  return { sim, restarts };
}

describe('restarts at random moments, databases included', () => {
  it(`every object ends as without them, nothing said or created twice (${SEEDS} seeds)`, {
    timeout: 180_000,
  }, async () => {
    const { sim: calm } = await story();
    const atOnce = eventsByCluster(calm);
    const problems: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { sim, restarts } = await story(seed);
      expect(restarts).toBeGreaterThanOrEqual(10);
      if (JSON.stringify(ends(sim)) !== JSON.stringify(ends(calm)))
        problems.push(`seed ${seed}: ends ${ends(sim).join(', ')}`);
      if (JSON.stringify(finalRoles(sim)) !== JSON.stringify(finalRoles(calm)))
        problems.push(`seed ${seed}: managed roles end as ${JSON.stringify(finalRoles(sim))}`);
      for (const [name, events] of Object.entries(eventsByCluster(sim))) {
        const twice = createdTwice(events);
        if (twice.length > 0) problems.push(`seed ${seed}, ${name}: created twice: ${twice.join(' | ')}`);
        // Of the pushes of managed roles: none repeated (storyDifference's first finding is about the others).
        const repeated = storyDifference(atOnce[name] ?? [], events).filter((p) => p.startsWith('roles pushed'));
        if (repeated.length > 0) problems.push(`seed ${seed}, ${name}: ${repeated.join('; ')}`);
        // Every other Normal event at most as often as without restarts.
        const more = surplus(normal(atOnce[name] ?? []), normal(events));
        if (more.length > 0) problems.push(`seed ${seed}, ${name}: said more often: ${more.join(' | ')}`);
      }
    }
    expect(ends(calm)).toContain('shop Ready');
    expect(problems).toEqual([]);
  });
});
