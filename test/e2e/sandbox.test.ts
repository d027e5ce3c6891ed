/**
 * `npm start -- --real`, as a user runs it, on the suite's node (the sandbox uses a node that runs already): the
 * examples come up on real PostgreSQL, clusters and their PostgresDatabases (grants made by pgfsm's Pod over
 * SQL), and the psql commands it prints work when run exactly as printed: as each cluster's superuser, and as
 * each database's application, given nothing but its Secret's uri. No password is ever printed.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/tools/package-files.ts';
import { recordResult } from './support/results.ts';

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Plain text whatever the terminal: what is matched below is the text, not its colours.
    const child = spawn(command, args, {
      cwd: PACKAGE_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const DATABASES = ['inventory-app', 'orders-app'];

describe('npm start -- --real', () => {
  it('brings the examples to Ready on real PostgreSQL and prints psql commands that work as printed', async () => {
    const sandbox = await run('npm', ['start', '--', '--real', '--exit-when-ready'], 540_000);
    expect(sandbox.output).toContain('using the real node that runs in /run/netns/pgfsmnode already');
    expect(sandbox.output, sandbox.output).toMatch(/All 2 example clusters and their 2 databases are Ready/);
    expect(sandbox.code, sandbox.output).toBe(0);
    for (const database of DATABASES)
      expect(sandbox.output).toMatch(new RegExp(`team-a/${database}\\s+Ready\\s+Ready\\s`));
    // Real PostgreSQL: nothing is said to be simulated, nothing recorded instead of granted.
    expect(sandbox.output).not.toMatch(/PostgreSQL is simulated|recorded, not run/);

    const printed = sandbox.output
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.startsWith('PGPASSWORD='));
    expect(printed).toHaveLength(2);
    // The examples' class asks for PostgreSQL 18, the default; each printed command names its cluster.
    for (const cluster of ['inventory', 'orders']) {
      const command = printed.find((line) => line.includes(`-n team-a ${cluster}-superuser `)) ?? '';
      expect(command, printed.join('\n')).not.toBe('');
      const psql = await run('sh', ['-c', command], 60_000);
      expect(psql.code, psql.output).toBe(0);
      const version = /PostgreSQL (\d+\.\d+)/.exec(psql.output)?.[1] ?? '';
      expect(version, psql.output).toMatch(/^18\./);
      recordResult({ cluster: `team-a/${cluster}`, ready: true, serverVersion: version });
    }

    // As the application: psql given the owner Secret's uri alone (PGHOSTADDR: the address of the host it names).
    const asApplication = sandbox.output
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.startsWith('PGHOSTADDR='));
    expect(asApplication).toHaveLength(DATABASES.length);
    for (const [i, database] of DATABASES.entries()) {
      const command = asApplication[i] ?? '';
      expect(command).toContain(` psql "$(npm run -s node -- kubectl get secret -n team-a ${database}-app `);
      expect(command).toContain(`-o jsonpath='{.data.uri}' | base64 -d)"`);
      // The sandbox ran it once before printing it, and said what it answered.
      expect(sandbox.output).toContain(`# team-a/${database}: database app as app, Secret team-a/${database}-app, `);
      expect(sandbox.output).toMatch(
        new RegExp(`# team-a/${database}: .+ run once here, it answered: connected as app to database app`),
      );
      const psql = await run('sh', ['-c', command], 60_000);
      expect(psql.code, psql.output).toBe(0);
      expect(psql.output).toMatch(/^\s*app\s*\|\s*app\s*$/m);
      // What the sandbox printed holds no password: the commands read it from the Secret themselves.
      const password = await run(
        'sh',
        [
          '-c',
          `npm run -s node -- kubectl get secret -n team-a ${database}-app -o jsonpath='{.data.password}' | base64 -d`,
        ],
        60_000,
      );
      expect(password.code, password.output).toBe(0);
      expect(password.output.length).toBeGreaterThan(8);
      expect(sandbox.output).not.toContain(password.output);
    }
  });
});
