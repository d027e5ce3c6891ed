/**
 * `npm run test:compat` runs the rows of docs/compatibility.md that `npm test` does not (./rows.ts), one after the
 * other (each starts its own control planes; two cores have no room for two at once): for each row it builds the
 * binaries its versions need when they are not cached yet (`npm run control-plane -- build` with the row's
 * versions), then runs its files with vitest (the integration project; the e2e-compat row the real node's compat
 * project, which needs root), and prints one line per row with the result and the time it took. Exits non-zero
 * when any row fails.
 *
 *   npm run test:compat                       every row
 *   npm run test:compat -- --row cnpg-1.28    one row (repeatable)
 *   npm run test:compat -- --list             the rows and their commands
 *
 * A row's output goes to the terminal as it runs and to node_modules/.cache/pgfsm/compat-<row>.log.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageFile } from '../package-files.ts';
import {
  COMPAT_ROWS,
  type CompatRow,
  formatDuration,
  rowCommand,
  rowEnvironment,
  rowVitestArgs,
  testSummary,
} from './rows.ts';

interface Outcome {
  code: number;
  output: string;
}

/** Runs a command in the package root with the row's environment, echoing and logging its output. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const log = createWriteStream(logFile, { flags: 'a' });
    log.write(`$ ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, { cwd: packageFile(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (stream: NodeJS.WriteStream) => (chunk: Buffer) => {
      output += chunk.toString();
      log.write(chunk);
      stream.write(chunk);
    };
    child.stdout.on('data', onData(process.stdout));
    child.stderr.on('data', onData(process.stderr));
    child.once('error', (error) => {
      log.end();
      reject(error);
    });
    child.once('close', (code, signal) => {
      log.end(() => resolve({ code: code ?? (signal ? 128 : 1), output }));
    });
  });
}

interface RowResult {
  row: CompatRow;
  passed: boolean;
  ms: number;
  detail: string;
}

const NODE_TSX = ['--conditions=development', '--import', 'tsx'];

async function runRow(row: CompatRow, logDir: string): Promise<RowResult> {
  const started = Date.now();
  const env = rowEnvironment(row);
  const logFile = join(logDir, `compat-${row.id}.log`);
  console.log(`\n=== ${row.id}: Kubernetes ${row.kubernetes}, CloudNativePG ${row.cnpg} (${row.scope}) ===`);
  // Build first, so that a missing binary costs one build here rather than a hook timeout in the first file.
  const build = await run(process.execPath, [...NODE_TSX, 'src/tools/control-plane/cli.ts', 'build'], env, logFile);
  if (build.code !== 0) {
    return { row, passed: false, ms: Date.now() - started, detail: `build failed (exit ${build.code}), ${logFile}` };
  }
  const vitest = packageFile('node_modules', 'vitest', 'vitest.mjs');
  const tests = await run(process.execPath, [vitest, ...rowVitestArgs(row)], env, logFile);
  const summary = testSummary(tests.output) ?? 'no vitest summary';
  return { row, passed: tests.code === 0, ms: Date.now() - started, detail: `${summary}; log ${logFile}` };
}

function resultLine(result: RowResult): string {
  const { row } = result;
  return (
    `${result.passed ? 'PASS' : 'FAIL'}  ${row.id.padEnd(16)} Kubernetes ${row.kubernetes}, CloudNativePG ` +
    `${row.cnpg}  ${formatDuration(result.ms).padStart(7)}  ${result.detail}`
  );
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      row: { type: 'string', multiple: true },
      list: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log('usage: npm run test:compat [-- --row <id> ...] [-- --list]');
    return 0;
  }
  if (values.list) {
    for (const row of COMPAT_ROWS) {
      console.log(`${row.id.padEnd(16)} Kubernetes ${row.kubernetes}, CloudNativePG ${row.cnpg}: ${row.scope}`);
      console.log(`${''.padEnd(16)} ${rowCommand(row)}`);
    }
    return 0;
  }
  const wanted = values.row ?? COMPAT_ROWS.map((row) => row.id);
  const unknown = wanted.filter((id) => !COMPAT_ROWS.some((row) => row.id === id));
  if (unknown.length > 0) {
    console.error(`unknown row ${unknown.join(', ')}; rows: ${COMPAT_ROWS.map((row) => row.id).join(', ')}`);
    return 2;
  }
  const logDir = packageFile('node_modules', '.cache', 'pgfsm');
  mkdirSync(logDir, { recursive: true });
  const results: RowResult[] = [];
  for (const row of COMPAT_ROWS.filter((r) => wanted.includes(r.id))) {
    results.push(await runRow(row, logDir));
  }
  console.log('\ncompatibility rows:');
  for (const result of results) console.log(resultLine(result));
  return results.every((result) => result.passed) ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
