/**
 * Benchmarks of the lifecycle engine (not tests: numbers vary with the machine).
 * - one pure tick through the statechart, with the assessment of the observation;
 * - one full reconcile pass of a Ready cluster against the in-memory API (the steady state);
 * - a fleet of clusters from nothing to Ready on the simulation, i.e. through the shipped driver (watches,
 *   mapping, work queue, two workers) on a virtual clock.
 */
import { transition } from 'xstate';
import { postgresClusterMachine } from '../machines/postgres-cluster.ts';
import { restoreState } from '../machines/state-path.ts';
import { healthyFacts, tickOf } from '../src/tools/fixtures/observations.ts';
import { clusterObject, simulationWith, untilReady } from '../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../src/tools/simulation/simulation.ts';

function bench(name: string, iterations: number, fn: () => void | Promise<void>) {
  return async () => {
    for (let i = 0; i < Math.min(iterations / 10, 200); i++) await fn();
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) await fn();
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    console.log(
      `${name.padEnd(44)} ${Math.round((iterations / ms) * 1000)
        .toLocaleString('en')
        .padStart(10)}/s  ${((ms * 1000) / iterations).toFixed(1).padStart(8)} µs`,
    );
  };
}

const ready = restoreState('Ready');
if (!ready) throw new Error('no Ready state');
const ticks = Array.from({ length: 64 }, () => tickOf(healthyFacts));
let n = 0;
await bench('tick: Ready stays Ready (fresh observation)', 5_000, () => {
  transition(postgresClusterMachine, ready, ticks[n++ % ticks.length] as never);
})();

const fresh = restoreState('Pending');
if (!fresh) throw new Error('no Pending state');
await bench('tick: Pending to Ready in one tick (cascade)', 5_000, () => {
  transition(postgresClusterMachine, fresh, tickOf({ ...healthyFacts }) as never);
})();

const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true, instances: 3 })]);
await untilReady(sim, 'orders');
await bench('reconcile pass of a Ready cluster (memory API)', 3_000, async () => {
  await sim.reconcileNow({ namespace: 'team-a', name: 'orders' });
})();

// 300 and 1000: the simulation scales linearly with the fleet (no per-step list, sort or scan of the whole
// fleet in the simulation, its timers or the in-memory API), so large fleets run in seconds.
for (const size of [10, 100, 300, 1000]) {
  const fleet: Simulation = simulationWith(
    Array.from({ length: size }, (_, i) => clusterObject(`c${i}`, { connectionPoolerEnabled: i % 2 === 0 })),
  );
  const start = process.hrtime.bigint();
  await fleet.run(10 * 60_000);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const readyCount = fleet.api
    .list('PostgresCluster')
    .filter((c) => (c.status as { state?: string }).state === 'Ready').length;
  console.log(
    `fleet of ${String(size).padEnd(4)} to Ready: ${readyCount}/${size} ready, ${fleet.passes.length} passes in ${ms.toFixed(0)} ms (${((ms * 1000) / fleet.passes.length).toFixed(0)} µs/pass)`,
  );
}

// The operator against a real API server (bench/api-server.bench.ts, alone: `npm run bench:api`); its flags pass
// through (`npm run bench -- --reps 1`), `--no-api` leaves it out.
if (!process.argv.includes('--no-api')) {
  const { parseApiBenchArgs, runApiServerBench } = await import('./api-server.bench.ts');
  const argv = process.argv.slice(2);
  await runApiServerBench(parseApiBenchArgs(argv), `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`);
}
