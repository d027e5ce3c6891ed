/**
 * `pgfsm run` as a process, the way the image runs it: the JavaScript `npm run build` compiles (the
 * image's entry point, no tsx), NODE_ENV=production, a ServiceAccount kubeconfig bound to deploy/rbac,
 * JSON logs on stdout, /healthz, /readyz and /metrics, a cluster reconciled to Ready, and a graceful
 * exit on SIGTERM that releases the Lease.
 *
 * It runs from an install laid out as the image's runtime stage is: package.json, the compiled dist/
 * and the production dependencies only, in a directory of its own. No tools wing (simulation,
 * sandbox, control plane, generators), no sources, no dev dependencies: if the operator needed any of
 * them, it would fail here.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { createClass, createCluster, setUpWorld, untilState, type World, waitFor } from './support/e2e.ts';

/** Every string literal and template text of a JavaScript module. */
function stringLiterals(code: string): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) found.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile('module.js', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS));
  return found;
}

let cp: ControlPlane;
let world: World;
let dir: string;
/** The install the operator runs from: what the image's runtime stage holds, and nothing else. */
let install: string;
let child: ChildProcess | undefined;
const lines: string[] = [];

const logs = () =>
  lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-run-'));
  const kubeconfig = join(dir, 'operator.kubeconfig');
  writeFileSync(kubeconfig, world.operatorKc.exportConfig());
  execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  install = join(dir, 'install');
  for (const file of ['package.json', 'package-lock.json', 'dist', 'bin'])
    cpSync(file, join(install, file), { recursive: true });
  // As the image's build stage does after compiling: production dependencies only (from npm's cache).
  execFileSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: install,
    stdio: 'inherit',
  });
  child = spawn(
    process.execPath,
    [
      // As the image's entrypoint: no conditions, XState's production build.
      'dist/src/operator/cli/main.js',
      'run',
      '--kubeconfig',
      kubeconfig,
      '--metrics-addr',
      '127.0.0.1:0',
      '--lease-namespace',
      'pgfsm-system',
      '--identity',
      'process-under-test',
      '--requeue-delay',
      '2s',
    ],
    {
      cwd: install,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '/nonexistent', NODE_ENV: 'production' },
    },
  );
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr?.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('pgfsm run', () => {
  it('serves probes and metrics, reconciles a cluster to Ready, and stops gracefully on SIGTERM', async () => {
    const port = await waitFor('the probe server', async () => {
      const found = logs().find((l) => typeof l.port === 'number');
      return found?.port as number | undefined;
    });
    const get = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, text: await response.text() };
    };
    expect((await get('/healthz')).status).toBe(200);
    await waitFor('ready', async () => ((await get('/readyz')).status === 200 ? true : undefined));

    await createCluster(world, 'processed', { class: 'standard' });
    await untilState(world, 'processed', 'Ready');

    // The transition counter is incremented when the pass returns, which is after the status write
    // that untilState saw; a scrape in between is legitimately one pass behind, so wait for it.
    const metrics = await waitFor('the transition to Ready in /metrics', async () => {
      const text = (await get('/metrics')).text;
      return /pgfsm_transitions_total\{[^}]*to="Ready"/.test(text) ? text : undefined;
    });
    expect(metrics).toMatch(/controller_runtime_reconcile_total\{[^}]*controller="postgrescluster"/);
    expect(metrics).toMatch(/workqueue_depth/);
    expect(metrics).toMatch(/pgfsm_cluster_state\{[^}]*name="processed"[^}]*state="Ready"[^}]*\} 1/);
    expect(metrics).toMatch(/pgfsm_leader 1/);

    expect(metrics).toMatch(/pgfsm_build_info\{version="[^"]+",node_version="v[^"]+",xstate="5\.[^"]+"\} 1/);

    // Structured logs with stable keys: the first says what runs, and a transition line for the cluster.
    const version = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
    expect(logs().find((l) => l.msg === 'starting pgfsm')).toMatchObject({ version, nodeVersion: process.version });
    const transition = logs().find((l) => l.name === 'processed' && typeof l.transition === 'string');
    expect(transition).toMatchObject({ namespace: 'team-a', name: 'processed' });
    const lease = await world.admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'pgfsm-leader', namespace: 'pgfsm-system' });
    expect(lease.spec?.holderIdentity).toBe('process-under-test');

    const exited = new Promise<number | null>((resolve) => child?.on('exit', (code) => resolve(code)));
    child?.kill('SIGTERM');
    expect(await exited).toBe(0);
    const released = await world.admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'pgfsm-leader', namespace: 'pgfsm-system' });
    expect(released.spec?.holderIdentity ?? '').toBe('');
    expect(lines.join('\n')).not.toMatch(/"password"\s*:\s*"[^"*[]/);
  });

  it('bin/pgfsm.js runs the compiled CLI and passes SIGTERM on: the operator stops cleanly, the Lease is free', async () => {
    const out: string[] = [];
    const bin = spawn(
      process.execPath,
      [
        'bin/pgfsm.js',
        'run',
        '--kubeconfig',
        join(dir, 'operator.kubeconfig'),
        '--metrics-addr',
        '127.0.0.1:0',
        '--lease-namespace',
        'pgfsm-system',
        '--identity',
        'bin-under-test',
      ],
      { cwd: install, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '/nonexistent' } },
    );
    const exited = new Promise<number | null>((resolve) => bin.on('exit', (code) => resolve(code)));
    bin.stdout?.on('data', (chunk: Buffer) => out.push(chunk.toString()));
    bin.stderr?.on('data', (chunk: Buffer) => out.push(chunk.toString()));
    try {
      await waitFor('bin/pgfsm.js leading', async () => (out.join('').includes('started leading') ? true : undefined));
    } finally {
      bin.kill('SIGTERM');
    }
    expect(await exited, out.join('')).toBe(0);
    // The signal reached the operator itself: it logged it, drained and released the Lease.
    expect(out.join('')).toMatch(/"signal":"SIGTERM".*"msg":"signal received"/);
    expect(out.join('')).toContain('"msg":"stopped"');
    const lease = await world.admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'pgfsm-leader', namespace: 'pgfsm-system' });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
  });

  it('ships only the operator wing: the install the operator ran from has no tools, sources or dev dependencies', () => {
    const files = (root: string): string[] =>
      readdirSync(root, { recursive: true, encoding: 'utf8' }).map((f) => relative(root, join(root, f)));
    const compiled = files(join(install, 'dist'));
    expect(compiled).toContain(join('src', 'operator', 'cli', 'main.js'));
    expect(compiled.filter((f) => f.startsWith(join('src', 'tools')))).toEqual([]);
    const operatorWing = /^(machines(\/|$)|src$|src\/operator(\/|$))/;
    expect(compiled.filter((f) => !operatorWing.test(f))).toEqual([]);
    // Nothing compiled reaches for a file of the checkout (test/, src/tools/, examples/, deploy/): no string
    // literal names one (comments may, so the code is parsed rather than searched).
    for (const file of compiled.filter((f) => f.endsWith('.js'))) {
      const paths = stringLiterals(readFileSync(join(install, 'dist', file), 'utf8')).filter((text) =>
        /\b(test|tools|examples|deploy)\//.test(text),
      );
      expect(paths, file).toEqual([]);
    }
    expect(existsSync(join(install, 'src'))).toBe(false);
    expect(existsSync(join(install, 'test'))).toBe(false);
    for (const dev of ['tsx', 'typescript', 'vitest'])
      expect(existsSync(join(install, 'node_modules', dev)), dev).toBe(false);
  });
});
