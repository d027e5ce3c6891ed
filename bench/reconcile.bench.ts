/**
 * `npm run bench`: the numbers of issue 10, in one process tree (not tests: numbers vary with the machine).
 * - the engine (bench/engine.ts): µs per tick of the statechart as a pass runs it, against the same decision
 *   written by hand (bench/decide-by-hand.ts), both with the assessment of a fresh observation;
 * - one reconcile pass of a Ready cluster against the in-memory API (the steady state);
 * - the in-memory fleet (bench/fleet.ts): 1,000 / 5,000 / 10,000 clusters from nothing to Ready through the
 *   shipped driver on the simulation, each run in a fresh child process;
 * - the real API server (bench/api-server.bench.ts), last.
 * Writes its sections of bench/results.md (between `<!-- engine:… -->` and `<!-- fleet:… -->` markers).
 *
 * Flags: --engine-reps N (5), --engine-warmup-ms MS (2000), --engine-rep-ms MS (300), --fleet-sizes a,b,c
 * (1000,5000,10000), --fleet-reps N (3), --fleet-large-reps N (3; 1 makes a shorter run: one of 10,000 takes
 * about half a minute on 2 cores),
 * every fleet run with the V8 heap budget deploy/manager/deployment.yaml gives the operator (NODE_OPTIONS),
 * --no-fleet-contrast to skip the one more run of the largest size without it, --no-engine, --no-fleet, --no-api, --no-results; the API server's own flags pass through.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type EngineOptions, type EngineResult, ratio, runEngine, us } from './engine.ts';
import { DEPLOYMENT, deployedHeapBudgetMb, type FleetOptions, runFleets } from './fleet.ts';
import type { FleetRun } from './fleet-runner.ts';
import { writeSection } from './results-section.ts';
import { formatSpread, type Spread, spread } from './stats.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  // The flags are this module's comment: print it rather than a second copy that could drift from it.
  const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  console.log(
    (source.match(/^\/\*\*([\s\S]*?)\*\//)?.[1] ?? '')
      .split('\n')
      .map((line) => line.replace(/^ \* ?/, ''))
      .join('\n')
      .trim(),
  );
  console.log('\nThe API server part takes its own flags: see the comment at the top of bench/api-server.bench.ts.');
  process.exit(0);
}
const command = `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
const value = (flag: string) => {
  const at = argv.indexOf(flag);
  return at >= 0 ? argv[at + 1] : undefined;
};
const positive = (flag: string, fallback: number) => {
  const raw = value(flag);
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} wants a positive number, got ${raw}`);
  return n;
};
const engineOptions: EngineOptions = {
  reps: positive('--engine-reps', 5),
  warmupMs: positive('--engine-warmup-ms', 2000),
  repMs: positive('--engine-rep-ms', 300),
};
const fleetOptions: FleetOptions = {
  sizes: (value('--fleet-sizes') ?? '1000,5000,10000').split(',').map(Number),
  reps: positive('--fleet-reps', 3),
  largeReps: positive('--fleet-large-reps', 3),
  heapBudgetMb: argv.includes('--no-fleet') ? 0 : deployedHeapBudgetMb(),
  contrast: !argv.includes('--no-fleet-contrast'),
};
if (fleetOptions.sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--fleet-sizes wants a,b,c');
const resultsPath = argv.includes('--no-results')
  ? undefined
  : join(dirname(fileURLToPath(import.meta.url)), 'results.md');

const log = (line: string) => console.log(line);
const cpu = cpus();
const context = (started: Date, load: number[]) =>
  [
    `Written by \`${command}\` on ${started.toISOString()}.`,
    '',
    `- machine: ${cpu.length} cores (\`os.cpus().length\`), ${cpu[0]?.model ?? 'unknown CPU'}; Node ${process.version}`,
    `- load average when this part started (1/5/15 min): ${load.map((l) => l.toFixed(1)).join(' / ')} — the machine is shared: other work takes cores from what is measured here`,
  ].join('\n');
const sections: Array<{ name: string; body: string }> = [];

// --- the engine -------------------------------------------------------------------------------------------
if (!argv.includes('--no-engine')) {
  const started = new Date();
  const load = loadavg();
  log(`engine: warm-up ≥ ${engineOptions.warmupMs} ms per scenario, ${engineOptions.reps} × ${engineOptions.repMs} ms`);
  const engine = runEngine(engineOptions, log);
  const pass = await reconcilePass(engineOptions);
  const table = engineTable(engine, pass);
  log(`\n${table}\n`);
  sections.push({
    name: 'engine',
    body: `## Engine: one tick\n\n${context(started, load)}\n${engineNotes(engine)}\n\n${table}`,
  });
}

// --- the in-memory fleet ----------------------------------------------------------------------------------
if (!argv.includes('--no-fleet')) {
  const started = new Date();
  const load = loadavg();
  log(
    `in-memory fleet: sizes ${fleetOptions.sizes.join(', ')}; ${fleetOptions.reps} repetition(s), ` +
      `${fleetOptions.largeReps} for 10,000 and more; each run in a fresh process`,
  );
  const runs = await runFleets(fleetOptions, log);
  const table = fleetTable(runs, fleetOptions);
  log(`\n${table}\n`);
  sections.push({
    name: 'fleet',
    body: `## In-memory fleet\n\n${context(started, load)}\n${fleetNotes(fleetOptions)}\n\n${table}`,
  });
}

const writeSections = () => {
  if (!resultsPath) return;
  for (const { name, body } of sections) writeSection(resultsPath, name, body);
};
writeSections();

// The operator against a real API server (bench/api-server.bench.ts, alone: `npm run bench:api`); its flags pass
// through (`npm run bench -- --reps 1`), `--no-api` leaves it out.
if (!process.argv.includes('--no-api')) {
  const { parseApiBenchArgs, runApiServerBench } = await import('./api-server.bench.ts');
  const argv = process.argv.slice(2);
  await runApiServerBench(parseApiBenchArgs(argv), `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`);
}
// The API server part writes bench/results.md whole: this run's sections go back in.
writeSections();

// --- helpers ----------------------------------------------------------------------------------------------

/** µs per reconcile pass of a Ready cluster against the in-memory API: a probe outside the driver. */
async function reconcilePass(options: EngineOptions): Promise<Spread> {
  const { clusterObject, simulationWith, untilReady } = await import('../src/tools/fixtures/simulation.ts');
  const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true, instances: 3 })], { logs: 0 });
  await untilReady(sim, 'orders');
  const key = { namespace: 'team-a', name: 'orders' };
  const timeFor = async (ms: number) => {
    let calls = 0;
    const start = process.hrtime.bigint();
    const end = start + BigInt(ms * 1e6);
    let now = start;
    do {
      for (let i = 0; i < 50; i++) await sim.reconcileNow(key);
      calls += 50;
      now = process.hrtime.bigint();
    } while (now < end);
    return Number(now - start) / 1e3 / calls;
  };
  await timeFor(options.warmupMs);
  const reps: number[] = [];
  for (let rep = 0; rep < options.reps; rep++) reps.push(await timeFor(options.repMs));
  const result = spread(reps);
  log(`reconcile pass of a Ready cluster (memory API): ${formatSpread(result, us)} µs`);
  return result;
}

