/**
 * `npm start -- --real`, as a user runs it, on the suite's node (the sandbox uses a node that runs already): the
 * examples come up on real PostgreSQL, and the psql command it prints works when run exactly as printed.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/tools/package-files.ts';
import { recordResult } from './support/results.ts';

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: PACKAGE_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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

describe('npm start -- --real', () => {
  it('brings the examples to Ready on real PostgreSQL and prints psql commands that work as printed', async () => {
    const sandbox = await run('npm', ['start', '--', '--real', '--exit-when-ready'], 540_000);
    expect(sandbox.output).toContain('using the real node that runs in /run/netns/pgfsmnode already');
    expect(sandbox.output, sandbox.output).toMatch(/All 2 example clusters are Ready/);
    expect(sandbox.code, sandbox.output).toBe(0);
    for (const cluster of ['team-a/inventory', 'team-a/orders']) recordResult({ cluster, ready: true });

    const printed = sandbox.output
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.startsWith('PGPASSWORD='));
    expect(printed).toHaveLength(2);
    for (const command of printed) {
      const psql = await run('sh', ['-c', command], 60_000);
      expect(psql.code, psql.output).toBe(0);
      expect(psql.output).toMatch(/PostgreSQL 17\.\d+/);
    }
  });
});
