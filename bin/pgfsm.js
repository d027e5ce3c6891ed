#!/usr/bin/env node
// The pgfsm command: runs the TypeScript sources through tsx (Node 20, no build step yet).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync(
  process.execPath,
  ['--conditions=development', '--import', 'tsx', join(root, 'src/cli/main.ts'), ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
