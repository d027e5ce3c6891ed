/**
 * Generates diagrams/ from the lifecycle machine: Mermaid, DOT, SVG, the state table and a README.
 * Everything is derived from the machine definition in document order, so the output is byte-stable.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import { walk } from '../../../machines/walk.ts';
import { toDot } from './dot.ts';
import { toMermaid } from './mermaid.ts';
import { toReadme } from './readme.ts';
import { toSvg } from './svg.ts';
import { toStateTable } from './table.ts';

/** File name -> content, in a fixed order. */
export async function generateDiagrams(
  machine: AnyStateMachine = postgresClusterMachine,
): Promise<Map<string, string>> {
  const chart = walk(machine);
  const mermaid = toMermaid(chart);
  const dot = toDot(chart);
  return new Map([
    ['postgres-cluster.mmd', mermaid],
    ['postgres-cluster.dot', dot],
    ['postgres-cluster.svg', await toSvg(dot)],
    ['states.md', toStateTable(chart)],
    ['README.md', toReadme(chart.id, mermaid)],
  ]);
}

const readOrUndefined = (path: string) => readFile(path, 'utf8').catch(() => undefined);

/** Writes the files that differ (or, with `check`, only reports them); returns their paths. */
export async function writeDiagrams(outDir: string, opts: { check: boolean }): Promise<string[]> {
  const stale: string[] = [];
  for (const [name, content] of await generateDiagrams()) {
    const path = join(outDir, name);
    if ((await readOrUndefined(path)) === content) continue;
    stale.push(path);
    if (!opts.check) {
      await mkdir(outDir, { recursive: true });
      await writeFile(path, content);
    }
  }
  return stale;
}
