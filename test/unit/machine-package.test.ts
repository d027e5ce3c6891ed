/**
 * The machines are one package: machines/ holds the definitions (the PostgresCluster's and the
 * PostgresDatabase's), their meta, the guard catalogues, the one walker, the state-path codec and the
 * summary-condition rule, and nothing under src/ keeps a copy.
 * Read from the sources (TypeScript's parser, no type checker), this fails when
 * (a) a state name appears as a string literal outside machines/,
 * (b) a second walker, gate list or summary rule appears outside machines/,
 * (c) the operator wing (or the machine package, which ships with it) imports from the tools wing.
 * Each rule is first checked against sources that break it, and against look-alikes that must pass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { databaseChart, databaseLifecycle, lifecycle, lifecycleChart, MACHINES } from '../../machines/chart.ts';
import { DATABASE_GATES, DATABASE_GUARDS } from '../../machines/database-guards.ts';
import { databaseMetaOf, restoreDatabaseState, storableDatabaseStates } from '../../machines/database-state-path.ts';
import {
  DATABASE_FINALIZER_STEP,
  DATABASE_MACHINE_ID,
  DATABASE_READY_STATE,
  DATABASE_SEQUENCES,
  isDatabaseDeletingState,
} from '../../machines/database-states.ts';
import { GATES, GUARDS, type GuardEntry, isGate, usedGuards } from '../../machines/guards.ts';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { postgresDatabaseMachine } from '../../machines/postgres-database.ts';
import { metaOf, restoreState, storableStates } from '../../machines/state-path.ts';
import {
  FINALIZER_STEP,
  isDeletingState,
  isReadyState,
  MACHINE_ID,
  READY_STATE,
  SEQUENCES,
} from '../../machines/states.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

// ---- The rules ----

/**
 * Every state's dotted path, from the machines themselves (the cluster's and the database's): `Pending`,
 * `Provisioning`, `Provisioning.Secret`, `Deleting.Secrets`, …
 */
const CHARTS = [lifecycleChart, databaseChart];
const STATE_NAMES: ReadonlySet<string> = new Set(CHARTS.flatMap((c) => c.states.map((s) => s.path)));
const COMPOUND_NAMES: ReadonlySet<string> = new Set(
  CHARTS.flatMap((c) => c.states.filter((s) => s.children.length > 0).map((s) => s.path)),
);
/** What every state id starts with: `#postgresCluster`, `#postgresDatabase`. */
const STATE_ID_PREFIXES = [MACHINE_ID, DATABASE_MACHINE_ID].map((id) => `#${id}`);
const CLUSTER_COMPOUNDS = new Set(lifecycleChart.states.filter((s) => s.children.length > 0).map((s) => s.path));
const DATABASE_COMPOUNDS = new Set(databaseChart.states.filter((s) => s.children.length > 0).map((s) => s.path));

/**
 * Expressions that hold a state path, by the names the code gives them: `status.state` (never another
 * object's `state`: a health verdict's `state` is `Ready` too, and is not a state of the machine), a
 * snapshot's `value`, and the variables the core and explain keep a path in.
 */
const STATE_VARIABLES = new Set(['state', 'from', 'to', 'stored', 'statePath', 'currentPath', 'nextPath']);
const STATE_PROPERTIES = new Set(['from', 'to', 'value', 'currentPath', 'nextPath']);

const unwrap = (e: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e) ? unwrap(e.expression) : e;

function holdsStatePath(expression: ts.Expression): boolean {
  const e = unwrap(expression);
  if (ts.isIdentifier(e)) return STATE_VARIABLES.has(e.text);
  if (!ts.isPropertyAccessExpression(e)) return false;
  if (STATE_PROPERTIES.has(e.name.text)) return true;
  if (e.name.text !== 'state') return false;
  const receiver = unwrap(e.expression);
  return (
    (ts.isIdentifier(receiver) && receiver.text === 'status') ||
    (ts.isPropertyAccessExpression(receiver) && receiver.name.text === 'status')
  );
}

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);
const RELATIONAL = new Set([
  ts.SyntaxKind.LessThanToken,
  ts.SyntaxKind.LessThanEqualsToken,
  ts.SyntaxKind.GreaterThanToken,
  ts.SyntaxKind.GreaterThanEqualsToken,
]);

