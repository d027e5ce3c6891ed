/**
 * The generated health artefacts (deploy/health/) against the machines: for every kind (PostgresCluster,
 * PostgresDatabase) and every state of its machine, the status the kind's real projection publishes must
 * read, in Argo CD's Lua, Flux's CEL and kstatus' generic rules, as the state's meta says it should. The
 * oracles below read `meta` directly rather than src/tools/gitops/table.ts, so a mistake in the table cannot
 * hide itself; the table is then held to the same oracles.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { LuaFactory } from 'wasmoon';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import { MACHINES } from '../../machines/chart.ts';
import type { StateMeta } from '../../machines/meta.ts';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { postgresDatabaseMachine } from '../../machines/postgres-database.ts';
import { stateReason } from '../../machines/summary.ts';
import type {
  Condition,
  PostgresCluster,
  PostgresClusterStatus,
  PostgresDatabase,
  PostgresDatabaseStatus,
} from '../../src/operator/api/schema.ts';
import { projectDatabaseStatus } from '../../src/operator/core/database/status.ts';
import { projectStatus } from '../../src/operator/core/status.ts';
import { assess } from '../../src/operator/domain/assessment.ts';
import { assessDatabase } from '../../src/operator/domain/database/assessment.ts';
import type { DatabaseComponent } from '../../src/operator/domain/database/vocabulary.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { databaseObservation, healthyDatabaseFacts } from '../../src/tools/fixtures/database-samples.ts';
import { healthyFacts, observe } from '../../src/tools/fixtures/observations.ts';
import { argoHealthKey } from '../../src/tools/gitops/argocd.ts';
import { type HealthCheckExprs, healthCheckExprs } from '../../src/tools/gitops/flux.ts';
import { ARGO_CM_PATH, argoLuaPath, FLUX_PATH, renderHealthFiles } from '../../src/tools/gitops/index.ts';
import { healthKinds } from '../../src/tools/gitops/kinds.ts';
import { generatedNotice, REGENERATE } from '../../src/tools/gitops/notice.ts';
import { type ExpectedStatus, expectedStatuses, type KstatusResult } from '../../src/tools/gitops/table.ts';

const healthDir = new URL('../../deploy/health/', import.meta.url);
const generated = renderHealthFiles();

// ---------------------------------------------------------------------------------------------
// Statuses from the real projections, one per state (and per deadline variant) of each kind.

const NOW = Date.parse('2026-11-30T12:00:00Z');
const settings = defaultSettings;
const DELETED_AT = '2026-11-30T11:00:00Z';
const ageIn = (row: ExpectedStatus) =>
  row.variant === 'deadlineExceeded' ? settings.progressDeadlineMs + 60_000 : 60_000;

type Resource = PostgresCluster | PostgresDatabase;
type Status = PostgresClusterStatus | PostgresDatabaseStatus;
type Obj = Omit<Resource, 'status'> & { status?: Partial<Status> };

/** One kind, read independently of the generator: its machine, its object and its real status projection. */
interface Subject {
  kind: string;
  machine: AnyStateMachine;
  source: string;
  /** A healthy object of the kind, as stored, without its status. */
  object: Omit<Resource, 'status'>;
  /** The status the kind's projection publishes in the row's state, with a healthy world. */
  statusIn: (row: ExpectedStatus) => Status;
}

function withoutStatus(resource: Resource): Omit<Resource, 'status'> {
  const { status: _, ...rest } = resource;
  return rest;
}

const clusterObservation = observe(healthyFacts);
const clusterAssessment = assess(clusterObservation, settings, 0);
const cluster: Subject = {
  kind: 'PostgresCluster',
  machine: postgresClusterMachine,
  source: 'machines/postgres-cluster.ts',
  object: withoutStatus(clusterObservation.cluster),
  statusIn: (row) =>
    projectStatus({
      state: row.state,
      meta: row.meta,
      assessment: clusterAssessment,
      previous: undefined,
      now: NOW,
      since: NOW - ageIn(row),
      settings,
    }),
};

