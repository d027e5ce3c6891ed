/**
 * The PostgresDatabase machine's stored state is only a hint too, and its passes keep their word under faults.
 *
 * Tampering, as tampering.test.ts does for the cluster: every shortest path of the database model is driven
 * through the real database core, then every state the machine stores, the final state, compound states and
 * garbage are written into `status.state`, and the core runs again in the same world and once in the next.
 * Against the untampered run: nothing deleted or released and no finalizer removed that it does not, the same
 * one-time events plus one `StoredStateDiscarded` naming the value, and the same state at the end.
 *
 * Faults: along first provisioning, each kind of write fails once (refused, or a connection lost); the pass
 * reports it on the condition of its component and the next pass converges, with each one-time event said once.
 */
import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import { databaseChart } from '../../machines/chart.ts';
import { storableDatabaseStates } from '../../machines/database-state-path.ts';
import { postgresDatabaseMachine as machine } from '../../machines/postgres-database.ts';
import { encodeState } from '../../machines/state-codec.ts';
import type { PostgresDatabase } from '../../src/operator/api/schema.ts';
import { reconcileDatabase } from '../../src/operator/core/database/reconcile.ts';
import { type ErrorClass, PortError } from '../../src/operator/core/errors.ts';
import type { KubeEvent } from '../../src/operator/domain/effects.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { FINALIZER } from '../../src/operator/domain/vocabulary.ts';
import {
  allDatabaseSamples,
  DATABASE_NAME,
  type DatabaseSampleTick,
  databaseProgressionSamples,
} from '../../src/tools/fixtures/database-samples.ts';
import { NAMESPACE } from '../../src/tools/fixtures/observations.ts';
import { MemoryApiServer } from '../../src/tools/memory/api-server.ts';
import {
  memoryDatabasePorts,
  memoryPresence,
  memoryRoles,
  RecordingPrivileges,
} from '../../src/tools/memory/database-ports.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { forceDatabaseWorld } from './database-world.ts';

type Step = { state: { value: unknown; status: string }; event: { type: string } };
type Path = { steps: Step[] };

const key = { namespace: NAMESPACE, name: DATABASE_NAME };
const ref = { kind: 'PostgresDatabase', ...key };
const START = Date.parse('2026-11-30T12:00:00Z');

const samplesFor = (snapshot: { matches: (s: string) => boolean; status: string }) => {
  if (snapshot.status === 'done') return [];
  if (snapshot.matches('Deleting')) return allDatabaseSamples.filter((s) => s.facts.deletion);
  return allDatabaseSamples;
};
const shortest = (
  createTestModel(machine, { events: samplesFor as never }).getShortestPaths() as unknown as Path[]
).filter((p) => p.steps.at(-1)?.state.status !== 'done' && p.steps.length > 1);

const READY = allDatabaseSamples.find((s) => s.sample === 'ready') as DatabaseSampleTick;
const ofType = (type: string) => databaseChart.states.filter((s) => s.type === type).map((s) => s.path);
const FINAL = ofType('final')[0] as string;
const VALUES = [...storableDatabaseStates(), FINAL, ...ofType('compound'), '', 'Nope', 'Provisioning.Nope'];

const ONE_TIME = new Set(['BecomeReady', 'BecomeNotReady', 'Fail']);
const oneTime = (events: KubeEvent[]) =>
  events
    .filter((e) => ONE_TIME.has(e.action))
    .map((e) => `${e.type}/${e.reason}`)
    .sort();
const discarded = (events: KubeEvent[]) => events.filter((e) => e.reason === 'StoredStateDiscarded');

function world() {
  const clock = new ManualClock(START);
  const api = new MemoryApiServer(() => clock.now());
  const privileges = new RecordingPrivileges(memoryRoles(api), memoryPresence(api));
  const ports = memoryDatabasePorts(api, memoryPorts(api, clock, new MemoryEventSink(clock)), privileges);
  return { clock, api, ports, privileges };
}

interface Pass {
  state: string | undefined;
  events: KubeEvent[];
  destructive: string[];
  finalizer: boolean;
}

async function run(path: Path, tamper?: string): Promise<{ untampered: KubeEvent[]; passes: Pass[] }> {
  const { clock, api, ports } = world();
  const untampered: KubeEvent[] = [];
  const ticks = path.steps.slice(1).map((s) => s.event as DatabaseSampleTick);
  for (const [i, tick] of ticks.entries()) {
    clock.set(START + (i + 1) * 1_000);
    forceDatabaseWorld(api, tick.observation);
    untampered.push(...(await reconcileDatabase(key, { ports, settings: defaultSettings })).events);
  }
  const last = ticks.at(-1) as DatabaseSampleTick;
  const next = last.facts.deletion ? last : READY;
  const passes: Pass[] = [];
  for (const [i, tick] of [last, next].entries()) {
    clock.set(START + (ticks.length + i + 1) * 1_000);
    forceDatabaseWorld(api, tick.observation);
    if (i === 0 && tamper !== undefined) {
      const stored = api.get<PostgresDatabase>(ref);
      api.updateStatus(ref, { ...stored?.status, state: tamper });
    }
    const mark = api.writes.length;
    const outcome = await reconcileDatabase(key, { ports, settings: defaultSettings });
    const after = api.get<PostgresDatabase>(ref);
    passes.push({
      state: after?.status?.state,
      events: outcome.events,
      destructive: api.writes
        .slice(mark)
        .filter((w) => w.kind !== 'PostgresDatabase' && (w.verb === 'delete' || w.verb === 'update'))
        .map((w) => `${w.verb} ${w.kind}/${w.name}`),
      finalizer: (after?.metadata.finalizers ?? []).includes(FINALIZER),
    });
  }
  return { untampered, passes };
}

