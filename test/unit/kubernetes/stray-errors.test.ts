/**
 * `pgfsm run`'s last resort (handleStrayErrors in src/operator/driver/operator.ts, as installLastResort in
 * src/operator/cli/run.ts sets it up): a process of its own (support/stray-errors.ts) provokes each kind of
 * error a flaky network throws at the operator and must live through all of them, logging those nobody else
 * handled; a bug, thrown or rejected, must still end it with exit code 1 so that Kubernetes restarts the Pod.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SCRIPT = join(import.meta.dirname, 'support', 'stray-errors.ts');

type LogRecord = Record<string, unknown> & { msg?: string; err?: { code?: string; type?: string } };

async function runScenario(scenario: string): Promise<{ code: number | null; records: LogRecord[]; stderr: string }> {
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', SCRIPT, scenario], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const records = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogRecord);
  return { code, records, stderr };
}

it('lives through every kind of network error, and logs those nothing else handled', async () => {
  const { code, records, stderr } = await runScenario('network');
  expect(stderr).toBe('');
  expect(code).toBe(0);
  expect(records.filter((r) => r.msg === 'step done').map((r) => r.step)).toEqual([
    'socket error on a kept-alive pooled connection',
    'stream error mid-watch',
    'rejected promise in a timer callback',
    'request aborted after its response ended',
  ]);
  expect(records.some((r) => r.msg === 'alive')).toBe(true);
  const stray = records.filter((r) => r.msg === 'stray network error: carrying on');
  expect(stray.map((r) => [r.origin, r.err?.code])).toEqual([
    ['uncaughtException', 'ECONNRESET'],
    ['uncaughtException', 'ECONNRESET'],
    ['unhandledRejection', 'ECONNREFUSED'],
    ['uncaughtException', 'ABORT_ERR'],
  ]);
  // The watch cut mid-event was the informer's to handle: a failure, a relist, and the events after it.
  const recovered = records.find((r) => r.msg === 'informer recovered');
  expect(recovered?.stats).toMatchObject({ failures: 1, lists: 2 });
  expect(recovered?.names).toContain('later');
});

it.each([
  ['throw', 'uncaughtException', 'TypeError'],
  ['reject', 'unhandledRejection', 'RangeError'],
])('exits 1 on a bug (%s), saying what it was', async (scenario, origin, type) => {
  const { code, records } = await runScenario(scenario);
  expect(code).toBe(1);
  expect(records.some((r) => r.msg === 'alive')).toBe(false);
  const fatal = records.filter((r) => r.level === 'fatal');
  expect(fatal).toHaveLength(1);
  expect(fatal[0]).toMatchObject({ msg: 'unhandled error: exiting', origin, err: { type, message: 'a bug' } });
});