const dbObservation = databaseObservation(healthyDatabaseFacts);
const dbAssessment = assessDatabase({ type: 'tick', now: NOW, observation: dbObservation, settings });
const database: Subject = {
  kind: 'PostgresDatabase',
  machine: postgresDatabaseMachine,
  source: 'machines/postgres-database.ts',
  object: withoutStatus(dbObservation.database),
  statusIn: (row) =>
    projectDatabaseStatus({
      state: row.state,
      // The walked chart types every meta as the cluster's; the database machine declares its own components.
      meta: row.meta as unknown as StateMeta<DatabaseComponent>,
      assessment: dbAssessment,
      generation: dbObservation.database.metadata.generation ?? 0,
      previous: undefined,
      now: NOW,
      since: NOW - ageIn(row),
      settings,
    }),
};

const SUBJECTS = [cluster, database];

/** A kind under test: its subject, its state table, and its generated script and expressions. */
interface Case {
  subject: Subject;
  table: ExpectedStatus[];
  lua: string;
  exprs: HealthCheckExprs;
  compiled: Record<'inProgress' | 'failed' | 'current', ReturnType<typeof parse>>;
}

const CASES: Case[] = SUBJECTS.map((subject) => {
  const exprs = healthCheckExprs(subject.kind);
  return {
    subject,
    table: expectedStatuses(subject.machine),
    lua: generated[argoLuaPath(subject.kind)] ?? '',
    exprs,
    compiled: { inProgress: parse(exprs.inProgress), failed: parse(exprs.failed), current: parse(exprs.current) },
  };
});
const caseOf = (kind: string) => {
  const found = CASES.find((c) => c.subject.kind === kind);
  if (!found) throw new Error(`no case for ${kind}`);
  return found;
};

/** The object as the API server would hand it to a consumer; Deleting is only reachable when deleted. */
function objectIn({ subject }: Case, row: ExpectedStatus, deleted = row.deleting): Obj {
  const { object } = subject;
  const metadata = { ...object.metadata, ...(deleted ? { deletionTimestamp: DELETED_AT } : {}) };
  return { ...object, metadata, status: subject.statusIn(row) };
}

/** The same object at a generation its status has not observed yet. */
function behind(c: Case, row: ExpectedStatus): Obj {
  const obj = objectIn(c, row, false);
  return { ...obj, metadata: { ...obj.metadata, generation: (obj.metadata.generation ?? 0) + 1 } };
}

const conditionOf = (obj: Obj, type: string): Condition | undefined =>
  obj.status?.conditions?.find((c) => c.type === type);
const label = (row: ExpectedStatus) => (row.variant === 'normal' ? row.state : `${row.state} past deadline`);
/** Every state of every kind: `[name, case, row]`, for it.each. */
const rows = CASES.flatMap((c) => c.table.map((row) => [`${c.subject.kind} ${label(row)}`, c, row] as const));

// ---------------------------------------------------------------------------------------------
// Oracles read from meta alone.

const pastDeadline = (row: ExpectedStatus) => row.variant === 'deadlineExceeded';
const stalledBy = (meta: StateMeta, past: boolean) => meta.stalled || past;
const isSuspended = (meta: StateMeta) => meta.phase === 'Suspended';

function argoFromMeta(row: ExpectedStatus): string {
  const { meta } = row;
  if (row.deleting) return 'Progressing';
  if (isSuspended(meta)) return 'Suspended';
  if (stalledBy(meta, pastDeadline(row))) return 'Degraded';
  return meta.ready ? 'Healthy' : 'Progressing';
}

function fluxFromMeta(row: ExpectedStatus): string {
  if (row.deleting) return 'InProgress';
  if (stalledBy(row.meta, pastDeadline(row))) return 'Failed';
  return row.meta.ready ? 'Current' : 'InProgress';
}

/**
 * ready -> Current, stalled -> Failed, waiting -> InProgress. Suspended -> InProgress: kstatus has no
 * paused result; Current would let dependants start on a cluster nobody reconciles, Failed would report
 * a deliberate and reversible choice as a failure. The projection publishes exactly that (Ready False,
 * Reconciling False, Stalled False).
 */
function kstatusFromMeta(row: ExpectedStatus): KstatusResult {
  if (row.deleting) return 'Terminating';
  if (row.meta.ready) return 'Current';
  if (stalledBy(row.meta, pastDeadline(row))) return 'Failed';
  return 'InProgress';
}

// ---------------------------------------------------------------------------------------------
// The consumers: Argo CD's Lua (wasmoon), Flux's CEL (cel-js), and kstatus' generic rules.

// One factory (it compiles the WASM module once); a fresh Lua state per evaluation, as Argo CD does,
// which also keeps one case from leaking into the next.
const factory = new LuaFactory();