function engineNotes(engine: EngineResult): string {
  const { reps, warmupMs, repMs } = engine.options;
  return [
    `- XState: ${engine.xstate}`,
    `- cells: median (min–max) over ${reps} repetitions of ${repMs} ms each, after a warm-up of at least ${warmupMs} ms per scenario (both sides alternating, until the machine's last two 100 ms slices agree within 5 %); machine, by hand, XState every tick and the assessment take turns in 50 ms slices within each repetition (the order rotating), so a burst of other work lands on all four alike`,
    `- **machine**: what a reconcile pass runs for its tick — \`restoreState(stored)\` (shared per state), then machines/tick.ts: the guards XState asks on this course, in its order, on this tick's observation, and the actions XState resolved on it, planning this tick's effects; XState's own macrostep ran on the first tick down each course (per stored state and guard answers) and recorded it, and the figures are the steady state after that`,
    `- **XState every tick**: the same tick through XState's macrostep every time (\`tickThroughXState\`, what a first tick down a course costs before it records): the statechart machinery's full cost, the floor without the replay`,
    `- **by hand**: bench/decide-by-hand.ts — the same decision (state reached and effects, in order) in plain code from the same checks (the guard catalogue's \`holds\`, reading the memoised assessment) and planners; it agrees with the machine, and the machine's replay with XState, on ${engine.agreement} (world, stored state) ticks (every pair twice: recorded, then replayed), checked before measuring`,
    `- includes assessing a fresh observation: **yes**, all three (a new observation object each tick, so the per-observation memo never hits across ticks; within a tick the guards share one assessment)`,
    `- includes building the observation: only a shallow copy of a prebuilt one (~0.1 µs, both sides); not the reads, not the fixture`,
    `- **assessment alone**: \`assess()\` of a fresh observation, the part all share; **XState's own** = XState every tick − by hand (medians): what the statechart's machinery costs when it runs`,
    `- ratio: machine ÷ by hand per repetition (the ≤ 1.5× target is retired; the replay is kept for what it saves the operator end to end: the hand-written section at the end of this file)`,
    '- run under tsx (its transform names every closure created, a call the compiled image does not make): the reference makes no closure per tick so as not to be charged for it',
  ].join('\n');
}

