/**
 * bin/pgfsm.js (`npx pgfsm`) works in a checkout right after `npm ci`, before any `npm run build`: without dist/
 * it runs the operator's CLI from the TypeScript sources through tsx. It runs XState's production build, as the
 * image does, and says what to do when it can run neither.
 *
 * The checkout is a copy in a directory of its own (bin/, package.json, tsconfig.json, machines/, src/operator/
 * and a link to the real node_modules), so that the checkout's own dist/, which others build, is left alone.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const BIN = readFileSync(join(ROOT, 'bin', 'pgfsm.js'), 'utf8');

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A checkout as `npm ci` leaves it: no dist/; with node_modules unless told otherwise. */
function checkout(withModules = true): string {
  const dir = mkdtempSync(join(tmpdir(), 'pgfsm-bin-'));
  made.push(dir);
  for (const path of ['bin', 'package.json', 'tsconfig.json', 'machines', 'src/operator']) {
    cpSync(join(ROOT, path), join(dir, path), { recursive: true });
  }
  if (withModules) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** `node bin/pgfsm.js …` in `dir`, from another working directory (as `npx` may be run from anywhere). */
const pgfsm = (dir: string, ...args: string[]) =>
  spawnSync(process.execPath, [join(dir, 'bin', 'pgfsm.js'), ...args], {
    cwd: tmpdir(),
    encoding: 'utf8',
    timeout: 60_000,
  });

describe('bin/pgfsm.js', () => {
  it('is the package’s bin', () => {
    expect(PACKAGE.bin).toEqual({ pgfsm: './bin/pgfsm.js' });
  });

  it('runs from the sources through tsx where there is no dist/: `pgfsm --version` right after `npm ci`', () => {
    const dir = checkout();
    expect(existsSync(join(dir, 'dist'))).toBe(false);
    const version = pgfsm(dir, '--version');
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(version.stdout).toBe(`${PACKAGE.version}\n`);
    const help = pgfsm(dir, 'run', '--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/Usage: pgfsm run/);
  });

  it('says what to do when it has neither dist/ nor tsx', () => {
    const result = pgfsm(checkout(false), '--version');
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/does not exist; run `npm run build`.*`npm ci`/);
  });

  it("runs XState's production build, as the image does", () => {
    expect(BIN).not.toMatch(/--conditions/);
  });
});
