/**
 * Generated path tests: `xstate/graph` walks the lifecycle machine with sampled tick payloads, and every
 * generated path is driven through the REAL reconcile core against the in-memory API. At every step the
 * stored status must match what the reached state declares in its meta, the transition invariants must
 * hold, no secret may leak, and a core restarted at any step must end where the uninterrupted run ends.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestModel, getSimplePaths } from 'xstate/graph';
import { postgresClusterMachine as machine } from '../../machines/postgres-cluster.ts';
import { encodeState, metaOf } from '../../machines/state-path.ts';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { reconcile } from '../../src/operator/core/reconcile.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { EventReason } from '../../src/operator/domain/vocabulary.ts';
import { readingFromCaches } from '../../src/operator/driver/cache-reads.ts';
import { allSources } from '../../src/operator/driver/sources.ts';
import { NAMESPACE } from '../../src/tools/fixtures/observations.ts';
import { allSamples, progressionSamples, type SampleTick, sampleWebhook } from '../../src/tools/fixtures/samples.ts';
import { MemoryApiServer } from '../../src/tools/memory/api-server.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { memoryWatchSources } from '../../src/tools/memory/watch-sources.ts';
import { Coverage } from './coverage.ts';
import { expectStatusMatchesState, expectTransitionEvents } from './oracle.ts';
import { FIXTURE_PASSWORD, forceWorld } from './world.ts';

type Step = { state: Parameters<typeof metaOf>[0]; event: { type: string } };
type Path = { steps: Step[]; description?: string };

const key = { namespace: NAMESPACE, name: 'orders' };
const START = Date.parse('2026-11-30T12:00:00Z');

/** Once deletion is requested it cannot be taken back: only deletion worlds follow. */
const samplesFor = (snapshot: { matches: (s: string) => boolean; status: string }) => {
  if (snapshot.status === 'done') return [];
  if (snapshot.matches('Deleting')) return allSamples.filter((s) => s.facts.deletion);
  return allSamples;
};

const model = createTestModel(machine, { events: samplesFor as never });
const shortest = model.getShortestPaths() as unknown as Path[];
// Simple paths of first provisioning: every order in which the world can come together.
const simple = getSimplePaths(machine, {
  events: () => progressionSamples as never,
  toState: (s) => s.matches('Ready'),
}) as unknown as Path[];
// One whole life, event after event: it also walks the self-loops shortest paths never need.
const byName = (name: string) => {
  const found = allSamples.find((s) => s.sample === name);
  if (!found) throw new Error(`no sample ${name}`);
  return found;
};
const life = model.getPathsFromEvents(
  [
    'fresh',
    'fresh',
    ...progressionSamples.slice(1).map((s) => s.sample),
    'healthy',
    'a database asks for roles',
    'healthy',
    'backed up, backup objects missing',
    'healthy',
    'switchover',
    'switchover',
    'healthy',
    'suspended',
    'suspended',
    'healthy',
    'cnpg unrecoverable',
    'cnpg unrecoverable',
    'healthy',
    'cluster spec refused',
    'cluster spec refused',
    'healthy',
    'image and parameters to update (switchover)',
    'image to update, cnpg applying configuration',
    'image to update, cnpg applying configuration',
    'image to update',
    'healthy',
    'deletion requested',
    'deletion requested',
    'deletion, poolers gone',
    'deletion, children released (Retain)',
  ].map(byName) as never,
  {},
) as unknown as Path[];
const paths = [...shortest, ...simple, ...life];

const coverage = new Coverage(machine);
const label = (p: Path) =>
  p.steps
    .slice(1)
    .map((s) => (s.event as SampleTick).sample)
    .join(' → ');

interface Run {
  final: PostgresCluster | undefined;
  /** With `watches`: what the second pass of each step said and left (see `drive`). */
  secondPasses: string[];
}

/**
 * Watches whose deliveries wait until `catchUp` (in order: one queue keeps every kind's order), so that a
 * pass can run on caches that have not delivered the last pass's writes.
 */
function heldWatches(api: MemoryApiServer, clock: ManualClock) {
  const held: Array<() => void> = [];
  const lag = { timers: { setTimeout: (fn: () => void) => held.push(fn) }, delayMs: () => 0 };
  const sources = memoryWatchSources(api, clock, lag);
  for (const source of allSources(sources)) source.start();
  const catchUp = () => {
    for (let next = held.shift(); next; next = held.shift()) next();
  };
  catchUp();
  return { sources, catchUp };
}

