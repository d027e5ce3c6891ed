#!/usr/bin/env node
// The pgfsm command (`npx pgfsm`, or `pgfsm` where the package is installed): the operator's `run` and `explain`.
// It runs the compiled CLI that `npm run build` writes into dist/, as the image does. Where there is no dist/,
// as in a checkout right after `npm ci`, it runs the same CLI from the TypeScript sources through tsx (a dev
// dependency, which `npm ci` installs). A checkout with an older dist/ runs that dist/: `npm run build` again
// after a change, or use `npm run pgfsm`, which always runs the sources (and adds the tools' commands).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist/src/operator/cli/main.js');
const source = join(root, 'src/operator/cli/main.ts');

/** tsx's loader as a URL, resolved from this package (not from the working directory), or undefined. */
function tsxLoader() {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return undefined;
  }
}

/** Node's arguments before pgfsm's own: the compiled entry point, else the sources through tsx. */
function entry() {
  if (existsSync(compiled)) return [compiled];
  const tsx = existsSync(source) ? tsxLoader() : undefined;
  if (tsx) return ['--import', tsx, source];
  console.error(
    `pgfsm: ${compiled} does not exist; run \`npm run build\` in ${root} first` +
      (existsSync(source) ? ' (or `npm ci`, which installs tsx to run the sources)' : ''),
  );
  process.exit(1);
}

// XState's production build, as the image runs it: the tests run the development build, which rejects
// v4-style mistakes (vitest.config.ts), so nothing is left for it to catch here.
const child = spawn(process.execPath, [...entry(), ...process.argv.slice(2)], { stdio: 'inherit' });
// `pgfsm run` stops gracefully on SIGTERM: pass it on instead of dying before the child. Ctrl-C already
// reaches the child through the terminal's process group; passing it on too would be a second Ctrl-C.
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
process.on('SIGINT', () => {});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