/** Lua source for a JSON value: real tables, as Argo CD builds them, not wasmoon's JS proxies. */
function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'string') {
    // Lua's decimal escape for quotes, backslashes and control characters; everything else verbatim.
    const luaChar = (ch: string) => {
      const code = ch.charCodeAt(0);
      return code < 32 || ch === '"' || ch === '\\' ? `\\${code.toString().padStart(3, '0')}` : ch;
    };
    const escaped = [...value].map(luaChar).join('');
    return `"${escaped}"`;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `{ ${value.map(luaLiteral).join(', ')} }`;
  const fields = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `{ ${fields.map(([k, v]) => `[${JSON.stringify(k)}] = ${luaLiteral(v)}`).join(', ')} }`;
}

async function argo({ lua }: Case, obj: Obj): Promise<{ status: string; message: string }> {
  const engine = await factory.createEngine();
  try {
    await engine.doString(`obj = ${luaLiteral(obj)}`);
    return await engine.doString(lua);
  } finally {
    engine.global.close();
  }
}

const ORDER = [
  ['inProgress', 'InProgress'],
  ['failed', 'Failed'],
  ['current', 'Current'],
] as const;
type ExprName = (typeof ORDER)[number][0];

/** Each expression's value on an object; an evaluation error is recorded, as Flux would see it. */
function cel({ compiled }: Case, obj: Obj): Record<ExprName, boolean | 'error'> {
  const run = (name: ExprName): boolean | 'error' => {
    let value: unknown;
    try {
      value = compiled[name](obj as Record<string, unknown>);
    } catch {
      return 'error';
    }
    // Flux rejects a non-boolean result; so do we, loudly, rather than reading it as false.
    if (typeof value !== 'boolean') throw new Error(`${name} returned ${String(value)}`);
    return value;
  };
  return { inProgress: run('inProgress'), failed: run('failed'), current: run('current') };
}

/** The expressions that hold on an object, as results. */
const holding = (c: Case, obj: Obj) => {
  const values = cel(c, obj);
  return ORDER.filter(([name]) => values[name] === true).map(([, result]) => result);
};

/** Flux's evaluator (RFC 0009): generation first, then the first true expression; errors read Unknown. */
function flux(c: Case, obj: Obj): string {
  const observed = obj.status?.observedGeneration;
  if (observed !== undefined && observed !== obj.metadata.generation) return 'InProgress';
  const values = cel(c, obj);
  for (const [name, result] of ORDER) {
    if (values[name] === 'error') return 'Unknown';
    if (values[name]) return result;
  }
  return 'InProgress';
}

/** kstatus' generic rules (kubernetes.md §3.2), in kstatus' order. */
function kstatus(obj: Obj): KstatusResult {
  if (obj.metadata.deletionTimestamp) return 'Terminating';
  const observed = obj.status?.observedGeneration;
  if (observed !== undefined && observed !== obj.metadata.generation) return 'InProgress';
  if (conditionOf(obj, 'Reconciling')?.status === 'True') return 'InProgress';
  if (conditionOf(obj, 'Stalled')?.status === 'True') return 'Failed';
  const ready = conditionOf(obj, 'Ready');
  if (ready && ready.status !== 'True') return 'InProgress';
  // Nothing recognisable: kstatus assumes the resource is Current.
  return 'Current';
}

// ---------------------------------------------------------------------------------------------

