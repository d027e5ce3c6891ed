/**
 * Generated path tests of the second machine, PostgresDatabase, as paths.test.ts has them for the first:
 * `xstate/graph` walks the machine with the sample worlds (src/tools/fixtures/database-samples.ts), and every
 * path is driven through the REAL database core (core/database) against the in-memory API. Besides the
 * shortest path to every state, every sample is tried from every state, so that every transition is taken.
 * At every step the stored status must match what the reached state declares, a failure warns once per
 * entry, nothing leaks a password, and a core restarted before any step ends where the uninterrupted run
 * ends (the core keeps nothing between passes, so a restart is a pass on a brand-new set of ports).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import { databaseMetaOf } from '../../machines/database-state-path.ts';
import { postgresDatabaseMachine as machine } from '../../machines/postgres-database.ts';
import { encodeState } from '../../machines/state-codec.ts';
import type { PostgresDatabase } from '../../src/operator/api/schema.ts';
import { reconcileDatabase } from '../../src/operator/core/database/reconcile.ts';
import { DATABASE_COMPONENTS, DATABASE_CONDITION_OF } from '../../src/operator/domain/database/vocabulary.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import {
  allDatabaseSamples,
  DATABASE_NAME,
  type DatabaseSampleTick,
} from '../../src/tools/fixtures/database-samples.ts';
import { NAMESPACE } from '../../src/tools/fixtures/observations.ts';
import { MemoryApiServer } from '../../src/tools/memory/api-server.ts';
import { memoryDatabasePorts } from '../../src/tools/memory/database-ports.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { Coverage } from './coverage.ts';
import { forceDatabaseWorld } from './database-world.ts';
import { FIXTURE_PASSWORD } from './world.ts';

type Step = { state: Parameters<typeof databaseMetaOf>[0]; event: { type: string } };
type Path = { steps: Step[] };

const key = { namespace: NAMESPACE, name: DATABASE_NAME };
const START = Date.parse('2026-11-30T12:00:00Z');

/** Once deletion is requested it cannot be taken back: only deletion worlds follow. */
const samplesFor = (snapshot: { matches: (s: string) => boolean; status: string }) => {
  if (snapshot.status === 'done') return [];
  if (snapshot.matches('Deleting')) return allDatabaseSamples.filter((s) => s.facts.deletion);
  return allDatabaseSamples;
};

const model = createTestModel(machine, { events: samplesFor as never });
const shortest = model.getShortestPaths() as unknown as Path[];
// Every sample from every state the shortest paths reach: every transition is taken somewhere.
const extended: Path[] = shortest.flatMap((path) => {
  const last = path.steps.at(-1);
  if (!last) return [];
  return samplesFor(last.state as never).map((sample) => {
    const [next] = model.getPathsFromEvents([sample] as never, { fromState: last.state } as never) as unknown as Path[];
    return { steps: [...path.steps, ...(next?.steps.slice(1) ?? [])] };
  });
});
const paths = [...shortest, ...extended].filter((p) => p.steps.length > 1);

const coverage = new Coverage(machine);
const label = (p: Path) =>
  p.steps
    .slice(1)
    .map((s) => (s.event as DatabaseSampleTick).sample)
    .join(' → ');

const isBlocked = (reason: string) => reason.startsWith('WaitingFor');

function expectStatusMatchesState(database: PostgresDatabase, state: string, step: Step): void {
  const meta = databaseMetaOf(step.state);
  const status = database.status;
  expect(status?.state, 'status.state').toBe(state);
  expect(status?.phase).toBe(meta.phase);
  const conditions = new Map((status?.conditions ?? []).map((c) => [c.type, c]));
  expect([...conditions.keys()].sort()).toEqual(
    ['Ready', 'Reconciling', 'Stalled', ...DATABASE_COMPONENTS.map((c) => DATABASE_CONDITION_OF[c])].sort(),
  );
  expect(conditions.get('Ready')?.status).toBe(meta.ready ? 'True' : 'False');
  expect(conditions.get('Reconciling')?.status).toBe(meta.reconciling ? 'True' : 'False');
  expect(conditions.get('Stalled')?.status).toBe(meta.stalled ? 'True' : 'False');
  if (meta.conditions !== 'pipeline') return;
  const stepIndex = meta.step ? DATABASE_COMPONENTS.indexOf(meta.step) : DATABASE_COMPONENTS.length;
  DATABASE_COMPONENTS.forEach((c, i) => {
    const condition = conditions.get(DATABASE_CONDITION_OF[c]);
    const where = `${DATABASE_CONDITION_OF[c]} in ${state}`;
    if (i < stepIndex && state !== 'Failed.InvalidSpec') expect(condition?.status, where).toBe('True');
    if (i === stepIndex) {
      expect(condition?.status, where).toBe('False');
      expect(isBlocked(condition?.reason ?? ''), where).toBe(false);
    }
  });
}

interface Run {
  final: PostgresDatabase | undefined;
}

async function drive(path: Path, restartAt?: number, check = false): Promise<Run> {
  const clock = new ManualClock(START);
  const api = new MemoryApiServer(() => clock.now());
  const fresh = () => {
    const events = new MemoryEventSink(clock);
    return { events, ports: memoryDatabasePorts(api, memoryPorts(api, clock, events)) };
  };
  let { events, ports } = fresh();
  let previous = encodeState(path.steps[0]?.state.value ?? 'Pending');
  for (let i = 1; i < path.steps.length; i++) {
    const step = path.steps[i] as Step;
    const tick = step.event as DatabaseSampleTick;
    clock.set(START + i * 1_000);
    if (restartAt === i) ({ events, ports } = fresh());
    forceDatabaseWorld(api, tick.observation);
    const outcome = await reconcileDatabase(key, { ports, settings: defaultSettings });
    const stored = api.get<PostgresDatabase>({ kind: 'PostgresDatabase', ...key });
    const expected = encodeState(step.state.value);
    if (check) {
      const where = `step ${i} (${tick.sample}) ${previous} -> ${expected}`;
      expect(outcome.error, where).toBeUndefined();
      if (step.state.status === 'done') expect(stored, `${where}: gone after the finalizer`).toBeUndefined();
      else expectStatusMatchesState(stored as PostgresDatabase, expected, step);
      const failures = outcome.events.filter((e) => e.action === 'Fail');
      expect(failures.length, `failure warnings ${where}`).toBe(
        expected.startsWith('Failed.') && previous !== expected ? 1 : 0,
      );
      const ready = outcome.events.filter((e) => e.reason === 'Ready').length;
      expect(ready, `Ready ${where}`).toBe(previous !== 'Ready' && expected === 'Ready' ? 1 : 0);
      expect(
        outcome.events.filter((e) => e.reason === 'StoredStateDiscarded'),
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
  return { final: api.get<PostgresDatabase>({ kind: 'PostgresDatabase', ...key }) };
}

describe('generated paths of the PostgresDatabase machine through the real database core', () => {
  it('generates a path to every state and every sample from each', () => {
    expect(shortest.length).toBeGreaterThan(10);
    expect(extended.length).toBeGreaterThan(100);
  });

  it.each(paths.map((p, i) => [i, label(p), p] as const))('path %i: %s', async (_i, _label, path) => {
    coverage.visit(path.steps[0]?.state.value);
    const reference = await drive(path, undefined, true);
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
    const line = `postgresDatabase paths: ${paths.length}, ${coverage.summary()}`;
    mkdirSync('node_modules/.cache/pgfsm', { recursive: true });
    writeFileSync('node_modules/.cache/pgfsm/paths-summary-postgresDatabase.txt', `${line}\n`);
    console.log(line);
  });
});
