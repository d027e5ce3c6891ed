/**
 * No test ever skips. A skipped test reports nothing and passes the run, so a check that needs something the
 * machine lacks (a downloaded module, a binary) belongs where that thing is sure to be, and fails naming what is
 * missing there (test/integration/cnpg-image-names.test.ts is how CloudNativePG's module is reached).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

// Vitest's ways to skip: modifiers on it/test/describe/suite, and a skip from inside a running test.
const SKIPS = new RegExp(
  [
    String.raw`\b(?:it|test|describe|suite)\s*\.\s*(?:skip|skipIf|runIf|todo)\b`,
    String.raw`\b(?:ctx|context|t)\s*\.\s*skip\s*\(`,
  ].join('|'),
);

describe('the test suites', () => {
  it('skip nothing, under any condition', () => {
    const files = [...sources(TEST_DIR)];
    expect(files.length).toBeGreaterThan(50);
    const skipping = files
      .filter((file) => file !== fileURLToPath(import.meta.url))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, i) => (SKIPS.test(line) ? [`${relative(TEST_DIR, file)}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(skipping).toEqual([]);
  });
});
