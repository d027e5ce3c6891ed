/**
 * One in-memory fleet, alone in its process (bench/fleet.ts starts one per size and repetition, so that peak
 * RSS is this fleet's alone): `size` clusters created at once on the simulation — the shipped Controller, work
 * queue, two workers and reconcile core against the in-memory API and the CNPG simulator, on a virtual clock —
 * run until every one is Ready. Prints one JSON line.
 *
 *   node --expose-gc --import tsx bench/fleet-runner.ts <size>
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { isReadyState } from '../machines/states.ts';
import { clusterObject, simulationWith } from '../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../src/tools/simulation/simulation.ts';

export interface FleetRun {
  size: number;
  ready: number;
  /** Wall time from the first pass to every cluster Ready (the simulation's setup excluded). */
  wallMs: number;
  /** Simulated time the same took. */
  virtualMs: number;
  passes: number;
  writes: number;
  events: number;
  /** Peak resident set of this process (kernel's maxRSS), setup and run included. */
  peakRssMb: number;
  /** Heap still used after a full GC, every cluster Ready: what the fleet keeps. */
  heapAfterGcMb: number;
  cpuMs: number;
  /**
   * How long the main thread was ready to run but waited for a core (the kernel's run-queue wait, from
   * /proc/self/schedstat; undefined where there is none): on a machine shared with other work, wall time less this
   * is the time the fleet itself took.
   */
  runQueueWaitMs?: number;
  /** The V8 heap budget the run had (`--max-old-space-size`), if any. */
  budgetMb?: number;
  /**
   * The heap limit V8 ran with (`heap_size_limit`): the budget plus the young generation, or without a budget what
   * Node sized from the machine's memory (or a memory cgroup's limit).
   */
  heapLimitMb: number;
}

/** Simulated time is cheap: look every 10 s of it, give up after 30 min. */
const STEP_MS = 10_000;
const LIMIT_MS = 30 * 60_000;

export interface FleetProbes {
  /** After each step of simulated time, with how many clusters are Ready: e.g. a heap snapshot mid-run. */
  afterStep?: (sim: Simulation, ready: number) => void;
  /** With every cluster Ready, after the full GC: e.g. a heap snapshot of what the fleet keeps. */
  atEnd?: (sim: Simulation) => void;
}

export async function runFleet(size: number, probes: FleetProbes = {}): Promise<FleetRun> {
  // Whether each cluster (c<i>) was Ready after its last pass: one byte each, so that the harness adds next to
  // nothing to the heap it measures (a Map of names and states was ~50 bytes per cluster).
  const isReady = new Uint8Array(size);
  let ready = 0;
  const sim = simulationWith(
    // Half with a pooler, as a mixed fleet: a pooled cluster has two more children and steps.
    Array.from({ length: size }, (_, i) => clusterObject(`c${i}`, { connectionPoolerEnabled: i % 2 === 0 })),
    {
      // Counts only: the fleet's memory is the fleet's, not the run's history.
      logs: 0,
      onPass: (outcome) => {
        if (!outcome.found) return;
        const index = Number(outcome.key.name.slice(1));
        const was = isReady[index] ?? 0;
        const is = isReadyState(outcome.to) ? 1 : 0;
        isReady[index] = is;
        ready += is - was;
      },
    },
  );
  const cpu = process.cpuUsage();
  const waitedBefore = runQueueWaitNs();
  const start = process.hrtime.bigint();
  const virtualStart = sim.clock.now();
  while (ready < size && sim.clock.now() - virtualStart < LIMIT_MS) {
    await sim.run(STEP_MS);
    probes.afterStep?.(sim, ready);
  }
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  const used = process.cpuUsage(cpu);
  const waitedAfter = runQueueWaitNs();
  const virtualMs = sim.clock.now() - virtualStart;
  global.gc?.();
  const heapAfterGcMb = global.gc ? process.memoryUsage().heapUsed / 2 ** 20 : Number.NaN;
  probes.atEnd?.(sim);
  return {
    size,
    ready,
    wallMs,
    virtualMs,
    passes: sim.passCount,
    writes: sim.api.writeCount,
    events: sim.eventCount,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    heapAfterGcMb,
    heapLimitMb: getHeapStatistics().heap_size_limit / 2 ** 20,
    cpuMs: (used.user + used.system) / 1000,
    ...(waitedBefore !== undefined && waitedAfter !== undefined
      ? { runQueueWaitMs: (waitedAfter - waitedBefore) / 1e6 }
      : {}),
  };
}

/** Nanoseconds the main thread has waited on a run queue so far (Linux: /proc/self/schedstat's second field). */
function runQueueWaitNs(): number | undefined {
  try {
    const waited = Number(readFileSync('/proc/self/schedstat', 'utf8').split(' ')[1]);
    return Number.isFinite(waited) ? waited : undefined;
  } catch {
    return undefined;
  }
}

// Run as a program (the path compared as the file it is: the compiled runner may be reached through a link).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const size = Number(process.argv[2]);
  if (!Number.isInteger(size) || size <= 0) throw new Error('usage: fleet-runner.ts <size>');
  process.stdout.write(`${JSON.stringify(await runFleet(size))}\n`);
}
