/**
 * Generates diagrams/ from every machine of machines/chart.ts: per machine Mermaid, DOT and SVG, and one
 * state table and one README for them all. Everything is derived from the machine definitions in document
 * order, so the output is byte-stable.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MACHINES, type MachineDescription } from '../../../machines/chart.ts';
import { toDot } from './dot.ts';
import { toMermaid } from './mermaid.ts';
import { type Rendered, toReadme } from './readme.ts';
import { toSvg } from './svg.ts';
import { toStateTable } from './table.ts';

/** File name -> content, in a fixed order: each machine's pictures, then states.md and README.md. */
export async function generateDiagrams(
  machines: readonly MachineDescription[] = MACHINES,
): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const rendered: Rendered[] = [];
  for (const machine of machines) {
    const mermaid = toMermaid(machine);
    const dot = toDot(machine);
    files.set(`${machine.file}.mmd`, mermaid);
    files.set(`${machine.file}.dot`, dot);
    files.set(`${machine.file}.svg`, await toSvg(dot));
    rendered.push({ machine, mermaid });
  }
  files.set('states.md', toStateTable(machines));
  files.set('README.md', toReadme(rendered));
  return files;
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
