/**
 * docs/operations.md and docs/databases.md against the code: their generated sections must be exactly what
 * src/tools/generate/docs.ts writes, the tables must name everything they document, and their links must
 * lead somewhere.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DATABASE_COMPONENTS,
  DATABASE_CONDITION_OF,
  DatabaseReason,
} from '../../src/operator/domain/database/vocabulary.ts';
import { EventReason, Reason } from '../../src/operator/domain/vocabulary.ts';
import { OperatorMetrics } from '../../src/operator/driver/metrics.ts';
import { DATABASE_SECTIONS, REGENERATE, SECTIONS } from '../../src/tools/docs/index.ts';
import { closeMarker, fillSections, openMarker, sectionNames } from '../../src/tools/docs/markdown.ts';
import { runOptions } from '../../src/tools/docs/options.ts';
import {
  DATABASES_DOC,
  OPERATIONS_DOC,
  renderDatabasesDoc,
  renderOperationsDoc,
} from '../../src/tools/generate/docs.ts';

const committed = readFileSync(OPERATIONS_DOC, 'utf8');
const committedDatabases = readFileSync(DATABASES_DOC, 'utf8');
let generated = '';
let generatedDatabases = '';

beforeAll(async () => {
  [generated, generatedDatabases] = await Promise.all([
    renderOperationsDoc(committed),
    renderDatabasesDoc(committedDatabases),
  ]);
}, 60_000);

/** Whether `committed` is what the generator writes; a mismatch names the first differing line. */
function expectGenerated(name: string, committedDoc: string, generatedDoc: string) {
  const a = committedDoc.split('\n');
  const b = generatedDoc.split('\n');
  const line = a.findIndex((l, i) => l !== b[i]);
  const where = line < 0 ? '' : ` (line ${line + 1}: expected ${JSON.stringify(b[line] ?? '')})`;
  expect(committedDoc === generatedDoc, `${name} is stale${where} — run: ${REGENERATE}`).toBe(true);
}

/** Its local links, each leading to a file that exists. */
function expectLinksExist(file: string, doc: string, atLeast: number) {
  const links = [...doc.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1] ?? '');
  const local = links.filter((l) => !/^[a-z]+:/.test(l));
  expect(local.length).toBeGreaterThan(atLeast);
  for (const link of local) expect(existsSync(join(dirname(file), link)), link).toBe(true);
}

/** The body of one generated section of `doc`. */
const section = (doc: string, name: string) =>
  doc.slice(doc.indexOf(openMarker(name)) + openMarker(name).length, doc.indexOf(closeMarker(name)));

describe('docs/operations.md', () => {
  it('is what the generator writes', () => {
    // A mismatch names the first differing line; the whole diff is one run of the generator away.
    expectGenerated('docs/operations.md', committed, generated);
  });

  it('has every generated section, each once', () => {
    expect(sectionNames(committed)).toEqual([...SECTIONS]);
  });

  it('lists every option of `pgfsm run` with its environment variable', () => {
    const body = section(generated, 'run-options');
    for (const option of runOptions()) {
      expect(body).toContain(`\`${option.flags}\``);
      if (option.env) expect(body).toContain(`\`${option.env}\``);
    }
  });

  it('lists every metric the operator exports', async () => {
    const body = section(generated, 'metrics');
    const metrics = await new OperatorMetrics({ defaultMetrics: false }).registry.getMetricsAsJSON();
    expect(metrics.length).toBeGreaterThan(10);
    for (const m of metrics) expect(body).toContain(`\`${m.name}\``);
  });

  it('lists every reason of the vocabulary among the conditions, and every event of the machine and its writes', () => {
    const conditions = section(generated, 'conditions');
    for (const reason of Object.values(Reason)) expect(conditions).toContain(`\`${reason}\``);
    const events = section(generated, 'events');
    // The core's own (StoredStateDiscarded, DestructiveWriteRefused, StatusRejected) need a pass gone wrong.
    const coreOnly = new Set<string>([
      EventReason.StoredStateDiscarded,
      EventReason.DestructiveWriteRefused,
      EventReason.StatusRejected,
    ]);
    for (const reason of Object.values(EventReason).filter((r) => !coreOnly.has(r))) {
      expect(events).toContain(`\`${reason}\``);
    }
    for (const reason of ['ClusterApplyFailed', 'CleanupFailed']) expect(events).toContain(`\`${reason}\``);
    // No event is a component's condition turning True, nor named after a condition it does not mean.
    for (const retired of ['SecretReady', 'CNPGClusterReady', 'ManagedRolesReady', 'PoolerReady', 'ConfigMapReady']) {
      expect(events).not.toContain(`\`${retired}\``);
    }
    expect(events).not.toMatch(/^\| `ClusterReady` /m);
  });

  it('documents the stable log keys', () => {
    const keys = section(generated, 'log-keys');
    for (const key of ['namespace', 'name', 'state', 'transition', 'reason']) expect(keys).toContain(`\`${key}\``);
  });

  it('links only to files that exist', () => {
    expectLinksExist(OPERATIONS_DOC, committed, 5);
  });
});

