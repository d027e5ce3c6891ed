/**
 * The generated health artefacts (deploy/health/) against the machine: for every state, the status the
 * real projection publishes must read, in Argo CD's Lua, Flux's CEL and kstatus' generic rules, as the
 * state's meta says it should. The oracles below read `meta` directly rather than src/tools/gitops/table.ts,
 * so a mistake in the table cannot hide itself; the table is then held to the same oracles.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { LuaFactory } from 'wasmoon';
import type { AnyStateNode } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import type { StateMeta } from '../../machines/meta.ts';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { stateReason } from '../../machines/summary.ts';
import type { Condition, PostgresCluster, PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { projectStatus } from '../../src/operator/core/status.ts';
import { assess } from '../../src/operator/domain/assessment.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { healthyFacts, observe } from '../../src/tools/fixtures/observations.ts';
import { postgresClusterHealthCheckExprs } from '../../src/tools/gitops/flux.ts';
import { ARGO_LUA_PATH, renderHealthFiles } from '../../src/tools/gitops/index.ts';
import { GENERATED_NOTICE, REGENERATE } from '../../src/tools/gitops/notice.ts';
import { type ExpectedStatus, expectedStatuses, type KstatusResult } from '../../src/tools/gitops/table.ts';

const healthDir = new URL('../../deploy/health/', import.meta.url);
const generated = renderHealthFiles();
const table = expectedStatuses(postgresClusterMachine);
const lua = generated[ARGO_LUA_PATH] ?? '';

// ---------------------------------------------------------------------------------------------
// Statuses from the real projection, one per state (and per deadline variant).

const NOW = Date.parse('2026-11-30T12:00:00Z');
const settings = defaultSettings;
const observation = observe(healthyFacts);
const assessment = assess(observation, settings);
const DELETED_AT = '2026-11-30T11:00:00Z';

type Obj = Omit<PostgresCluster, 'status'> & { status?: Partial<PostgresClusterStatus> };

function statusIn(row: ExpectedStatus): PostgresClusterStatus {
  const age = row.variant === 'deadlineExceeded' ? settings.progressDeadlineMs + 60_000 : 60_000;
  return projectStatus({
    state: row.state,
    meta: row.meta,
    assessment,
    previous: undefined,
    now: NOW,
    since: NOW - age,
    settings,
  });
}

/** The object as the API server would hand it to a consumer; Deleting is only reachable when deleted. */
function objectIn(row: ExpectedStatus, deleted = row.deleting): Obj {
  const metadata = { ...observation.cluster.metadata, ...(deleted ? { deletionTimestamp: DELETED_AT } : {}) };
  return { ...observation.cluster, metadata, status: statusIn(row) };
}

const conditionOf = (obj: Obj, type: string): Condition | undefined =>
  obj.status?.conditions?.find((c) => c.type === type);
const label = (row: ExpectedStatus) => (row.variant === 'normal' ? row.state : `${row.state} past deadline`);
const rows = table.map((row) => [label(row), row] as const);

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

async function argo(obj: Obj): Promise<{ status: string; message: string }> {
  const engine = await factory.createEngine();
  try {
    await engine.doString(`obj = ${luaLiteral(obj)}`);
    return await engine.doString(lua);
  } finally {
    engine.global.close();
  }
}

const exprs = postgresClusterHealthCheckExprs();
const compiled = {
  inProgress: parse(exprs.inProgress),
  failed: parse(exprs.failed),
  current: parse(exprs.current),
};
const ORDER = [
  ['inProgress', 'InProgress'],
  ['failed', 'Failed'],
  ['current', 'Current'],
] as const;

