/**
 * The engine benchmark: µs per tick of the lifecycle statechart, as a reconcile pass runs it (the stored state
 * restored, XState's transition with the real guards, the effects read from its actions), against the same
 * decision written by hand (bench/decide-by-hand.ts), both including the assessment of a fresh observation.
 *
 * `npm run bench` runs it with `--conditions=development`, which selects XState's development build (the one the
 * tests run); the image and bin/pgfsm.js run the production build. Alone, either build:
 *
 *   node [--conditions=development] --import tsx bench/engine.ts [--reps 5] [--warmup-ms 2000] [--rep-ms 300]
 */
import { isDeepStrictEqual } from 'node:util';
import { getMicrosteps } from 'xstate';
import { postgresClusterMachine } from '../machines/postgres-cluster.ts';
import { encodeState, restoreState, storableStates } from '../machines/state-path.ts';
import { type Tick, tickMachine, tickThroughXState } from '../machines/tick.ts';
import { assess } from '../src/operator/domain/assessment.ts';
import { CnpgPhase } from '../src/operator/domain/components/cnpg-phases.ts';
import type { Effect } from '../src/operator/domain/effects.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { type Facts, healthyFacts, tickOf } from '../src/tools/fixtures/observations.ts';
import { type Decision, decideByHand } from './decide-by-hand.ts';
import { formatSpread, type Spread, spread } from './stats.ts';

export interface EngineScenario {
  name: string;
  from: string;
  facts: Facts;
}

export const SCENARIOS: EngineScenario[] = [
  { name: 'Ready stays Ready', from: 'Ready', facts: healthyFacts },
  { name: 'Pending → Ready in one tick (cascade of 6)', from: 'Pending', facts: healthyFacts },
  {
    name: 'Provisioning.Cluster waits (1 of 3 ready)',
    from: 'Provisioning.Cluster',
    facts: { ...healthyFacts, cnpg: 'scaling' },
  },
  {
    name: 'Deleting.Poolers waits (poolers still there)',
    from: 'Deleting.Poolers',
    facts: { ...healthyFacts, deletion: true },
  },
  {
    name: 'Deleting: all released → Deleted',
    from: 'Deleting.Poolers',
    facts: {
      ...healthyFacts,
      deletion: true,
      poolers: 'missing',
      secret: 'released',
      cnpg: 'released',
      configMap: 'released',
    },
  },
];

/** What a reconcile pass does with the machine for one tick (src/operator/core/reconcile.ts). */
export function machineDecision(stored: string, event: TickEvent, tick = tickMachine): Decision {
  const snapshot = restoreState(stored);
  if (!snapshot) throw new Error(`no state ${stored}`);
  const { taken, effects }: Tick = tick(snapshot, event);
  return { state: encodeState(taken.value), effects };
}

/** The same tick with XState's macrostep run every time, none of its courses replayed: the engine's floor. */
export const xstateDecision = (stored: string, event: TickEvent) => machineDecision(stored, event, tickThroughXState);

/** Worlds for the agreement check: each fact that steers a guard, one at a time. */
const CHECK_WORLDS: Facts[] = [
  healthyFacts,
  { ...healthyFacts, deletion: true },
  { ...healthyFacts, deletion: true, poolers: 'missing' },
  { ...healthyFacts, deletion: true, poolers: 'missing', secret: 'released', cnpg: 'released', configMap: 'released' },
  { ...healthyFacts, finalizer: false },
  { ...healthyFacts, suspend: true },
  { ...healthyFacts, classPresent: false },
  { ...healthyFacts, specValid: false },
  { ...healthyFacts, secret: 'missing' },
  { ...healthyFacts, secret: 'noKey' },
  { ...healthyFacts, cnpg: 'missing' },
  { ...healthyFacts, cnpg: 'drifted' },
  { ...healthyFacts, cnpg: 'scaling' },
  { ...healthyFacts, cnpg: CnpgPhase.Switchover },
  { ...healthyFacts, cnpg: 'unmarked' },
  { ...healthyFacts, upgrade: 'pending' },
  { ...healthyFacts, upgrade: 'halfway' },
  { ...healthyFacts, rolesState: 'pending' },
  { ...healthyFacts, rolesState: 'failed' },
  { ...healthyFacts, poolers: 'notReady' },
  { ...healthyFacts, poolers: 'foreign' },
  { ...healthyFacts, configMap: 'drifted' },
  { ...healthyFacts, configMap: 'foreign' },
  { ...healthyFacts, refused: 'cluster' },
  { ...healthyFacts, refused: 'pooler' },
];

