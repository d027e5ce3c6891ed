/**
 * The in-memory fleet at several sizes, each repetition in a fresh child process (bench/fleet-runner.ts), so
 * that one fleet's peak RSS is never another's.
 *
 * The child runs the runner compiled to JavaScript first (`compileRunner`), as the image runs the operator
 * compiled by tsc, not under tsx: tsx's loader adds an isolate of its own, the TypeScript it transpiled and its
 * source maps to the child's memory (measured at 1,000 clusters: peak RSS 232 MB under tsx, 176 MB compiled;
 * heap after GC 26.9 MB and 23.9 MB), none of which `pgfsm run` carries. The code is the same modules (bundled
 * into one file by esbuild; the packages stay external and load as the image loads them).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { parseAllDocuments } from 'yaml';
import type { FleetRun } from './fleet-runner.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const SOURCE = join(HERE, 'fleet-runner.ts');
/** Inside the repository, so that the runner's packages resolve from its node_modules. */
const RUNNER = join(HERE, '..', 'node_modules', '.cache', 'pgfsm', 'fleet-runner.mjs');
export const DEPLOYMENT = join(HERE, '..', 'deploy', 'manager', 'deployment.yaml');

/**
 * The V8 heap budget (`--max-old-space-size`, MB) the shipped Deployment gives the manager container through
 * NODE_OPTIONS: read from deploy/manager/deployment.yaml, so that the fleet is measured as the operator runs and
 * the number has one home. Throws if the Deployment sets none: a fleet figure without it would not be the
 * operator's.
 */
export function deployedHeapBudgetMb(path = DEPLOYMENT): number {
  type Container = { name: string; env?: Array<{ name: string; value?: string }> };
  const deployment = parseAllDocuments(readFileSync(path, 'utf8'))
    .map((doc) => doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Container[] } } } })
    .find((object) => object?.kind === 'Deployment');
  const manager = deployment?.spec?.template?.spec?.containers?.find((c) => c.name === 'manager');
  const options = manager?.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
  const budget = Number(/(?:^|\s)--max-old-space-size=(\d+)(?:\s|$)/.exec(options)?.[1]);
  if (!Number.isInteger(budget) || budget <= 0) {
    throw new Error(`${path}: the manager container sets no NODE_OPTIONS=--max-old-space-size=<MB>`);
  }
  return budget;
}

/**
 * Compiles a bench script and what it imports into one ES module under node_modules/.cache/pgfsm (so that its
 * packages resolve from the checkout): no source maps, the packages left to Node, which resolves them with the
 * conditions of the process that runs the file (the image's: none, XState's production build). Answers the
 * compiled file.
 */
export async function compileScript(source: string, outfile: string): Promise<string> {
  mkdirSync(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  return outfile;
}

/** Compiles bench/fleet-runner.ts (`compileScript`). */
export const compileRunner = (): Promise<string> => compileScript(SOURCE, RUNNER);

export interface FleetOptions {
  sizes: number[];
  reps: number;
  /** Repetitions for sizes of 10,000 and more (one such run takes minutes on 2 cores). */
  largeReps: number;
  /** The V8 heap budget (`--max-old-space-size`, MB) every run gets: the Deployment's (`deployedHeapBudgetMb`). */
  heapBudgetMb: number;
  /**
   * One more run of the largest size without the budget, Node sizing the heap from the machine's memory: the
   * contrast that keeps the budget's effect visible (V8 lets garbage pile up far beyond what the fleet keeps).
   */
  contrast: boolean;
}

export const repsFor = (size: number, options: FleetOptions) =>
  size >= 10_000 ? Math.min(options.reps, options.largeReps) : options.reps;

/**
 * The runner's command line: the compiled runner (`compileRunner`, which must have run), with no conditions, as
 * the image runs (XState's production build), `--expose-gc` for the retained heap after the run.
 */
export const runnerArgs = (size: number, budgetMb?: number) => [
  ...(budgetMb ? [`--max-old-space-size=${budgetMb}`] : []),
  '--expose-gc',
  RUNNER,
  String(size),
];

/** One fleet in a fresh process; `budgetMb` undefined: no heap flag, Node's default sizing. */
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
  await compileRunner();
  const runs: FleetRun[] = [];
  const report = (run: FleetRun, what: string) =>
    log(
      `${what}: ${run.ready}/${run.size} Ready in ${(run.wallMs / 1000).toFixed(1)} s, ${run.passes} passes, ` +
        `peak RSS ${run.peakRssMb.toFixed(0)} MB, heap after GC ${run.heapAfterGcMb.toFixed(0)} MB`,
    );
  for (const size of options.sizes) {
    const reps = repsFor(size, options);
    for (let rep = 1; rep <= reps; rep++) {
      const run = await runFleetProcess(size, options.heapBudgetMb);
      runs.push(run);
      report(run, `fleet ${size}, repetition ${rep}/${reps}, heap budget ${options.heapBudgetMb} MB`);
    }
  }
  if (options.contrast) {
    const largest = Math.max(...options.sizes);
    const run = await runFleetProcess(largest);
    runs.push(run);
    report(run, `fleet ${largest} without a heap budget (contrast)`);
  }
  return runs;
}