describe('committed health artefacts', () => {
  it.each(Object.keys(generated))('deploy/health/%s equals what the machines generate', (path) => {
    const committed = (() => {
      try {
        return readFileSync(new URL(path, healthDir), 'utf8');
      } catch {
        return '(missing)';
      }
    })();
    expect(committed, `deploy/health/${path} is stale: run ${REGENERATE}`).toBe(generated[path]);
  });

  it('deploy/health holds exactly the generated files, and rendering is deterministic', () => {
    const root = fileURLToPath(healthDir);
    const committed = readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => relative(root, join(d.parentPath, d.name)).split(sep).join('/'))
      .sort();
    expect(committed, `stray or missing files in deploy/health: run ${REGENERATE}`).toEqual(
      Object.keys(generated).sort(),
    );
    expect(renderHealthFiles()).toEqual(generated);
  });

  it('covers every machine: one kind per MACHINES entry, each with its own health.lua and its own table', () => {
    expect(SUBJECTS.map((s) => s.kind)).toEqual(MACHINES.map((m) => m.title));
    const kinds = healthKinds();
    expect(kinds.map((k) => [k.kind, k.source])).toEqual(SUBJECTS.map((s) => [s.kind, s.source]));
    for (const [i, c] of CASES.entries()) expect(kinds[i]?.table, c.subject.kind).toEqual(c.table);
    expect(Object.keys(generated).filter((p) => p.endsWith('.lua'))).toEqual(
      SUBJECTS.map((s) => `argocd/pgfsm.io/${s.kind}/health.lua`),
    );
  });

  it('every script and snippet starts with the generated-file notice naming the machines it comes from', () => {
    const all = generatedNotice(SUBJECTS.map((s) => s.source));
    expect(all).toBe(
      'Generated from machines/postgres-cluster.ts and machines/postgres-database.ts by src/tools/generate/gitops-health.ts — do not edit',
    );
    for (const { subject, lua } of CASES) {
      expect(lua.startsWith(`-- ${generatedNotice([subject.source])}\n`), subject.kind).toBe(true);
    }
    for (const [path, text] of Object.entries(generated)) {
      if (path.endsWith('.yaml')) expect(text.startsWith(`# ${all}\n`), path).toBe(true);
      if (path.endsWith('.md')) expect(text, path).toContain(all);
    }
  });

  it('the argocd-cm snippet carries each script byte for byte under its per-kind health key', async () => {
    const { parse: parseYaml } = await import('yaml');
    const cm = parseYaml(generated[ARGO_CM_PATH] ?? '');
    expect(Object.keys(cm.data)).toEqual([
      'resource.customizations.health.pgfsm.io_PostgresCluster',
      'resource.customizations.health.pgfsm.io_PostgresDatabase',
    ]);
    for (const { subject, lua } of CASES) {
      expect(argoHealthKey(subject.kind)).toBe(`resource.customizations.health.pgfsm.io_${subject.kind}`);
      expect(cm.data[argoHealthKey(subject.kind)], subject.kind).toBe(lua);
      expect(lua.length).toBeGreaterThan(0);
    }
  });

  it('the Flux snippet is one healthCheckExprs entry per kind with the three expressions', async () => {
    const { parse: parseYaml } = await import('yaml');
    const fragment = parseYaml(generated[FLUX_PATH] ?? '');
    expect(fragment.spec.healthCheckExprs).toEqual(CASES.map((c) => c.exprs));
    for (const { subject, exprs } of CASES) {
      expect(exprs).toMatchObject({ apiVersion: 'pgfsm.io/v1alpha1', kind: subject.kind });
    }
  });
});

describe.each(CASES.map((c) => [c.subject.kind, c] as const))('the %s state table', (_, c) => {
  // Read independently of src/tools/gitops/table.ts: every state that can be current.
  const leaves = (getStateNodes(c.subject.machine.root) as AnyStateNode[]).filter(
    (n) => Object.keys(n.states).length === 0,
  );

  it('has a row for every atomic and final state, and a deadline row for each state with a deadline', () => {
    const paths = leaves.map((n) => n.path.join('.'));
    expect(c.table.filter((r) => r.variant === 'normal').map((r) => r.state)).toEqual(paths);
    const withDeadline = leaves.filter((n) => (n.meta as StateMeta).deadline).map((n) => n.path.join('.'));
    expect(c.table.filter((r) => r.variant === 'deadlineExceeded').map((r) => r.state)).toEqual(withDeadline);
    expect(withDeadline.length).toBeGreaterThan(0);
  });
});

describe('the state tables', () => {
  it.each(rows)('%s: the real projection publishes what the table says', (_, c, row) => {
    const obj = objectIn(c, row);
    expect(obj.status?.state).toBe(row.state);
    expect(obj.status?.phase).toBe(row.phase);
    expect(obj.status?.observedGeneration).toBe(obj.metadata.generation);
    expect(conditionOf(obj, 'Ready')?.status, 'Ready').toBe(row.ready);
    expect(conditionOf(obj, 'Reconciling')?.status, 'Reconciling').toBe(row.reconciling);
    expect(conditionOf(obj, 'Stalled')?.status, 'Stalled').toBe(row.stalled);
    if (pastDeadline(row)) {
      expect(conditionOf(obj, 'Stalled')?.reason).toBe(`${stateReason(row.state)}DeadlineExceeded`);
      expect(row.stalledReason).toBe(`${row.state.replaceAll('.', '')}DeadlineExceeded`);
    }
  });

  it.each(rows)('%s: the documented verdicts are the ones meta implies', (_, _c, row) => {
    expect({ argo: row.argo, flux: row.flux, kstatus: row.kstatus }).toEqual({
      argo: argoFromMeta(row),
      flux: fluxFromMeta(row),
      kstatus: kstatusFromMeta(row),
    });
  });
});