/**
 * The reference decides as the machine does, on every storable state of every check world, and the machine's
 * replayed courses as XState itself; throws otherwise. Twice over: the first round records the machine's courses,
 * the second replays every one.
 */
export function checkAgreement(): number {
  let compared = 0;
  for (const facts of [...CHECK_WORLDS, ...CHECK_WORLDS]) {
    for (const from of [...storableStates(), 'Deleted']) {
      const machine = machineDecision(from, tickOf(facts));
      const hand = decideByHand(from, tickOf(facts));
      const xstate = xstateDecision(from, tickOf(facts));
      if (!isDeepStrictEqual(machine, xstate)) {
        throw new Error(
          `machines/tick.ts replays another decision than XState's from ${from} in ${JSON.stringify(facts)}:\n` +
            `replayed ${JSON.stringify(summary(machine))}\nXState   ${JSON.stringify(summary(xstate))}`,
        );
      }
      if (!isDeepStrictEqual(machine, hand)) {
        throw new Error(
          `bench/decide-by-hand.ts disagrees with the machine from ${from} in ${JSON.stringify(facts)}:\n` +
            `machine ${JSON.stringify(summary(machine))}\nhand    ${JSON.stringify(summary(hand))}`,
        );
      }
      compared++;
    }
  }
  return compared;
}

const summary = (d: Decision) => ({ state: d.state, effects: d.effects.map(describe) });
const describe = (e: Effect) => (e.type === 'event' ? `event ${e.event.reason}` : e.type);

/** Distinct base ticks per scenario; each timed call still gets a new observation object (see `freshEvent`). */
const POOL = 64;

/**
 * A tick whose observation is a new object: the assessment is memoised per observation object (a WeakMap), so a
 * reused one would be judged once and then only looked up. The copy is shallow: building it costs ~0.1 µs, paid
 * by both sides, and it is included in the figures.
 */
const freshEvent = (base: TickEvent): TickEvent => ({ ...base, observation: { ...base.observation } });

type Body = (i: number) => void;

/** Calls `body` in chunks until `ms` have passed; the time taken (ns) and the calls made. */
function runFor(ms: number, body: Body): { ns: number; calls: number } {
  const chunk = 200;
  let calls = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(ms * 1e6));
  let now = start;
  do {
    for (let i = 0; i < chunk; i++) body(calls + i);
    calls += chunk;
    now = process.hrtime.bigint();
  } while (now < end);
  return { ns: Number(now - start), calls };
}

/** µs per call of `body` over `ms`. */
const timeFor = (ms: number, body: Body): number => {
  const { ns, calls } = runFor(ms, body);
  return ns / 1e3 / calls;
};

/** The slice of a repetition each body runs before the next takes its turn. */
const SLICE_MS = 50;

/**
 * One repetition: every body gets `ms` in all, in turns of SLICE_MS (the order rotating each round), so that a
 * burst of other work on this shared machine lands on all of them alike rather than on one body's whole
 * repetition; µs per call of each.
 */
function timeInTurns(ms: number, bodies: Body[]): number[] {
  const totals = bodies.map(() => ({ ns: 0, calls: 0 }));
  const rounds = Math.max(1, Math.round(ms / SLICE_MS));
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < bodies.length; k++) {
      const at = (round + k) % bodies.length;
      const { ns, calls } = runFor(ms / rounds, bodies[at] as Body);
      const total = totals[at] as { ns: number; calls: number };
      total.ns += ns;
      total.calls += calls;
    }
  }
  return totals.map((t) => t.ns / 1e3 / t.calls);
}

export interface EngineOptions {
  reps: number;
  warmupMs: number;
  repMs: number;
}

export interface EngineRow {
  scenario: string;
  from: string;
  to: string;
  effects: number;
  /** XState's microsteps in the tick (the transition taken and each eventless one after it). */
  microsteps: number;
  machine: Spread;
  hand: Spread;
  ratio: Spread;
  /** XState's macrostep on every tick (no course replayed), and its ratio to the reference. */
  xstate: Spread;
  xstateRatio: Spread;
  assessment: Spread;
  warmupMs: number;
  calls: number;
}

export interface EngineResult {
  rows: EngineRow[];
  agreement: number;
  xstate: string;
  options: EngineOptions;
}

