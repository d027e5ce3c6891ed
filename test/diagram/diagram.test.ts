import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { type AnyStateNode, createMachine } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import { usedGuards } from '../../machines/guards.ts';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { walk } from '../../machines/walk.ts';
import { generateDiagrams, writeDiagrams } from '../../src/tools/diagram/index.ts';

const REGENERATE = 'npm run diagram';
const diagramsDir = new URL('../../diagrams/', import.meta.url);
const FILES = ['postgres-cluster.mmd', 'postgres-cluster.dot', 'postgres-cluster.svg', 'states.md', 'README.md'];

// Generated once: rendering the SVG starts a WASM Graphviz.
const generated = generateDiagrams();
const file = async (name: string) => {
  const content = (await generated).get(name);
  if (content === undefined) throw new Error(`${name} was not generated`);
  return content;
};

// The oracle below reads the machine directly (not through machines/walk.ts), so a walker bug
// cannot hide itself.
const nodes = getStateNodes(postgresClusterMachine.root) as AnyStateNode[];
const leaves = nodes.filter((n) => Object.keys(n.states).length === 0);
const transitionsOf = (n: AnyStateNode) => [...n.transitions.values()].flat().concat(n.always ?? []);
const mermaidId = (n: AnyStateNode) => n.path.join('_');
const guardName = (guard: unknown) =>
  typeof guard === 'string' ? guard : ((guard as { type?: string } | undefined)?.type ?? '');

