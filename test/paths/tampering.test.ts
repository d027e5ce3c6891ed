/**
 * Generated tampering tests: the world decides, the stored state is only a hint. Every shortest path of
 * the lifecycle model is driven through the REAL reconcile core to its state; then every state value the
 * machine can store, the final state and some garbage is written into `status.state` (the rest of the
 * status left as pgfsm wrote it, as a `kubectl patch --subresource=status` would), and the core runs again
 * in the same world, then once more in the next one. Against an untampered run of the same two passes:
 *
 * - nothing is deleted or released and no finalizer removed that the untampered run does not;
 * - the one-time events (announcements, failure Warnings) are the untampered run's, plus exactly one
 *   `StoredStateDiscarded` Warning when the value is not the stored one (and none when it is);
 * - the cluster ends where the untampered run ends.
 *
 * The untampered runs also show that every stored state fits: they never earn `StoredStateDiscarded`.
 */
import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import { lifecycleChart } from '../../machines/chart.ts';
import { postgresClusterMachine as machine } from '../../machines/postgres-cluster.ts';
import { encodeState, type metaOf, namingCondition, storableStates } from '../../machines/state-path.ts';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { reconcile } from '../../src/operator/core/reconcile.ts';
import type { KubeEvent } from '../../src/operator/domain/effects.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { EventReason, FINALIZER } from '../../src/operator/domain/vocabulary.ts';
import { NAMESPACE } from '../../src/tools/fixtures/observations.ts';
import { allSamples, type SampleTick, sampleWebhook } from '../../src/tools/fixtures/samples.ts';
import { MemoryApiServer } from '../../src/tools/memory/api-server.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { forceWorld } from './world.ts';

type Step = { state: Parameters<typeof metaOf>[0]; event: { type: string } };
type Path = { steps: Step[] };

const key = { namespace: NAMESPACE, name: 'orders' };
const ref = { kind: 'PostgresCluster', ...key };
const START = Date.parse('2026-11-30T12:00:00Z');

const samplesFor = (snapshot: { matches: (s: string) => boolean; status: string }) => {
  if (snapshot.status === 'done') return [];
  if (snapshot.matches('Deleting')) return allSamples.filter((s) => s.facts.deletion);
  return allSamples;
};
const shortest = (createTestModel(machine, { events: samplesFor as never }).getShortestPaths() as unknown as Path[])
  // A path that ends with the object gone leaves nothing to write a status into.
  .filter((p) => p.steps.at(-1)?.state.status !== 'done' && p.steps.length > 1);

const HEALTHY = allSamples.find((s) => s.sample === 'healthy') as SampleTick;
const ofType = (type: string) => lifecycleChart.states.filter((s) => s.type === type).map((s) => s.path);
/** The final state, the compound states (never stored: their leaves are), and garbage. */
const FINAL = ofType('final')[0] as string;
const VALUES = [...storableStates(), FINAL, ...ofType('compound'), '', 'Nope', 'Provisioning.Nope', 'Ready.'];

/** The events that happen once per transition, never merely because a pass ran again. */
const ONE_TIME = new Set(['BecomeReady', 'BecomeDegraded', 'BecomeNotReady', 'Suspend', 'Resume', 'Fail']);
const oneTime = (events: KubeEvent[]) =>
  events
    .filter((e) => ONE_TIME.has(e.action))
    .map((e) => `${e.type}/${e.reason}`)
    .sort();
const discarded = (events: KubeEvent[]) => events.filter((e) => e.reason === EventReason.StoredStateDiscarded);

interface Pass {
  state: string | undefined;
  events: KubeEvent[];
  destructive: string[];
  finalizer: boolean;
}

/**
 * Drives the path, then (after writing `tamper` into `status.state`, if given) one pass in the path's last
 * world and one in the next world: the deletion world again, or a healthy one.
 */
async function run(path: Path, tamper?: string): Promise<{ untampered: KubeEvent[]; passes: Pass[] }> {
  const clock = new ManualClock(START);
  const api = new MemoryApiServer(() => clock.now());
  api.admit(sampleWebhook);
  const ports = memoryPorts(api, clock, new MemoryEventSink(clock));
  const untampered: KubeEvent[] = [];
  const ticks = path.steps.slice(1).map((s) => s.event as SampleTick);
  for (const [i, tick] of ticks.entries()) {
    clock.set(START + (i + 1) * 1_000);
    forceWorld(api, tick.observation);
    untampered.push(...(await reconcile(key, { ports, settings: defaultSettings })).events);
  }
  const last = ticks.at(-1) as SampleTick;
  const next = last.facts.deletion ? last : HEALTHY;
  const passes: Pass[] = [];
  for (const [i, tick] of [last, next].entries()) {
    clock.set(START + (ticks.length + i + 1) * 1_000);
    forceWorld(api, tick.observation);
    if (i === 0 && tamper !== undefined) {
      const stored = api.get<PostgresCluster>(ref);
      api.updateStatus(ref, { ...stored?.status, state: tamper });
    }
    const mark = api.writes.length;
    const outcome = await reconcile(key, { ports, settings: defaultSettings });
    const after = api.get<PostgresCluster>(ref);
    passes.push({
      state: after?.status?.state,
      events: outcome.events,
      // Deleting a child or changing its owner references (a release); the finalizer is read below.
      destructive: api.writes
        .slice(mark)
        .filter((w) => w.kind !== 'PostgresCluster' && (w.verb === 'delete' || w.verb === 'update'))
        .map((w) => `${w.verb} ${w.kind}/${w.name}`),
      finalizer: (after?.metadata.finalizers ?? []).includes(FINALIZER),
    });
  }
  return { untampered, passes };
}