function engineTable(engine: EngineResult, pass: Spread): string {
  const rows = engine.rows.map((r) =>
    [
      r.scenario,
      `${r.from} → ${r.to}`,
      String(r.effects),
      String(r.microsteps),
      formatSpread(r.machine, us),
      formatSpread(r.hand, us),
      formatSpread(r.ratio, ratio),
      formatSpread(r.xstate, us),
      formatSpread(r.xstateRatio, ratio),
      `${us(r.xstate.median - r.hand.median)} (${us((r.xstate.median - r.hand.median) / r.microsteps)} per microstep)`,
      formatSpread(r.assessment, us),
    ].join(' | '),
  );
  return [
    '| scenario | stored → reached | effects | microsteps | machine µs/tick | by hand µs/tick | ratio | XState every tick µs | its ratio | XState’s own µs | assessment alone µs |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r} |`),
    '',
    floorNote(engine),
    '',
    `Reconcile pass of a Ready cluster against the in-memory API (a probe outside the driver: reads from the in-memory API, the tick, the status projection, no write): ${formatSpread(pass, us)} µs per pass.`,
  ].join('\n');
}

/** Whether the target is met, and what XState's own machinery would cost on every tick: the floor without the replay. */
function floorNote(engine: EngineResult): string {
  const over = engine.rows.filter((r) => r.ratio.median > 1.5);
  const perStep = spread(engine.rows.map((r) => (r.xstate.median - r.hand.median) / r.microsteps));
  const met =
    over.length === 0
      ? 'Every scenario is within 1.5× of the hand-written decision.'
      : `Above 1.5×: ${over.map((r) => `${r.scenario} (${ratio(r.ratio.median)})`).join('; ')}.`;
  return (
    `${met} Without the replay (XState every tick) the floor is XState's own cost per microstep, ` +
    `${formatSpread(perStep, us)} µs over these scenarios (each microstep selects transitions, computes exit and ` +
    'entry sets, resolves actions and builds a snapshot), paid once per state passed through, against a decision ' +
    'that costs a few µs beyond the shared assessment (none at all in the deletion steps, which never assess): ' +
    'no trimming around XState brings the 6-microstep cascade or the deletion steps within 1.5×; replaying the ' +
    'course XState took does.'
  );
}

function fleetNotes(options: FleetOptions): string {
  const deployment = relative(join(dirname(fileURLToPath(import.meta.url)), '..'), DEPLOYMENT);
  return [
    `- each run: a fresh \`node --max-old-space-size=${options.heapBudgetMb} --expose-gc fleet-runner.mjs <size>\`, bench/fleet-runner.ts compiled by esbuild first (bench/fleet.ts): JavaScript as the image runs it, XState production build, no tsx loader in the measured process (it added ~55 MB of RSS at 1,000 clusters); RSS includes ~75 MB of Node, code and modules before the first cluster`,
    `- heap budget as deploy/ sets it: \`--max-old-space-size=${options.heapBudgetMb}\`, read from the manager container’s NODE_OPTIONS in ${deployment} (the operator as shipped)${options.contrast ? '; the last column runs the largest fleet once more without it, Node sizing the heap from this machine’s memory (no memory cgroup around the bench): V8 then lets garbage grow far past what the fleet keeps before it collects. In a container without the flag Node 20 sizes it from the memory limit instead (half of it: a 259 MB `heap_size_limit` under a 512 MiB cgroup, see the comment in deploy/manager/deployment.yaml)' : ''}`,
    '- the fleet: `size` PostgresClusters created at once (every second one with the connection pooler), class `standard` with 1 instance, default CNPG simulator delays, on the simulation: the shipped Controller, work queue, 2 workers and reconcile core against the in-memory API, on a virtual clock; the runs keep counts, not logs (`logs: 0`)',
    '- wall time: from the first pass until every cluster is Ready (its last pass reached Ready), the set-up excluded; per cluster = wall ÷ size (flat = linear cost)',
    '- peak RSS: the child’s `process.resourceUsage().maxRSS`, set-up and run included; heap after GC: `heapUsed` after a full GC with every cluster Ready — what the fleet keeps (the in-memory API’s store and the operator’s caches hold each object)',
  ].join('\n');
}

