#!/usr/bin/env node
// The pgfsm command: runs the compiled CLI (`npm run build` writes dist/). In a checkout, `npm run pgfsm`
// runs the TypeScript sources directly instead.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist/src/operator/cli/main.js');
if (!existsSync(main)) {
  console.error(`pgfsm: ${main} does not exist; run \`npm run build\` in ${root} first`);
  process.exit(1);
}
// XState's development build, as everywhere in pgfsm: it rejects v4-style mistakes at run time.
const child = spawn(process.execPath, ['--conditions=development', main, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// `pgfsm run` stops gracefully on SIGTERM: pass it on instead of dying before the child. Ctrl-C already
// reaches the child through the terminal's process group; passing it on too would be a second Ctrl-C.
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
process.on('SIGINT', () => {});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