const label = (p: Path) =>
  p.steps
    .slice(1)
    .map((s) => (s.event as SampleTick).sample)
    .join(' → ');

describe('a status.state written by hand never decides', () => {
  it('has paths to tamper with, and values of every kind', () => {
    expect(shortest.length).toBeGreaterThan(50);
    expect(VALUES).toContain(FINAL);
  });

  it.each(shortest.map((p, i) => [i, label(p), p] as const))('path %i: %s', async (_i, _label, path) => {
    const reference = await run(path);
    // Every state an untampered run stores fits: no Warning about it, ever.
    expect(discarded([...reference.untampered, ...reference.passes.flatMap((p) => p.events)])).toEqual([]);
    const stored = encodeState(path.steps.at(-1)?.state.value ?? '');
    for (const value of VALUES) {
      const tampered = await run(path, value);
      const where = `${JSON.stringify(value)} over ${stored}`;
      tampered.passes.forEach((pass, i) => {
        const before = reference.passes[i] as Pass;
        const at = `${where}, pass ${i + 1}`;
        // Nothing destroyed that the untampered run does not destroy (a pooler switched off, a deletion).
        expect(pass.destructive, at).toEqual(before.destructive);
        expect(pass.finalizer, at).toBe(before.finalizer);
        // The untampered run's one-time events, nothing more; and one Warning naming the value, on the
        // tampered pass, when it is not the stored one.
        expect(oneTime(pass.events), at).toEqual(oneTime(before.events));
        const warnings = discarded(pass.events);
        expect(warnings.length, at).toBe(i === 0 && value !== stored ? 1 : 0);
        for (const w of warnings) {
          expect(w.type).toBe('Warning');
          expect(w.message, at).toContain(JSON.stringify(value));
        }
      });
      // Converged: where the untampered run is after the next world.
      expect(tampered.passes[1]?.state, where).toBe(reference.passes[1]?.state);
    }
  });
});

/**
 * A status patch can write `Suspended` together with the `Reconciling` condition that names it, so the codec's
 * rules take it: what tells it apart is the generation (state-path.ts). Never suspended, the spec is still at
 * the generation the status was written for, and it does not suspend: no `Resumed`, one discard Warning.
 */
describe('a forged Suspended, condition and all, on a cluster that was never suspended', () => {
  const SUSPENDED = allSamples.find((s) => s.sample === 'suspended') as SampleTick;

  /** The passes of `worlds` in turn, `forge` (if given) written into the status before the last pass. */
  async function passes(worlds: SampleTick[], forge?: (status: NonNullable<PostgresCluster['status']>) => object) {
    const clock = new ManualClock(START);
    const api = new MemoryApiServer(() => clock.now());
    api.admit(sampleWebhook);
    const ports = memoryPorts(api, clock, new MemoryEventSink(clock));
    const events: KubeEvent[][] = [];
    for (const [i, tick] of worlds.entries()) {
      clock.set(START + (i + 1) * 1_000);
      forceWorld(api, tick.observation);
      const status = api.get<PostgresCluster>(ref)?.status;
      if (forge && status && i === worlds.length - 1) api.updateStatus(ref, forge(status));
      events.push((await reconcile(key, { ports, settings: defaultSettings })).events);
    }
    return { events, after: api.get<PostgresCluster>(ref) };
  }
  const forged = (status: NonNullable<PostgresCluster['status']>) => ({
    ...status,
    state: 'Suspended',
    conditions: [
      ...(status.conditions ?? []).filter((c) => c.type !== 'Reconciling'),
      namingCondition('Suspended', '2026-11-30T12:00:00Z'),
    ],
  });

  it('announces no Resumed, discards the state with one Warning, and stays Ready', async () => {
    const { events, after } = await passes([HEALTHY, HEALTHY, HEALTHY], forged);
    const last = events.at(-1) ?? [];
    expect(last.filter((e) => e.reason === EventReason.Resumed)).toEqual([]);
    expect(discarded(last)).toHaveLength(1);
    expect(discarded(last)[0]?.message).toContain('spec.suspend is not true');
    expect(oneTime(last)).toEqual([]);
    expect(after?.status?.state).toBe('Ready');
  });

  it('a cluster really suspended and resumed by its spec still announces Resumed', async () => {
    const { events } = await passes([HEALTHY, SUSPENDED, SUSPENDED, HEALTHY]);
    const last = events.at(-1) ?? [];
    expect(last.filter((e) => e.reason === EventReason.Resumed)).toHaveLength(1);
    expect(discarded(events.flat())).toEqual([]);
  });
});