describe('Argo CD health.lua', () => {
  it.each(rows)('%s', async (_, c, row) => {
    const obj = objectIn(c, row);
    const hs = await argo(c, obj);
    expect(hs.status).toBe(argoFromMeta(row));
    if (hs.status === 'Degraded') expect(hs.message).toBe(conditionOf(obj, 'Stalled')?.message);
    if (hs.status === 'Healthy') expect(hs.message).toBe(conditionOf(obj, 'Ready')?.message);
    if (row.deleting) expect(hs.message.startsWith('Deleting')).toBe(true);
  });

  it.each(rows)('%s, being deleted: Progressing, and a stall shows in the message', async (_, c, row) => {
    const obj = objectIn(c, row, true);
    const hs = await argo(c, obj);
    expect(hs.status).toBe('Progressing');
    const stalled = conditionOf(obj, 'Stalled');
    expect(hs.message).toBe(stalled?.status === 'True' ? `Deleting: ${stalled.message}` : 'Deleting');
  });

  it.each(rows)('%s, generation not yet observed: Progressing', async (_, c, row) => {
    const hs = await argo(c, behind(c, row));
    expect(hs.status).toBe('Progressing');
    expect(hs.message).toContain('observe generation');
  });

  it.each(CASES.map((c) => [c.subject.kind, c] as const))(
    '%s: no status, no conditions, Ready Unknown',
    async (_, c) => {
      const { object } = c.subject;
      expect((await argo(c, { ...object, status: undefined })).status).toBe('Progressing');
      expect((await argo(c, { ...object, status: { observedGeneration: 1 } })).status).toBe('Progressing');
      const unknown: Obj = {
        ...object,
        status: {
          observedGeneration: 1,
          conditions: [
            {
              type: 'Ready',
              status: 'Unknown',
              reason: 'Probe',
              message: 'cannot tell',
              lastTransitionTime: DELETED_AT,
            },
          ],
        },
      };
      expect(await argo(c, unknown)).toEqual({ status: 'Unknown', message: 'cannot tell' });
    },
  );

  it.each(CASES.map((c) => [c.subject.kind, c] as const))('%s: is Lua 5.1 code (gopher-lua)', (_, c) => {
    expect(lua5Plus(c.lua)).toEqual([]);
  });

  it('checks suspension only for a kind whose machine has a Suspended state', async () => {
    const clusterCase = caseOf('PostgresCluster');
    expect(clusterCase.table.some((r) => isSuspended(r.meta))).toBe(true);
    expect(clusterCase.lua).toContain('SUSPENDED_PHASES');
    const databaseCase = caseOf('PostgresDatabase');
    expect(databaseCase.table.some((r) => isSuspended(r.meta))).toBe(false);
    expect(databaseCase.lua).not.toContain('SUSPENDED');
    expect(databaseCase.lua).not.toContain('status.phase');
    // A PostgresDatabase that claims a Suspended phase is judged by its conditions, not its phase.
    const ready = databaseCase.table.find((r) => r.meta.ready);
    if (!ready) throw new Error('PostgresDatabase has no ready state');
    const obj = objectIn(databaseCase, ready);
    const hs = await argo(databaseCase, { ...obj, status: { ...obj.status, phase: 'Suspended' } });
    expect(hs.status).toBe('Healthy');
  });

  it('the Lua 5.1 checker finds what it must find, outside comments and strings only', () => {
    expect(lua5Plus('local x <const> = 7 // 2 & 1 | 2 ~ 3\ngoto done\n::done::\nprint(table.unpack(t))')).toEqual([
      'integer division //',
      'goto',
      'label ::name::',
      'attribute <const>/<close>',
      'bitwise operator',
      'table.unpack',
    ]);
    expect(lua5Plus('-- a // b & c\nlocal s = "x | y ~ z // w"\nlocal t = [[ goto ]]\nlocal u = a ~= b')).toEqual([]);
  });
});

