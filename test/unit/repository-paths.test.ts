/**
 * Every repository path a document or a comment names exists. The layout moved once (the adapters, core and api
 * directories right under src became parts of src/operator and src/tools) and about twenty comments kept pointing
 * at the old places; a reader who follows one finds nothing. Only prose is read: Markdown files, and the comment lines of code and
 * configuration (a path inside a string is the code's business, and the code's own tests).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/tools/package-files.ts';

/** Names that look like repository paths and are not: each with the reason. */
const NOT_OURS = new Map([
  ['src/api/environment.cc', "Node.js's own source, cited in deploy/manager/deployment.yaml"],
  ['deploy/pgfsm', "kubectl's `deploy/<name>`: the Deployment, not a directory"],
]);

const TOP = ['machines', 'src', 'test', 'deploy', 'docs', 'bench', 'diagrams', 'examples'];
const PATH = new RegExp(`(?<![\\w./@-])((?:${TOP.join('|')})/[\\w.-]+(?:/[\\w.-]+)*)`, 'g');

function trackedFiles(): string[] {
  return execFileSync('git', ['ls-files'], { cwd: PACKAGE_ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !f.startsWith('node_modules/') && f !== 'package-lock.json');
}

/** The prose of a file: all of a Markdown file, the comment lines of anything else that has them. */
function prose(file: string, text: string): string[] {
  const lines = text.split('\n');
  if (file.endsWith('.md')) return lines;
  if (/\.(ts|mts|mjs|js)$/.test(file)) {
    return lines.map((l) => l.trim()).filter((l) => l.startsWith('//') || l.startsWith('*') || l.startsWith('/*'));
  }
  if (/\.(ya?ml|toml)$/.test(file) || file.endsWith('Dockerfile') || file === '.ci/run') {
    return lines.filter((l) => l.trim().startsWith('#'));
  }
  return [];
}

describe('paths named in documents and comments', () => {
  it('exist in the repository', () => {
    const missing: string[] = [];
    for (const file of trackedFiles()) {
      const full = join(PACKAGE_ROOT, file);
      if (!existsSync(full)) continue;
      prose(file, readFileSync(full, 'utf8')).forEach((line) => {
        for (const match of line.matchAll(PATH)) {
          const path = (match[1] ?? '').replace(/[.]+$/, '');
          if (NOT_OURS.has(path) || existsSync(join(PACKAGE_ROOT, path))) continue;
          missing.push(`${file}: ${path}`);
        }
      });
    }
    expect(missing).toEqual([]);
  });

  it('keeps its list of look-alikes short, and each of them still in use', () => {
    const all = trackedFiles()
      .map((f) => readFileSync(join(PACKAGE_ROOT, f), 'utf8'))
      .join('\n');
    for (const path of NOT_OURS.keys()) expect(all.includes(path), path).toBe(true);
  });
});