describe('committed diagrams', () => {
  it.each(FILES)('%s equals what the machine generates', async (name) => {
    const committed = await readFile(new URL(name, diagramsDir), 'utf8').catch(() => '(missing)');
    expect(committed, `diagrams/${name} is stale: run ${REGENERATE}`).toBe(await file(name));
  });

  it('generates exactly the committed file set, byte-identically on a second run', async () => {
    const again = await generateDiagrams();
    expect([...again.keys()]).toEqual(FILES);
    for (const [name, content] of again) expect(content, name).toBe(await file(name));
  });

  it('writeDiagrams reports stale files, writes them, then reports none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pgfsm-diagram-'));
    try {
      const expected = FILES.map((name) => join(dir, name));
      expect(await writeDiagrams(dir, { check: true })).toEqual(expected);
      await expect(readFile(join(dir, 'states.md'), 'utf8')).rejects.toThrow();
      expect(await writeDiagrams(dir, { check: false })).toEqual(expected);
      expect(await readFile(join(dir, 'states.md'), 'utf8')).toBe(await file('states.md'));
      expect(await writeDiagrams(dir, { check: true })).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('svg', () => {
  it('is well-formed XML', async () => {
    expect(XMLValidator.validate(await file('postgres-cluster.svg'))).toBe(true);
  });

  it.each(nodes.map((n) => [n.id, n.key]))('names %s', async (_id, key) => {
    expect(await file('postgres-cluster.svg')).toContain(`>${key}</text>`);
  });

  it('shows the guard of every transition that changes state', async () => {
    const svg = await file('postgres-cluster.svg');
    const printed = (guard: unknown) => {
      const params = (guard as { params?: Record<string, unknown> }).params;
      return params ? `${guardName(guard)}(${Object.values(params).join(', ')})` : guardName(guard);
    };
    for (const n of nodes) {
      for (const t of transitionsOf(n)) {
        if (t.guard && t.target?.length) expect(svg, n.id).toContain(`[${printed(t.guard)}]</text>`);
      }
    }
  });
});

describe('mermaid', () => {
  const edgeLine = /^\s*(\w+) --> (\w+) : (.+)$/;

  it('declares every state node under its key', async () => {
    const text = await file('postgres-cluster.mmd');
    for (const n of nodes) expect(text, n.id).toMatch(new RegExp(`^\\s*state "${n.key}" as ${mermaidId(n)}\\b`, 'm'));
  });

  it('draws one edge per transition target, and nothing else', async () => {
    const text = await file('postgres-cluster.mmd');
    const drawn = text
      .split('\n')
      .map((line) => edgeLine.exec(line))
      .filter((m) => m !== null)
      .map(([, from, to]) => `${from} --> ${to}`);
    const expected = nodes.flatMap((n) =>
      transitionsOf(n).flatMap((t) => (t.target ?? []).map((to) => `${mermaidId(n)} --> ${mermaidId(to)}`)),
    );
    expect(drawn.length).toBe(expected.length);
    expect([...drawn].sort()).toEqual([...expected].sort());
  });

  it('labels each edge with its event (always for eventless) and guard', async () => {
    const lines = (await file('postgres-cluster.mmd')).split('\n');
    for (const n of nodes) {
      for (const t of transitionsOf(n)) {
        for (const to of t.target ?? []) {
          const label = `${t.eventType === '' ? 'always' : t.eventType}${t.guard ? ` [${guardName(t.guard)}` : ''}`;
          const prefix = `  ${mermaidId(n)} --> ${mermaidId(to)} : ${label}`;
          expect(
            lines.some((l) => l.startsWith(prefix)),
            prefix,
          ).toBe(true);
        }
      }
    }
  });

  it('marks the initial states and the final state', async () => {
    const text = await file('postgres-cluster.mmd');
    for (const n of [postgresClusterMachine.root, ...nodes]) {
      const initial = n.type === 'compound' ? n.initial.target[0] : undefined;
      if (initial) expect(text).toContain(`[*] --> ${mermaidId(initial)}\n`);
      if (n.type === 'final') expect(text).toContain(`${mermaidId(n)} --> [*]\n`);
    }
  });

  it('is embedded unchanged in README.md with the SVG and the table', async () => {
    const readme = await file('README.md');
    expect(readme).toContain(`\`\`\`mermaid\n${await file('postgres-cluster.mmd')}\`\`\``);
    expect(readme).toContain('![statechart](postgres-cluster.svg)');
    expect(readme).toContain('(states.md)');
    expect(readme).toContain('Generated by `npm run diagram` from machines/postgres-cluster.ts — do not edit');
  });
});

describe('states.md', () => {
  it.each(leaves.map((n) => [n.path.join('.')]))('has a row for %s', async (path) => {
    const rows = (await file('states.md')).split('\n').filter((l) => l.startsWith(`| \`${path}\` |`));
    expect(rows).toHaveLength(1);
  });

  it('has no rows for states that cannot be current', async () => {
    const stateTable = (await file('states.md')).split('## Guards')[0] ?? '';
    expect(stateTable.split('\n').filter((l) => l.startsWith('| `'))).toHaveLength(leaves.length);
  });

  it('lists targetless transitions as "stays while", inherited ones included', async () => {
    const rows = (await file('states.md')).split('\n').filter((l) => l.startsWith('| `'));
    const lineage = (n: AnyStateNode): AnyStateNode[] => (n.parent ? [n, ...lineage(n.parent)] : [n]);
    for (const leaf of leaves) {
      const row = rows.find((l) => l.startsWith(`| \`${leaf.path.join('.')}\` |`)) ?? '';
      const targetless = lineage(leaf)
        .flatMap(transitionsOf)
        .filter((t) => !t.target?.length);
      expect(row.split('stays while').length - 1, leaf.id).toBe(targetless.length);
      for (const t of targetless) expect(row).toContain(`stays while \`[${guardName(t.guard)}`);
    }
  });

  it('describes every guard the machine uses', async () => {
    const table = await file('states.md');
    const guards = new Set(
      nodes.flatMap((n) =>
        transitionsOf(n)
          .map((t) => guardName(t.guard))
          .filter(Boolean),
      ),
    );
    expect(guards.size).toBeGreaterThan(0);
    for (const g of guards) expect(table).toMatch(new RegExp(`^\\| \`${g}\` \\| \\S`, 'm'));
  });

  it('refuses to generate when a guard has no description', () => {
    const machine = createMachine({
      initial: 'a',
      states: { a: { on: { go: { guard: 'undescribedGuard', target: 'b' } } }, b: {} },
    });
    expect(() => usedGuards(walk(machine))).toThrow(/describe \[undescribedGuard\]/);
  });
});