describe('Flux healthCheckExprs', () => {
  it.each(rows)('%s: exactly one expression holds, and it is the one meta implies', (_, c, row) => {
    const obj = objectIn(c, row);
    expect(holding(c, obj)).toEqual([fluxFromMeta(row)]);
    expect(flux(c, obj)).toBe(fluxFromMeta(row));
  });

  it.each(rows)('%s, being deleted or at an unobserved generation: InProgress', (_, c, row) => {
    expect(holding(c, objectIn(c, row, true))).toEqual(['InProgress']);
    expect(holding(c, behind(c, row))).toEqual(['InProgress']);
    expect(flux(c, behind(c, row))).toBe('InProgress');
  });

  it.each(CASES.map((c) => [c.subject.kind, c] as const))(
    '%s: without a status nothing reads Current or Failed; without conditions it is InProgress',
    (_, c) => {
      const { object } = c.subject;
      // CEL cannot test for a missing top-level variable: Flux reports the error and keeps waiting.
      expect(flux(c, { ...object, status: undefined })).toBe('Unknown');
      expect(cel(c, { ...object, status: { observedGeneration: 1 } })).toEqual({
        inProgress: true,
        failed: false,
        current: false,
      });
    },
  );
});

describe('kstatus generic rules', () => {
  it.each(rows)('%s', (_, c, row) => {
    expect(kstatus(objectIn(c, row))).toBe(kstatusFromMeta(row));
  });

  it('Suspended is InProgress: the projection says not Ready, not reconciling, not stalled', () => {
    const c = caseOf('PostgresCluster');
    const suspended = c.table.filter((r) => isSuspended(r.meta));
    expect(suspended.length).toBeGreaterThan(0);
    for (const row of suspended) expect(kstatus(objectIn(c, row))).toBe('InProgress');
  });

  it.each(rows)('%s, being deleted: Terminating; at an unobserved generation: InProgress', (_, c, row) => {
    expect(kstatus(objectIn(c, row, true))).toBe('Terminating');
    expect(kstatus(behind(c, row))).toBe('InProgress');
  });

  it.each(CASES.map((c) => [c.subject.kind, c] as const))(
    '%s: kstatus calls an object without status Current (why the Flux expressions insist on Ready=True)',
    (_, c) => {
      const { object } = c.subject;
      expect(kstatus({ ...object, status: undefined })).toBe('Current');
      expect(flux(c, { ...object, status: { observedGeneration: 1 } })).toBe('InProgress');
    },
  );
});

// ---------------------------------------------------------------------------------------------

/** Lua source with comments removed and every string literal emptied, so only code is checked. */
function luaCode(source: string): string {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const rest = source.slice(i);
    const longComment = /^--\[(=*)\[/.exec(rest);
    const longString = /^\[(=*)\[/.exec(rest);
    const long = longComment ?? longString;
    if (long) {
      const close = `]${long[1]}]`;
      const end = source.indexOf(close, i + long[0].length);
      i = end < 0 ? source.length : end + close.length;
      out += longString ? '""' : ' ';
    } else if (rest.startsWith('--')) {
      const end = source.indexOf('\n', i);
      i = end < 0 ? source.length : end;
    } else if (rest[0] === '"' || rest[0] === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== rest[0]) j += source[j] === '\\' ? 2 : 1;
      i = j + 1;
      out += '""';
    } else {
      out += rest[0];
      i += 1;
    }
  }
  return out;
}

/** What Lua 5.1 (gopher-lua) would reject or not provide, found in a script's code. */
function lua5Plus(source: string): string[] {
  const code = luaCode(source);
  const checks: [string, RegExp][] = [
    ['integer division //', /\/\//],
    ['goto', /\bgoto\b/],
    ['label ::name::', /::\s*[A-Za-z_]\w*\s*::/],
    ['attribute <const>/<close>', /<\s*(const|close)\s*>/],
    ['bitwise operator', /&|\||<<|>>|~(?!=)/],
    ['table.unpack', /\btable\.unpack\b/],
    ['table.pack/move', /\btable\.(pack|move)\b/],
    ['utf8 library', /\butf8\./],
    ['math.type/tointeger', /\bmath\.(type|tointeger|ult)\b/],
    ['string.pack', /\bstring\.(pack|unpack|packsize)\b/],
    ['_ENV', /\b_ENV\b/],
  ];
  return checks.filter(([, pattern]) => pattern.test(code)).map(([name]) => name);
}