describe('docs/databases.md', () => {
  it('is what the generator writes', () => {
    expectGenerated('docs/databases.md', committedDatabases, generatedDatabases);
  });

  it('has the lifecycle sections a cluster has, each once', () => {
    expect(sectionNames(committedDatabases)).toEqual([...DATABASE_SECTIONS]);
    expect(DATABASE_SECTIONS.every((name) => (SECTIONS as readonly string[]).includes(name))).toBe(true);
  });

  it('lists every condition and every reason of the database vocabulary, and the machine’s events', () => {
    const conditions = section(generatedDatabases, 'conditions');
    for (const c of DATABASE_COMPONENTS) expect(conditions).toContain(`\`${DATABASE_CONDITION_OF[c]}\``);
    for (const reason of Object.values(DatabaseReason)) expect(conditions).toContain(`\`${reason}\``);
    const events = section(generatedDatabases, 'events');
    for (const reason of [
      'SecretsCreated',
      'SecretUpdated',
      'CNPGDatabaseCreated',
      'CNPGDatabaseUpdated',
      'PrivilegesGranted',
      'Ready',
      'NotReady',
      'RoleClaimed',
      'CleanupComplete',
    ]) {
      expect(events).toContain(`\`${reason}\``);
    }
  });

  it('links only to files that exist', () => {
    expectLinksExist(DATABASES_DOC, committedDatabases, 4);
  });
});

describe('generated sections', () => {
  const doc = [
    '# T',
    'before',
    openMarker('a'),
    'old a',
    closeMarker('a'),
    'middle',
    openMarker('b'),
    closeMarker('b'),
  ];

  it('replaces what is between the markers and keeps everything else', () => {
    const filled = fillSections(doc.join('\n'), { a: 'new a', b: '| x |' });
    expect(filled).toBe(
      [
        '# T',
        'before',
        openMarker('a'),
        'new a',
        closeMarker('a'),
        'middle',
        openMarker('b'),
        '| x |',
        closeMarker('b'),
      ].join('\n'),
    );
    expect(fillSections(filled, { a: 'new a', b: '| x |' })).toBe(filled);
  });

  it('refuses a section nothing generates and a body with no section', () => {
    expect(() => fillSections(doc.join('\n'), { a: '' })).toThrow(/generated:b/);
    expect(() => fillSections(doc.join('\n'), { a: '', b: '', c: '' })).toThrow(/c/);
  });

  it('refuses unbalanced or repeated markers', () => {
    expect(() => sectionNames(`${openMarker('a')}\n`)).toThrow(/never closed/);
    expect(() => sectionNames(`${openMarker('a')}\n${openMarker('b')}`)).toThrow(/inside/);
    expect(() => sectionNames(closeMarker('a'))).toThrow(/closes nothing/);
    const twice = `${openMarker('a')}${closeMarker('a')}${openMarker('a')}${closeMarker('a')}`;
    expect(() => sectionNames(twice)).toThrow(/twice/);
  });
});