describe('a PostgresDatabase status.state written by hand never decides', () => {
  it('has paths to tamper with', () => {
    expect(shortest.length).toBeGreaterThan(10);
  });

  it.each(shortest.map((p, i) => [i, p] as const))('path %i', async (_i, path) => {
    const reference = await run(path);
    expect(discarded([...reference.untampered, ...reference.passes.flatMap((p) => p.events)])).toEqual([]);
    const stored = encodeState(path.steps.at(-1)?.state.value as never);
    for (const value of VALUES) {
      const tampered = await run(path, value);
      const where = `${JSON.stringify(value)} over ${stored}`;
      tampered.passes.forEach((pass, i) => {
        const before = reference.passes[i] as Pass;
        const at = `${where}, pass ${i + 1}`;
        expect(pass.destructive, at).toEqual(before.destructive);
        expect(pass.finalizer, at).toBe(before.finalizer);
        expect(oneTime(pass.events), at).toEqual(oneTime(before.events));
        const warnings = discarded(pass.events);
        expect(warnings.length, at).toBe(i === 0 && value !== stored ? 1 : 0);
        for (const w of warnings) expect(w.message, at).toContain(JSON.stringify(value));
      });
      expect(tampered.passes[1]?.state, where).toBe(reference.passes[1]?.state);
    }
  });
});

/** Each write kind of first provisioning, failing once in the class a real API server or PostgreSQL gives. */
const FAULTS: Array<{ kind: string; verb: 'apply' | 'update' | 'updateStatus'; errorClass: ErrorClass }> = [
  { kind: 'PostgresDatabase', verb: 'update', errorClass: 'conflict' },
  { kind: 'Secret', verb: 'apply', errorClass: 'timeout' },
  { kind: 'Database', verb: 'apply', errorClass: 'rejected' },
  { kind: 'PostgresDatabase', verb: 'updateStatus', errorClass: 'unavailable' },
];

describe('a PostgresDatabase under faults', () => {
  it.each(FAULTS)(
    '$kind $verb failing once ($errorClass): reported, then converged, each event once',
    async (fault) => {
      const { clock, api, ports, privileges } = world();
      const events: KubeEvent[] = [];
      let injected = false;
      let failedPasses = 0;
      // Each world of first provisioning, then the ready one, each passed until it settles (as requeues would).
      for (const [i, tick] of [...databaseProgressionSamples, READY, READY].entries()) {
        clock.set(START + (i + 1) * 1_000);
        forceDatabaseWorld(api, tick.observation);
        for (let pass = 0; pass < 3; pass++) {
          if (!injected && api.get(ref)) {
            api.injectFault(fault.kind, fault.verb, fault.errorClass, 1);
            injected = true;
          }
          const outcome = await reconcileDatabase(key, { ports, settings: defaultSettings });
          events.push(...outcome.events);
          if (outcome.error !== undefined) {
            failedPasses++;
            expect(outcome.error).toBeInstanceOf(PortError);
            expect(outcome.requeue.kind).not.toBe('none');
          }
        }
      }
      expect(failedPasses, 'the fault was met').toBeGreaterThan(0);
      expect(api.get<PostgresDatabase>(ref)?.status?.state).toBe('Ready');
      expect(events.filter((e) => e.reason === 'Ready')).toHaveLength(1);
      // Each Secret's creation said once, in one event with the others or, cut by a fault, in its own.
      const created = events
        .filter((e) => e.reason === 'SecretsCreated')
        .flatMap((e) => e.message.match(/\S+ for role \S+/g) ?? [e.message]);
      expect(new Set(created).size, created.join(' | ')).toBe(created.length);
      expect(privileges.grants.length).toBeGreaterThan(0);
    },
  );

  it('a grant refused over SQL is reported on PrivilegesApplied and made again on the next pass', async () => {
    const { clock, api, ports, privileges } = world();
    privileges.failWith = new Error('connection refused');
    for (const [i, tick] of databaseProgressionSamples.entries()) {
      clock.set(START + (i + 1) * 1_000);
      forceDatabaseWorld(api, tick.observation);
      await reconcileDatabase(key, { ports, settings: defaultSettings });
    }
    const world9 = databaseProgressionSamples.find((s) => s.sample === 'database applied') as DatabaseSampleTick;
    forceDatabaseWorld(api, world9.observation);
    const failed = await reconcileDatabase(key, { ports, settings: defaultSettings });
    expect(failed.requeue.kind).toBe('backoff');
    const condition = api.get<PostgresDatabase>(ref)?.status?.conditions?.find((c) => c.type === 'PrivilegesApplied');
    expect(condition).toMatchObject({ status: 'False', reason: 'PrivilegesFailed', message: 'connection refused' });
    privileges.failWith = undefined;
    await reconcileDatabase(key, { ports, settings: defaultSettings });
    expect(privileges.grants).toHaveLength(1);
  });
});