/**
 * Warm-up: both sides alternate in 100 ms slices for at least `warmupMs`, and on until the machine's last two
 * slices agree within 5 % (at most 3 × `warmupMs`). Then `reps` repetitions, each timing the machine, the
 * reference, XState on every tick and the assessment alone for `repMs` each, taking turns in 50 ms slices, so
 * that a change of load hits all four.
 */
export function runEngine(options: EngineOptions, log: (line: string) => void = () => {}): EngineResult {
  const agreement = checkAgreement();
  log(`engine: the reference agrees with the machine on ${agreement} (world, state) pairs`);
  const rows: EngineRow[] = [];
  for (const scenario of SCENARIOS) {
    const pool = Array.from({ length: POOL }, () => tickOf(scenario.facts));
    const expected = machineDecision(scenario.from, freshEvent(pool[0] as TickEvent));
    const restored = restoreState(scenario.from);
    if (!restored) throw new Error(`no state ${scenario.from}`);
    const microsteps = getMicrosteps(postgresClusterMachine, restored, freshEvent(pool[0] as TickEvent)).length;
    let calls = 0;
    const machine: Body = (i) => {
      machineDecision(scenario.from, freshEvent(pool[i % POOL] as TickEvent));
      calls++;
    };
    const hand: Body = (i) => {
      decideByHand(scenario.from, freshEvent(pool[i % POOL] as TickEvent));
      calls++;
    };
    const xstate: Body = (i) => {
      xstateDecision(scenario.from, freshEvent(pool[i % POOL] as TickEvent));
    };
    const assessment: Body = (i) => {
      const base = pool[i % POOL] as TickEvent;
      assess({ ...base.observation }, base.settings, base.now);
    };
    const warmStart = Date.now();
    let last = Number.NaN;
    for (;;) {
      const m = timeFor(100, machine);
      timeFor(100, hand);
      timeFor(50, xstate);
      timeFor(50, assessment);
      const elapsed = Date.now() - warmStart;
      const stable = Math.abs(m - last) / last < 0.05;
      last = m;
      if ((elapsed >= options.warmupMs && stable) || elapsed >= 3 * options.warmupMs) break;
    }
    const warmupMs = Date.now() - warmStart;
    const m: number[] = [];
    const h: number[] = [];
    const x: number[] = [];
    const a: number[] = [];
    for (let rep = 0; rep < options.reps; rep++) {
      const [tm, th, tx, ta] = timeInTurns(options.repMs, [machine, hand, xstate, assessment]) as [
        number,
        number,
        number,
        number,
      ];
      m.push(tm);
      h.push(th);
      x.push(tx);
      a.push(ta);
    }
    const row: EngineRow = {
      scenario: scenario.name,
      from: scenario.from,
      to: expected.state,
      effects: expected.effects.length,
      microsteps,
      machine: spread(m),
      hand: spread(h),
      ratio: spread(m.map((v, i) => v / (h[i] as number))),
      xstate: spread(x),
      xstateRatio: spread(x.map((v, i) => v / (h[i] as number))),
      assessment: spread(a),
      warmupMs,
      calls,
    };
    rows.push(row);
    log(
      `engine: ${row.scenario}: machine ${formatSpread(row.machine, us)} µs, by hand ${formatSpread(row.hand, us)} µs, ` +
        `ratio ${formatSpread(row.ratio, ratio)}; XState every tick ${formatSpread(row.xstate, us)} µs ` +
        `(${formatSpread(row.xstateRatio, ratio)})`,
    );
  }
  return { rows, agreement, xstate: xstateBuild(), options };
}

/** Which XState build this process loaded: the tests run the development build, the image the production one. */
function xstateBuild(): string {
  const development =
    process.execArgv.some((a) => a.includes('conditions=development')) ||
    process.env.NODE_OPTIONS?.includes('conditions=development');
  return development
    ? 'development build, as the tests run it (the image runs the production build)'
    : 'production build, as the image runs it';
}

export const us = (v: number) => v.toFixed(1);
export const ratio = (v: number) => `${v.toFixed(2)}×`;

export function parseEngineArgs(argv: string[]): EngineOptions {
  const num = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    const value = i >= 0 ? Number(argv[i + 1]) : fallback;
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} needs a positive number`);
    return value;
  };
  return { reps: num('--reps', 5), warmupMs: num('--warmup-ms', 2000), repMs: num('--rep-ms', 300) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const result = runEngine(parseEngineArgs(argv), (line) => process.stderr.write(`${line}\n`));
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify(result)}\n`);
}
