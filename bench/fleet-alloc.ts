/**
 * Where a fleet's promoted garbage is allocated: V8's sampling heap profiler over one in-memory fleet
 * (bench/fleet-runner.ts), counting objects that reached the old generation — those still alive at the end and
 * those a full GC collected (`includeObjectsCollectedByMajorGC`), not those that died young. What reaches the old
 * generation and dies there is what grows the heap between full GCs, and so the peak RSS. Prints the allocating
 * functions by sampled bytes, and the stacks under the top ones. A tool for issue 10, not part of `npm run bench`.
 *
 *   node --conditions=development --expose-gc --import tsx bench/fleet-alloc.ts <size> [top]
 */
import { Session } from 'node:inspector/promises';
import { runFleet } from './fleet-runner.ts';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const size = Number(process.argv[2] ?? 1000);
const top = Number(process.argv[3] ?? 40);
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 16_384,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: false,
});
const run = await runFleet(size);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
const bySite = new Map<string, number>();
const stacks = new Map<string, number>();
const short = (f: ProfileNode['callFrame']) =>
  `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/main\//, '').replace(/^file:\/\//, '')}:${f.lineNumber + 1}`;
const walk = (node: ProfileNode, path: string[]) => {
  const here = [...path, short(node.callFrame)];
  if (node.selfSize > 0) {
    const site = here.at(-1) ?? '';
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    // The innermost frames of our own code, where library and runtime frames say little.
    const ours = here.filter((f) => /(src|bench|machines)\//.test(f)).slice(-4);
    const stack = ours.join(' ← ');
    stacks.set(stack, (stacks.get(stack) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, here);
};
walk(profile.head, []);
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
const total = [...bySite.values()].reduce((a, b) => a + b, 0);
console.log(
  `fleet ${size}: ${run.ready} Ready, peak RSS ${run.peakRssMb.toFixed(0)} MB; sampled old-generation allocations ${mb(total)} MB`,
);
console.log('\nby allocating function:');
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${mb(bytes).padStart(7)} MB  ${site}`);
console.log('\nby our innermost frames:');
for (const [stack, bytes] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${mb(bytes).padStart(7)} MB  ${stack.split(' ← ').reverse().join(' ← ')}`);
