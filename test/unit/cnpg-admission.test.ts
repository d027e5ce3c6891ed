/**
 * docs/cnpg-admission.md cannot rot silently: every row of its rule tables names handlings from the closed set, and
 * every row handled by a CRD rule or the merge check names a test that exists under that title.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

const HANDLINGS = [
  'CRD rule',
  'merge check (Failed.InvalidSpec)',
  'cannot arise (never written)',
  'cannot arise (fixed valid value)',
  'reported as ClusterSpecRejected',
  'reported as PoolerSpecRejected',
  'reported as ManagedRolesSpecRejected',
  'avoided (rolled out in two steps)',
] as const;

/** Where the tests of each kind of handling live. */
const CRD_TESTS = 'test/integration/crds.test.ts';
const MERGE_TESTS = 'test/unit/health/config.test.ts';
const SIZE_TESTS = 'test/unit/crds.test.ts';
const ROLLOUT_TESTS = 'test/integration/cnpg-rollout.test.ts';

/** The titles of the `it(...)` and `it.each(...)(...)` calls of a test file. */
function titles(path: string): Set<string> {
  const found = new Set<string>();
  for (const match of read(path).matchAll(/\bit(?:\.each\([\s\S]*?\))?\(\s*(['"`])((?:\\.|(?!\1).)*)\1/g)) {
    found.add((match[2] ?? '').replace(/\\(.)/g, '$1'));
  }
  return found;
}

interface Row {
  id: string;
  handlings: string[];
  tests: string[];
}

/** The rows of every table whose first column is a rule id such as C12, P3 or K1. */
function rows(markdown: string): Row[] {
  const result: Row[] = [];
  for (const line of markdown.split('\n')) {
    const cells = line.split(' | ').map((cell) => cell.replace(/^\|\s*|\s*\|$/g, '').trim());
    if (!/^[A-Z]\d+$/.test(cells[0] ?? '')) continue;
    const [id = '', , , handling = '', tests = ''] = cells;
    result.push({
      id,
      handlings: handling.split(' + ').map((h) => h.trim()),
      tests: [...tests.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? ''),
    });
  }
  return result;
}

describe('docs/cnpg-admission.md', () => {
  const table = rows(read('docs/cnpg-admission.md'));
  const crdTests = titles(CRD_TESTS);
  const mergeTests = titles(MERGE_TESTS);
  const sizeTests = titles(SIZE_TESTS);
  const rolloutTests = titles(ROLLOUT_TESTS);

  it('has rows for the Cluster webhook, the Pooler webhook and the API server limits, each id once', () => {
    const ids = table.map((row) => row.id);
    expect(ids.filter((id) => id.startsWith('C')).length).toBeGreaterThan(50);
    expect(ids.filter((id) => id.startsWith('P')).length).toBeGreaterThanOrEqual(5);
    expect(ids.filter((id) => id.startsWith('K')).length).toBeGreaterThanOrEqual(2);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('the test files have titles to find', () => {
    expect(crdTests.size).toBeGreaterThan(20);
    expect(mergeTests.size).toBeGreaterThan(20);
  });

  it.each(table.map((row) => [row.id, row] as const))('%s names only handlings from the closed set', (_id, row) => {
    for (const handling of row.handlings) expect(HANDLINGS, `${row.id}: "${handling}"`).toContain(handling);
  });

  it.each(table.map((row) => [row.id, row] as const))('%s names tests that exist', (_id, row) => {
    for (const title of row.tests) {
      expect(
        crdTests.has(title) || mergeTests.has(title) || sizeTests.has(title) || rolloutTests.has(title),
        `${row.id}: no test titled "${title}"`,
      ).toBe(true);
    }
    if (row.handlings.includes('CRD rule')) {
      expect(
        row.tests.some((title) => crdTests.has(title)),
        `${row.id} is a CRD rule: name a test of ${CRD_TESTS}`,
      ).toBe(true);
    }
    if (row.handlings.includes('avoided (rolled out in two steps)')) {
      expect(
        row.tests.some((title) => rolloutTests.has(title)),
        `${row.id} is avoided by a staged rollout: name a test of ${ROLLOUT_TESTS}`,
      ).toBe(true);
    }
    if (row.handlings.includes('merge check (Failed.InvalidSpec)')) {
      expect(
        row.tests.some((title) => mergeTests.has(title)),
        `${row.id} is a merge check: name a test of ${MERGE_TESTS}`,
      ).toBe(true);
    }
  });
});
