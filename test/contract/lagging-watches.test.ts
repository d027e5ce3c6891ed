/**
 * Exactly once when the world is late (issue 28): with every watch delivering each change up to seconds
 * after the API stored it (in order per kind, as one watch stream does), and no fault, a fleet lives through
 * what users do to it (support/fleet-story.ts) and every cluster and every PostgresDatabase announces exactly
 * what it announces with watches at once, in the same order (issue 37: databases too; of the roles pushed, see
 * `storyDifference`). A pass reads its own writes where the caches have not caught up
 * (driver/own-writes.ts); without that, nearly every run here repeats an announcement.
 */
import { describe, expect, it } from 'vitest';
import { simulationWith } from '../../src/tools/fixtures/simulation.ts';
import { eventsByCluster, finalRoles, liveTheStory, storyDifference, storyObjects } from './support/fleet-story.ts';

/** How late a watch delivers a change at most, in ms of virtual time: from a busy moment to a loaded cluster. */
const LAGS = [20, 200, 1_000, 5_000];
const SEEDS = Number(process.env.PGFSM_LAG_SEEDS ?? 10);

async function story(lag: number, seed: number) {
  const sim = simulationWith(storyObjects(), { watchLagMs: lag, seed });
  await liveTheStory(sim);
  return { events: eventsByCluster(sim), roles: finalRoles(sim) };
}

/** Forty runs of the story with its databases: about 30 s alone on 2 cores, more beside other suites. */
const STORIES_TIMEOUT_MS = 180_000;

describe('watches that deliver late, no fault', () => {
  it(`the fleet announces what it announces with watches at once, each event once and in order (${SEEDS} seeds a lag)`, {
    timeout: STORIES_TIMEOUT_MS,
  }, async () => {
    const { events: atOnce, roles } = await story(0, 1);
    // The story is one that announces: roles applied, poolers deleted, the spec rolled out, both deletions.
    const reasons = Object.values(atOnce)
      .flat()
      .map((line) => line.split(':')[0]);
    for (const reason of ['ManagedRolesApplied', 'PoolerDeleted', 'CNPGClusterUpdated', 'Ready']) {
      expect(reasons).toContain(`Normal ${reason}`);
    }
    // And so do its databases: created, given users, moved off the pooler, deleted under both policies.
    for (const reason of ['SecretsCreated', 'CNPGDatabaseCreated', 'PrivilegesGranted', 'SecretUpdated']) {
      expect(reasons).toContain(`Normal ${reason}`);
    }
    expect(atOnce.ledger?.at(-1)).toMatch(/CleanupComplete: .*dropped/);
    expect(atOnce.archive?.at(-1)).toMatch(/CleanupComplete: .*retained/);
    const differing: string[] = [];
    for (const lag of LAGS) {
      for (let seed = 1; seed <= SEEDS; seed++) {
        const { events: late, roles: lateRoles } = await story(lag, seed);
        if (JSON.stringify(lateRoles) !== JSON.stringify(roles))
          differing.push(`lag ${lag} ms, seed ${seed}: managed roles end as ${JSON.stringify(lateRoles)}`);
        for (const [name, events] of Object.entries(late)) {
          const problems = storyDifference(atOnce[name] ?? [], events);
          if (problems.length > 0) differing.push(`lag ${lag} ms, seed ${seed}, ${name}: ${problems.join('; ')}`);
        }
      }
    }
    expect(differing.slice(0, 3).join('\n'), `${differing.length} runs differ`).toBe('');
  });
});
