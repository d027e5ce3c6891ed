/**
 * Heap snapshots of one in-memory fleet (bench/fleet-runner.ts), for bench/heap-owners.ts: one after every
 * step of simulated time whose number is listed (mid-run, where the peak is), and one at the end with every
 * cluster Ready. A tool for finding where the fleet's memory goes (issue 10), not part of `npm run bench`.
 *
 *   node --conditions=development --expose-gc --import tsx bench/fleet-heap.ts <size> <dir> [step,step...]
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { runFleet } from './fleet-runner.ts';

const [sizeArg, dir = '.', stepsArg = ''] = process.argv.slice(2);
const size = Number(sizeArg);
if (!Number.isInteger(size) || size <= 0) throw new Error('usage: fleet-heap.ts <size> <dir> [step,step...]');
mkdirSync(dir, { recursive: true });
const steps = new Set(stepsArg.split(',').filter(Boolean).map(Number));
let step = 0;
const run = await runFleet(size, {
  afterStep: (_sim, ready) => {
    step++;
    if (!steps.has(step)) return;
    global.gc?.();
    const used = process.memoryUsage().heapUsed / 2 ** 20;
    const file = writeHeapSnapshot(join(dir, `fleet-${size}-step${step}.heapsnapshot`));
    console.error(`step ${step}: ${ready}/${size} Ready, heap after GC ${used.toFixed(1)} MB → ${file}`);
  },
  atEnd: () => {
    const file = writeHeapSnapshot(join(dir, `fleet-${size}-end.heapsnapshot`));
    console.error(`end: ${step} steps → ${file}`);
  },
});
console.log(JSON.stringify(run));