/**
 * (a) Where a literal is used as a state name. A top-level name (`Ready`, `Deleting`, …) shares its word
 * with a phase, a condition type or a health verdict, so it counts only where it meets a state path:
 * compared with one, a `case` of a switch on one, or a prefix/suffix test (`to.startsWith('Deleting')`).
 * A dotted path (`Deleting.RemoveFinalizer`) or a state id (`#postgresCluster.Ready`, `#postgresDatabase.Ready`)
 * is a state name wherever it appears.
 */
function stateLiteral(node: ts.StringLiteralLike): string | undefined {
  const text = node.text;
  if (STATE_ID_PREFIXES.some((prefix) => text.startsWith(prefix))) return 'a state id';
  if (!STATE_NAMES.has(text)) return undefined;
  if (text.includes('.')) return 'a state path';
  const parent = node.parent;
  if (ts.isBinaryExpression(parent) && EQUALITY.has(parent.operatorToken.kind)) {
    const other = parent.left === node ? parent.right : parent.left;
    if (holdsStatePath(other)) return 'compared with a state';
  }
  if (ts.isCaseClause(parent) && holdsStatePath(parent.parent.parent.expression)) return 'a case of a state';
  if (
    ts.isCallExpression(parent) &&
    parent.arguments.includes(node as ts.Expression) &&
    ts.isPropertyAccessExpression(parent.expression) &&
    ['startsWith', 'endsWith'].includes(parent.expression.name.text)
  ) {
    return 'a state prefix test';
  }
  return undefined;
}

const WALKER_TYPES = new Set(['AnyStateNode', 'StateNode', 'AnyTransitionDefinition', 'TransitionDefinition']);
const SUMMARY_FIELDS = new Set(['reconciling', 'stalled', 'deadline']);

const isMetaExpression = (e: ts.Expression) =>
  (ts.isIdentifier(e) && (e.text === 'meta' || e.text === 'm')) ||
  (ts.isPropertyAccessExpression(e) && e.name.text === 'meta');

/** A summary field of a state's meta used to decide something: the summary rule, written again. */
function decidesOnMeta(node: ts.PropertyAccessExpression): boolean {
  if (!SUMMARY_FIELDS.has(node.name.text) || !isMetaExpression(unwrap(node.expression))) return false;
  const parent = node.parent;
  if (ts.isBinaryExpression(parent)) {
    const kind = parent.operatorToken.kind;
    return kind === ts.SyntaxKind.AmpersandAmpersandToken || kind === ts.SyntaxKind.BarBarToken;
  }
  if (ts.isPrefixUnaryExpression(parent)) return parent.operator === ts.SyntaxKind.ExclamationToken;
  if (ts.isConditionalExpression(parent)) return parent.condition === node;
  if (ts.isIfStatement(parent)) return parent.expression === node;
  return false;
}

/** (b) A second walker, gate list or summary rule. */
function secondCopy(node: ts.Node): string | undefined {
  if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
    if (node.moduleSpecifier.text === 'xstate/graph') return 'a walker (xstate/graph)';
    const named = node.importClause?.namedBindings;
    if (node.moduleSpecifier.text === 'xstate' && named && ts.isNamedImports(named)) {
      const walkerType = named.elements.find((e) => WALKER_TYPES.has(e.name.text));
      if (walkerType) return `a walker (${walkerType.name.text})`;
    }
  }
  if (
    ts.isPropertyAccessExpression(node) &&
    ['root', 'implementations'].includes(node.name.text) &&
    /machine$/i.test(node.expression.getText())
  ) {
    return `a walker (machine.${node.name.text})`;
  }
  // A `gate` that flags or declares a gate (a boolean or an object); the diagram's `gate` colours do not.
  if (ts.isPropertyAssignment(node) && node.name.getText() === 'gate') {
    const value = node.initializer.kind;
    if (value === ts.SyntaxKind.TrueKeyword || value === ts.SyntaxKind.ObjectLiteralExpression) return 'a gate flag';
  }
  if (ts.isVariableDeclaration(node) && /(^|_)GATES$/.test(node.name.getText())) return 'a gate list';
  if (ts.isPropertyAccessExpression(node) && decidesOnMeta(node)) return `a summary rule (meta.${node.name.text})`;
  if (ts.isBinaryExpression(node) && RELATIONAL.has(node.operatorToken.kind)) {
    if (node.getText().includes('progressDeadlineMs')) return 'a summary rule (the progress deadline)';
  }
  return undefined;
}