/** Each expression's value on an object; an evaluation error is recorded, as Flux would see it. */
function cel(obj: Obj): Record<keyof typeof compiled, boolean | 'error'> {
  const run = (name: keyof typeof compiled): boolean | 'error' => {
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

/** Flux's evaluator (RFC 0009): generation first, then the first true expression; errors read Unknown. */
function flux(obj: Obj): string {
  const observed = obj.status?.observedGeneration;
  if (observed !== undefined && observed !== obj.metadata.generation) return 'InProgress';
  const values = cel(obj);
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
  it.each(Object.keys(generated))('deploy/health/%s equals what the machine generates', (path) => {
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

  it('every script and snippet starts with the generated-file notice', () => {
    for (const [path, text] of Object.entries(generated)) {
      if (path.endsWith('.lua')) expect(text.startsWith(`-- ${GENERATED_NOTICE}\n`), path).toBe(true);
      if (path.endsWith('.yaml')) expect(text.startsWith(`# ${GENERATED_NOTICE}\n`), path).toBe(true);
      if (path.endsWith('.md')) expect(text, path).toContain(GENERATED_NOTICE);
    }
  });

  it('the argocd-cm snippet carries the script byte for byte under the per-kind health key', async () => {
    const { parse: parseYaml } = await import('yaml');
    const cm = parseYaml(generated['argocd/argocd-cm-snippet.yaml'] ?? '');
    expect(cm.data['resource.customizations.health.pgfsm.io_PostgresCluster']).toBe(lua);
  });

  it('the Flux snippet is one healthCheckExprs entry for PostgresCluster with the three expressions', async () => {
    const { parse: parseYaml } = await import('yaml');
    const fragment = parseYaml(generated['flux/kustomization-healthcheckexprs.yaml'] ?? '');
    expect(fragment.spec.healthCheckExprs).toEqual([exprs]);
    expect(exprs).toMatchObject({ apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster' });
  });
});

describe('the state table', () => {
  // Read independently of src/tools/gitops/table.ts: every state that can be current.
  const leaves = (getStateNodes(postgresClusterMachine.root) as AnyStateNode[]).filter(
    (n) => Object.keys(n.states).length === 0,
  );

  it('has a row for every atomic and final state, and a deadline row for each state with a deadline', () => {
    const paths = leaves.map((n) => n.path.join('.'));
    expect(table.filter((r) => r.variant === 'normal').map((r) => r.state)).toEqual(paths);
    const withDeadline = leaves.filter((n) => (n.meta as StateMeta).deadline).map((n) => n.path.join('.'));
    expect(table.filter((r) => r.variant === 'deadlineExceeded').map((r) => r.state)).toEqual(withDeadline);
    expect(withDeadline.length).toBeGreaterThan(0);
  });

  it.each(rows)('%s: the real projection publishes what the table says', (_, row) => {
    const obj = objectIn(row);
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

  it.each(rows)('%s: the documented verdicts are the ones meta implies', (_, row) => {
    expect({ argo: row.argo, flux: row.flux, kstatus: row.kstatus }).toEqual({
      argo: argoFromMeta(row),
      flux: fluxFromMeta(row),
      kstatus: kstatusFromMeta(row),
    });
  });
});

describe('Argo CD health.lua', () => {
  it.each(rows)('%s', async (_, row) => {
    const obj = objectIn(row);
    const hs = await argo(obj);
    expect(hs.status).toBe(argoFromMeta(row));
    if (hs.status === 'Degraded') expect(hs.message).toBe(conditionOf(obj, 'Stalled')?.message);
    if (hs.status === 'Healthy') expect(hs.message).toBe(conditionOf(obj, 'Ready')?.message);
    if (row.deleting) expect(hs.message.startsWith('Deleting')).toBe(true);
  });

  it.each(rows)('%s, being deleted: Progressing, and a stall shows in the message', async (_, row) => {
    const obj = objectIn(row, true);
    const hs = await argo(obj);
    expect(hs.status).toBe('Progressing');
    const stalled = conditionOf(obj, 'Stalled');
    expect(hs.message).toBe(stalled?.status === 'True' ? `Deleting: ${stalled.message}` : 'Deleting');
  });

  it.each(rows)('%s, generation not yet observed: Progressing', async (_, row) => {
    const obj = objectIn(row, false);
    obj.metadata = { ...obj.metadata, generation: (obj.metadata.generation ?? 0) + 1 };
    const hs = await argo(obj);
    expect(hs.status).toBe('Progressing');
    expect(hs.message).toContain('observe generation');
  });

  it('no status, no conditions, Ready Unknown', async () => {
    const bare: Obj = { ...observation.cluster, status: undefined };
    expect((await argo(bare)).status).toBe('Progressing');
    const noConditions: Obj = { ...observation.cluster, status: { observedGeneration: 1 } };
    expect((await argo(noConditions)).status).toBe('Progressing');
    const unknown: Obj = {
      ...observation.cluster,
      status: {
        observedGeneration: 1,
        conditions: [
          { type: 'Ready', status: 'Unknown', reason: 'Probe', message: 'cannot tell', lastTransitionTime: DELETED_AT },
        ],
      },
    };
    expect(await argo(unknown)).toEqual({ status: 'Unknown', message: 'cannot tell' });
  });

  it('is Lua 5.1 code (gopher-lua): no 5.2+ syntax or library calls', () => {
    expect(lua5Plus(lua)).toEqual([]);
    // The checker itself finds what it must find, outside comments and strings only.
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
  it.each(rows)('%s: exactly one expression holds, and it is the one meta implies', (_, row) => {
    const obj = objectIn(row);
    const values = cel(obj);
    const holding = ORDER.filter(([name]) => values[name] === true).map(([, result]) => result);
    expect(holding).toEqual([fluxFromMeta(row)]);
    expect(flux(obj)).toBe(fluxFromMeta(row));
  });

  it.each(rows)('%s, being deleted or at an unobserved generation: InProgress', (_, row) => {
    const deleted = objectIn(row, true);
    expect(ORDER.filter(([name]) => cel(deleted)[name] === true).map(([, r]) => r)).toEqual(['InProgress']);
    const behind = objectIn(row, false);
    behind.metadata = { ...behind.metadata, generation: (behind.metadata.generation ?? 0) + 1 };
    expect(ORDER.filter(([name]) => cel(behind)[name] === true).map(([, r]) => r)).toEqual(['InProgress']);
    expect(flux(behind)).toBe('InProgress');
  });

  it('without a status nothing reads Current or Failed; without conditions it is InProgress', () => {
    const bare: Obj = { ...observation.cluster, status: undefined };
    // CEL cannot test for a missing top-level variable: Flux reports the error and keeps waiting.
    expect(flux(bare)).toBe('Unknown');
    const noConditions: Obj = { ...observation.cluster, status: { observedGeneration: 1 } };
    expect(cel(noConditions)).toEqual({ inProgress: true, failed: false, current: false });
  });
});

describe('kstatus generic rules', () => {
  it.each(rows)('%s', (_, row) => {
    expect(kstatus(objectIn(row))).toBe(kstatusFromMeta(row));
  });

  it('Suspended is InProgress: the projection says not Ready, not reconciling, not stalled', () => {
    const suspended = table.filter((r) => isSuspended(r.meta));
    expect(suspended.length).toBeGreaterThan(0);
    for (const row of suspended) expect(kstatus(objectIn(row))).toBe('InProgress');
  });

  it.each(rows)('%s, being deleted: Terminating; at an unobserved generation: InProgress', (_, row) => {
    expect(kstatus(objectIn(row, true))).toBe('Terminating');
    const behind = objectIn(row, false);
    behind.metadata = { ...behind.metadata, generation: (behind.metadata.generation ?? 0) + 1 };
    expect(kstatus(behind)).toBe('InProgress');
  });

  it('calls an object without status Current (why the Flux expressions insist on Ready=True)', () => {
    expect(kstatus({ ...observation.cluster, status: undefined })).toBe('Current');
    expect(flux({ ...observation.cluster, status: { observedGeneration: 1 } })).toBe('InProgress');
  });
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
