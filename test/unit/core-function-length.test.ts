// The reconcile core stays readable as short stages: no function in src/operator/core/ is longer than 80
// lines. A pass that grows a new concern gets a stage of its own (a function with one job), not a branch
// in an existing one. Read with TypeScript's own parser, so arrow functions and methods count too.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const CORE = join(ROOT, 'src/operator/core');
const MAX_LINES = 80;

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });

function longFunctions(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      const named = node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
      const name = named?.getText(source) ?? '(anonymous)';
      if (lines > MAX_LINES) found.push(`${relative(ROOT, file)}:${first + 1} ${name}: ${lines} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the reconcile core', () => {
  it(`has no function longer than ${MAX_LINES} lines`, () => {
    const files = sources(CORE);
    expect(files.length).toBeGreaterThan(10);
    expect(files.flatMap((file) => longFunctions(file))).toEqual([]);
  });

  it('would catch one that is, of any form', () => {
    const body = Array.from({ length: MAX_LINES - 1 }, (_, i) => `  const x${i} = ${i};`).join('\n');
    const file = join(CORE, 'example.ts');
    const text = `function fits() {\n${body.split('\n').slice(1).join('\n')}\n}\nconst long = async () => {\n${body}\n};\n`;
    expect(longFunctions(file, text)).toEqual([
      `src/operator/core/example.ts:${MAX_LINES + 1} long: ${MAX_LINES + 1} lines`,
    ]);
  });
});