/** Every module a file names: static imports and re-exports, and `import()` with a literal. */
function specifiers(source: ts.SourceFile): ts.StringLiteral[] {
  const out: ts.StringLiteral[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push(node.moduleSpecifier);
    }
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      out.push(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const TOOLS = resolve(ROOT, 'src/tools');
const SHIPPED = ['src/operator/', 'machines/'];

/** Problems of one file, as `path:line: what` lines. `path` is relative to the repository. */
function lintSource(path: string, text: string): string[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const problems: string[] = [];
  const report = (node: ts.Node, what: string) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    problems.push(`${path}:${line}: ${what}`);
  };
  if (!path.startsWith('machines/')) {
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        const why = stateLiteral(node);
        if (why) report(node, `state name '${node.text}' as a literal (${why})`);
      }
      if (ts.isTemplateHead(node) && COMPOUND_NAMES.has(node.text.replace(/\.$/, '')) && node.text.endsWith('.')) {
        report(node, `state path built from '${node.text}'`);
      }
      const copy = secondCopy(node);
      if (copy) report(node, copy);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  if (SHIPPED.some((wing) => path.startsWith(wing))) {
    for (const spec of specifiers(source)) {
      if (!spec.text.startsWith('.')) continue;
      const target = resolve(ROOT, dirname(path), spec.text);
      if (target === TOOLS || target.startsWith(`${TOOLS}${sep}`))
        report(spec, `imports the tools wing (${spec.text})`);
    }
  }
  return problems;
}

// ---- The package ----

/** A guard calls the check it names (or is that check), and means something. */
function expectCallsItsCheck(entry: GuardEntry<never, never>): void {
  const calls = String(entry.holds).includes(entry.check) || entry.holds.name === entry.check;
  expect(calls, `${entry.check} in ${String(entry.holds)}`).toBe(true);
  expect(entry.meaning).toMatch(/\w/);
}

describe('the machine package: nothing outside machines/ keeps a copy of it', () => {
  const files = [...tsFiles('src'), ...tsFiles('machines')];

  it('scans the whole tree (not vacuously true)', () => {
    expect(files).toContain('src/operator/core/reconcile.ts');
    expect(files).toContain('src/tools/diagram/dot.ts');
    expect(files).toContain('machines/postgres-cluster.ts');
    expect(files).toContain('machines/postgres-database.ts');
    expect(files).toContain('src/operator/core/database/reconcile.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it('no state name as a literal, no second walker, gate list or summary rule, no operator → tools import', () => {
    const problems = files.flatMap((path) => lintSource(path, readFileSync(join(ROOT, path), 'utf8')));
    expect(problems).toEqual([]);
  });
});

describe('the package lint catches what it should', () => {
  const lint = (path: string, lines: string[]) =>
    lintSource(path, lines.join('\n')).map((p) => p.replace(/^[^:]+:\d+: /, ''));

  it('(a) state names, wherever they meet a state path', () => {
    expect(
      lint('src/operator/core/x.ts', [
        "const FINALIZER_STEP = 'Deleting.RemoveFinalizer';",
        "const deleting = to.startsWith('Deleting');",
        "if (cluster.status?.state === 'Ready') done();",
        "if (state === 'Degraded' || snapshot.value === 'Suspended') hold();",
        "switch (status.state) { case 'Pending': break; }",
        "const target = '#postgresCluster.Failed.Secret';",
        "const releasing = stored === 'Deleting.Secrets';",
        "const ready = '#postgresDatabase.Ready';",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source under test holds a template literal
        'const path = `Provisioning.${step}`;',
      ]),
    ).toEqual([
      "state name 'Deleting.RemoveFinalizer' as a literal (a state path)",
      "state name 'Deleting' as a literal (a state prefix test)",
      "state name 'Ready' as a literal (compared with a state)",
      "state name 'Degraded' as a literal (compared with a state)",
      "state name 'Suspended' as a literal (compared with a state)",
      "state name 'Pending' as a literal (a case of a state)",
      "state name '#postgresCluster.Failed.Secret' as a literal (a state id)",
      "state name 'Deleting.Secrets' as a literal (a state path)",
      "state name '#postgresDatabase.Ready' as a literal (a state id)",
      "state path built from 'Provisioning.'",
    ]);
  });

  it('(a) but not the phases, condition types and health verdicts that share the word', () => {
    expect(
      lint('src/operator/core/x.ts', [
        "if (h.state === 'Ready') ok();",
        "if (meta.phase === 'Failed') red();",
        "const s = { phase: 'Deleting', state: 'Pending' };",
        "draft('Ready', true, 'AllComponentsReady', 'up');",
        "const p: Phase[] = ['Pending', 'Provisioning', 'Degraded', 'Suspended'];",
        "if (c.type === 'Ready' && c.status === 'True') ok();",
        "owners.filter((c) => c.startsWith('Pooler '));",
        '// Deleting.RemoveFinalizer, in a comment, is prose',
      ]),
    ).toEqual([]);
  });

  it('(b) a second walker, gate list or summary rule', () => {
    expect(
      lint('src/tools/x.ts', [
        "import { getStateNodes } from 'xstate/graph';",
        "import { type AnyStateNode, transition } from 'xstate';",
        'const nodes = Object.values(postgresClusterMachine.root.states);',
        'const impl = machine.implementations.guards;',
        "const GUARDS = { allReady: { gate: true, meaning: '' } };",
        "const D = { gate: { target: '' } };",
        'const GATES = [];',
        'const DATABASE_GATES = [];',
        'const stalled = meta.stalled || pastDeadline;',
        'const reconciling = !s.meta.deadline;',
        'const rows = meta.deadline ? [a, b] : [a];',
        'const late = now - since > settings.progressDeadlineMs;',
      ]),
    ).toEqual([
      'a walker (xstate/graph)',
      'a walker (AnyStateNode)',
      'a walker (machine.root)',
      'a walker (machine.implementations)',
      'a gate flag',
      'a gate flag',
      'a gate list',
      'a gate list',
      'a summary rule (meta.stalled)',
      'a summary rule (meta.deadline)',
      'a summary rule (meta.deadline)',
      'a summary rule (the progress deadline)',
    ]);
    // Printing meta is not deciding on it: the diagram's state table shows every field.
    const printing = ['row([yes(m.reconciling), yes(m.stalled)]);', 'const v = { at: meta.deadline };'];
    expect(lint('src/tools/x.ts', [...printing, "const COLOR = { gate: '#8c959f' };"])).toEqual([]);
  });

  it('(c) the operator and the machine package never import the tools wing', () => {
    const bad = ["import { isGate } from '../../tools/diagram/guards.ts';", "await import('../../tools/x.ts');"];
    expect(lint('src/operator/explain/x.ts', bad)).toEqual([
      'imports the tools wing (../../tools/diagram/guards.ts)',
      'imports the tools wing (../../tools/x.ts)',
    ]);
    expect(lint('machines/x.ts', ["export { a } from '../src/tools/a.ts';"])).toEqual([
      'imports the tools wing (../src/tools/a.ts)',
    ]);
    // The tools may import the operator and the machine.
    expect(lint('src/tools/gitops/x.ts', ["import { x } from '../../operator/core/status.ts';"])).toEqual([]);
  });
});

describe('the package is complete and agrees with the machine', () => {
  it('the machine runs the catalogue: same guards, every one used', () => {
    expect(Object.keys(postgresClusterMachine.implementations.guards).sort()).toEqual(Object.keys(GUARDS).sort());
    expect(usedGuards(lifecycleChart).sort()).toEqual(Object.keys(GUARDS).sort());
  });

  it.each(Object.entries(GUARDS))('guard %s calls the check it names and means something', (_name, entry) => {
    expectCallsItsCheck(entry);
  });

  it('every live state checks the gates first, in catalogue order, each into the state it names', () => {
    const gates = GATES.map((g) => g.guard);
    expect(gates).toEqual(Object.keys(GUARDS).filter(isGate));
    const ready = lifecycle.get(READY_STATE).transitions.slice(0, gates.length);
    expect(ready.map((t) => t.guard?.label)).toEqual(gates);
    expect(ready.map((t) => `#${MACHINE_ID}.${t.targets[0]}`)).toEqual(GATES.map((g) => g.target));
  });

  it('the state names code outside needs are states of the machine', () => {
    const storable = storableStates();
    expect(storable).toContain(READY_STATE);
    expect(storable).toContain(FINALIZER_STEP);
    for (const compound of Object.keys(SEQUENCES)) expect(CLUSTER_COMPOUNDS.has(compound)).toBe(true);
    for (const state of storable) {
      const meta = metaOf(restoreState(state) ?? expect.fail(`${state} does not restore`));
      expect(isDeletingState(state), state).toBe(meta.phase === 'Deleting');
      expect(isReadyState(state), state).toBe(meta.ready);
    }
  });

  it('the codec stores one path per state: no parallel or history states', () => {
    expect(lifecycleChart.states.filter((s) => s.type === 'parallel' || s.type === 'history')).toEqual([]);
  });
});

describe('the database machine agrees with its part of the package', () => {
  it('the machine runs its catalogue: same guards, every one used', () => {
    const database = MACHINES.find((m) => m.id === DATABASE_MACHINE_ID) ?? expect.fail('no database machine');
    expect(Object.keys(postgresDatabaseMachine.implementations.guards).sort()).toEqual(
      Object.keys(DATABASE_GUARDS).sort(),
    );
    expect(database.guards.usedGuards(databaseChart).sort()).toEqual(Object.keys(DATABASE_GUARDS).sort());
  });

  it.each(Object.entries(DATABASE_GUARDS))('guard %s calls the check it names and means something', (_name, entry) => {
    expectCallsItsCheck(entry);
  });

  it('every live state checks the gates first, in catalogue order, each into the state it names', () => {
    const database = MACHINES.find((m) => m.id === DATABASE_MACHINE_ID) ?? expect.fail('no database machine');
    const gates = DATABASE_GATES.map((g) => g.guard);
    expect(gates).toEqual(Object.keys(DATABASE_GUARDS).filter(database.guards.isGate));
    const ready = databaseLifecycle.get(DATABASE_READY_STATE).transitions.slice(0, gates.length);
    expect(ready.map((t) => t.guard?.label)).toEqual(gates);
    expect(ready.map((t) => `#${DATABASE_MACHINE_ID}.${t.targets[0]}`)).toEqual(DATABASE_GATES.map((g) => g.target));
  });

  it('the state names code outside needs are states of the machine', () => {
    const storable = storableDatabaseStates();
    expect(storable).toContain(DATABASE_READY_STATE);
    expect(storable).toContain(DATABASE_FINALIZER_STEP);
    for (const compound of Object.keys(DATABASE_SEQUENCES)) expect(DATABASE_COMPOUNDS.has(compound)).toBe(true);
    for (const state of storable) {
      const meta = databaseMetaOf(restoreDatabaseState(state) ?? expect.fail(`${state} does not restore`));
      expect(isDatabaseDeletingState(state), state).toBe(meta.phase === 'Deleting');
      expect(state === DATABASE_READY_STATE, state).toBe(meta.ready);
    }
  });

  it('the codec stores one path per state: no parallel or history states', () => {
    expect(databaseChart.states.filter((s) => s.type === 'parallel' || s.type === 'history')).toEqual([]);
  });
});

describe('MACHINES describes every machine once', () => {
  it('each by its own id, chart, catalogue and sequences', () => {
    expect(MACHINES.map((m) => m.id)).toEqual([MACHINE_ID, DATABASE_MACHINE_ID]);
    expect(MACHINES.map((m) => m.chart)).toEqual([lifecycleChart, databaseChart]);
    expect(MACHINES.map((m) => m.sequences)).toEqual([SEQUENCES, DATABASE_SEQUENCES]);
    for (const m of MACHINES) {
      expect(m.chart.id).toBe(m.id);
      const compounds = new Set(m.chart.states.filter((s) => s.children.length > 0).map((s) => s.path));
      for (const compound of Object.keys(m.sequences)) expect(compounds.has(compound), compound).toBe(true);
      // Every step a state names publishes a condition.
      for (const s of m.chart.states) if (s.meta?.step) expect(m.conditionOf[s.meta.step], s.path).toMatch(/\w/);
    }
    const [cluster, database] = MACHINES;
    expect(Object.keys(GUARDS).filter((g) => cluster?.guards.isGate(g))).toEqual(GATES.map((g) => g.guard));
    expect(Object.keys(DATABASE_GUARDS).filter((g) => database?.guards.isGate(g))).toEqual(
      DATABASE_GATES.map((g) => g.guard),
    );
    expect(cluster?.guards.meaningOf('databaseRolesBehind')).toBe(GUARDS.databaseRolesBehind.meaning);
    expect(database?.guards.meaningOf('rolesLetGo')).toBe(DATABASE_GUARDS.rolesLetGo.meaning);
    expect(database?.guards.meaningOf('classMissing')).toBeUndefined();
  });
});
