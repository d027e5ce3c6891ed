/**
 * The in-memory fleet at several sizes, each repetition in a fresh child process (bench/fleet-runner.ts), so
 * that one fleet's peak RSS is never another's.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FleetRun } from './fleet-runner.ts';

const RUNNER = join(dirname(fileURLToPath(import.meta.url)), 'fleet-runner.ts');

export interface FleetOptions {
  sizes: number[];
  reps: number;
  /** Repetitions for sizes of 10,000 and more (one such run takes minutes on 2 cores). */
  largeReps: number;
  /**
   * A V8 heap budget (`--max-old-space-size`, MB) for one more run of the largest size, as a container's memory
   * limit would set it: without one V8 lets garbage pile up far beyond what the fleet keeps. 0: no such run.
   */
  budgetMb: number;
}

export const repsFor = (size: number, options: FleetOptions) =>
  size >= 10_000 ? Math.min(options.reps, options.largeReps) : options.reps;

/**
 * The runner's command line: the same loader and conditions as `npm run bench` (XState's development build, as
 * the image runs it), `--expose-gc` for the retained heap after the run.
 */
export const runnerArgs = (size: number, budgetMb?: number) => [
  ...(budgetMb ? [`--max-old-space-size=${budgetMb}`] : []),
  '--conditions=development',
  '--expose-gc',
  '--import',
  'tsx',
  RUNNER,
  String(size),
];

export function runFleetProcess(size: number, budgetMb?: number): Promise<FleetRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, runnerArgs(size, budgetMb), { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`fleet runner for ${size} exited with ${code}`));
      try {
        resolve({
          ...(JSON.parse(out.trim().split('\n').at(-1) ?? '') as FleetRun),
          ...(budgetMb ? { budgetMb } : {}),
        });
      } catch (error) {
        reject(new Error(`fleet runner for ${size} printed no result: ${String(error)}`));
      }
    });
  });
}

export async function runFleets(options: FleetOptions, log: (line: string) => void): Promise<FleetRun[]> {
  const runs: FleetRun[] = [];
  for (const size of options.sizes) {
    const reps = repsFor(size, options);
    for (let rep = 1; rep <= reps; rep++) {
      const run = await runFleetProcess(size);
      runs.push(run);
      log(
        `fleet ${size}, repetition ${rep}/${reps}: ${run.ready}/${size} Ready in ${(run.wallMs / 1000).toFixed(1)} s, ` +
          `${run.passes} passes, peak RSS ${run.peakRssMb.toFixed(0)} MB, heap after GC ${run.heapAfterGcMb.toFixed(0)} MB`,
      );
    }
  }
  const largest = Math.max(...options.sizes);
  if (options.budgetMb > 0) {
    const run = await runFleetProcess(largest, options.budgetMb);
    runs.push(run);
    log(
      `fleet ${largest} with a ${options.budgetMb} MB heap budget: ${run.ready}/${largest} Ready in ${(run.wallMs / 1000).toFixed(1)} s, ` +
        `peak RSS ${run.peakRssMb.toFixed(0)} MB`,
    );
  }
  return runs;
}