/**
 * Drives the real core along a path; with `restartAt`, a brand-new core takes over before that step. With
 * `watches`, the core reads through the operator's caches (driver/cache-reads.ts) and every step takes a
 * second pass on the same world: after the watches have delivered the first pass's writes (`'caught up'`),
 * or before (`'lagging'`). A pass must read its own writes: the two must say and leave the same.
 */
async function drive(path: Path, restartAt?: number, check = false, watches?: 'caught up' | 'lagging'): Promise<Run> {
  const clock = new ManualClock(START);
  const api = new MemoryApiServer(() => clock.now());
  api.admit(sampleWebhook);
  const events = new MemoryEventSink(clock);
  const held = watches && heldWatches(api, clock);
  const cached = (direct: Ports) => (held ? readingFromCaches(direct, held.sources) : direct);
  let ports = cached(memoryPorts(api, clock, events));
  const secondPasses: string[] = [];
  let previous = encodeState(path.steps[0]?.state.value ?? 'Pending');
  for (let i = 1; i < path.steps.length; i++) {
    const step = path.steps[i] as Step;
    const tick = step.event as SampleTick;
    clock.set(START + i * 1_000);
    if (restartAt === i) ports = cached(memoryPorts(api, clock, new MemoryEventSink(clock)));
    forceWorld(api, tick.observation);
    held?.catchUp();
    const outcome = await reconcile(key, { ports, settings: defaultSettings });
    if (held) {
      if (watches === 'caught up') held.catchUp();
      const again = await reconcile(key, { ports, settings: defaultSettings });
      const status = api.get<PostgresCluster>({ kind: 'PostgresCluster', ...key })?.status;
      secondPasses.push(
        `step ${i}: ${again.events.map((e) => `${e.reason}: ${e.message}`).join(' | ')} -> ${status?.state}`,
      );
    }
    const stored = api.get<PostgresCluster>({ kind: 'PostgresCluster', ...key });
    const expected = encodeState(step.state.value);
    if (check) {
      const where = `step ${i} (${tick.sample}) ${previous} -> ${expected}`;
      expect(outcome.error, where).toBeUndefined();
      if (step.state.status === 'done') {
        expect(stored, `${where}: object gone after the finalizer`).toBeUndefined();
      } else {
        expect(stored, where).toBeDefined();
        expectStatusMatchesState(stored as PostgresCluster, expected, metaOf(step.state));
      }
      expectTransitionEvents(previous, expected, outcome.events);
      // Every state the core stores fits the world it stored it in: never discarded as written by hand.
      expect(
        outcome.events.filter((e) => e.reason === EventReason.StoredStateDiscarded),
        where,
      ).toEqual([]);
      const published = JSON.stringify([stored?.status ?? null, events.events]);
      expect(published).not.toContain(FIXTURE_PASSWORD);
      for (const s of api.list('Secret')) {
        const password = (s as { data?: Record<string, string> }).data?.password;
        if (password) expect(published).not.toContain(Buffer.from(password, 'base64').toString());
      }
      coverage.record(path.steps[i - 1]?.state as never, tick);
    }
    previous = expected;
  }
  return { final: api.get<PostgresCluster>({ kind: 'PostgresCluster', ...key }), secondPasses };
}

describe('generated paths through the real reconcile core', () => {
  it('generates shortest and simple paths', () => {
    expect(shortest.length).toBeGreaterThan(100);
    expect(simple.length).toBeGreaterThan(10);
  });

  it.each(paths.map((p, i) => [i, label(p), p] as const))('path %i: %s', async (_i, _label, path) => {
    coverage.visit(path.steps[0]?.state.value);
    const reference = await drive(path, undefined, true);
    // Exactly once when the watches lag: a second pass on caches that have not delivered the first pass's
    // writes says and leaves what it does once they have.
    const caughtUp = await drive(path, undefined, false, 'caught up');
    const lagging = await drive(path, undefined, false, 'lagging');
    expect(lagging.secondPasses).toEqual(caughtUp.secondPasses);
    // Restart safety: a fresh core taking over before any step ends exactly where this run ended.
    for (let k = 2; k < path.steps.length; k++) {
      const restarted = await drive(path, k);
      expect(isDeepStrictEqual(restarted.final?.status, reference.final?.status), `restart before step ${k}`).toBe(
        true,
      );
    }
  });

  it('covers every state and every transition of the machine', () => {
    expect(coverage.missingStates()).toEqual([]);
    expect(coverage.missingTransitions()).toEqual([]);
  });

  afterAll(() => {
    const line = `postgresCluster paths: ${paths.length}, ${coverage.summary()}`;
    mkdirSync('node_modules/.cache/pgfsm', { recursive: true });
    writeFileSync('node_modules/.cache/pgfsm/paths-summary-postgresCluster.txt', `${line}\n`);
    console.log(line);
  });
});