function fleetTable(runs: FleetRun[], options: FleetOptions): string {
  // One column per size with the Deployment's heap budget, and one for the largest size without it (the contrast).
  const columns = [
    ...options.sizes.map((size) => ({
      title: `${size.toLocaleString('en')} clusters`,
      runs: runs.filter((r) => r.size === size && r.budgetMb === options.heapBudgetMb),
    })),
    ...(options.contrast
      ? [
          {
            title: `${Math.max(...options.sizes).toLocaleString('en')}, no heap budget (contrast)`,
            runs: runs.filter((r) => r.budgetMb === undefined),
          },
        ]
      : []),
  ];
  const row = (label: string, pick: (r: FleetRun) => number, format: (v: number) => string, covers: string) =>
    `| ${label} | ${columns.map((c) => formatSpread(spread(c.runs.map(pick)), format)).join(' | ')} | ${covers} |`;
  const f0 = (v: number) => v.toFixed(0);
  const f1 = (v: number) => v.toFixed(1);
  const f2 = (v: number) => v.toFixed(2);
  return [
    `| figure | ${columns.map((c) => c.title).join(' | ')} | what it covers |`,
    `|---|${columns.map(() => '---').join('|')}|---|`,
    `| heap budget | ${columns.map((c) => (c.runs[0]?.budgetMb ? `as deploy/ sets it: --max-old-space-size=${c.runs[0].budgetMb}` : 'none: Node’s default sizing')).join(' | ')} | the V8 flag the run had |`,
    `| repetitions | ${columns.map((c) => String(c.runs.length)).join(' | ')} | a fresh process each |`,
    row('Ready', (r) => r.ready, f0, 'clusters Ready at the end'),
    row('wall time to all Ready', (r) => r.wallMs / 1000, f1, 's'),
    row('wall time per cluster', (r) => r.wallMs / r.size, f2, 'ms; must stay flat (linear cost)'),
    row(
      'wall time per cluster, less waiting for a core',
      (r) => (r.wallMs - (r.runQueueWaitMs ?? Number.NaN)) / r.size,
      f2,
      'ms; the main thread’s run-queue wait (/proc/self/schedstat) taken out: what other work on a shared machine added',
    ),
    row(
      'CPU per cluster',
      (r) => r.cpuMs / r.size,
      f2,
      'ms; user+system of the child over the run (the simulated API and CNPG included)',
    ),
    row('passes', (r) => r.passes, f0, 'reconcile passes of the driver'),
    row('passes per cluster', (r) => r.passes / r.size, f1, ''),
    row('wall time per pass', (r) => (r.wallMs * 1000) / r.passes, f0, 'µs'),
    row('writes per cluster', (r) => r.writes / r.size, f1, 'accepted by the in-memory API (status and children)'),
    row('events per cluster', (r) => r.events / r.size, f1, ''),
    row('simulated time to all Ready', (r) => r.virtualMs / 1000, f0, 's of virtual time (CNPG simulator delays)'),
    row(
      'V8 heap limit',
      (r) => r.heapLimitMb,
      f0,
      'MB, `heap_size_limit`: the budget and the young generation; without a budget, Node’s sizing from the machine’s memory',
    ),
    row('peak RSS', (r) => r.peakRssMb, f0, 'MB; target ≤ 500 MB at 10,000'),
    row('heap after GC', (r) => r.heapAfterGcMb, f0, 'MB, all Ready'),
    row(
      'heap after GC per cluster',
      (r) => (r.heapAfterGcMb * 1024) / r.size,
      f1,
      'KB (the ~11 MB of code and modules included)',
    ),
  ].join('\n');
}
