/**
 * What this process is: pgfsm's version, the Node.js that runs it and the XState it loaded. `pgfsm --version`
 * prints the first, `pgfsm run` logs all three when it starts, and /metrics exports them as
 * `pgfsm_build_info` (metrics.ts).
 *
 * pgfsm finds its root by package.json: the nearest one above this module that is pgfsm's own, whether this is
 * the TypeScript source (src/operator/driver/) or the compiled code (dist/src/operator/driver/, the image keeps
 * package.json beside dist/). XState's version comes from its own package.json, which its exports allow to read.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  /** pgfsm's version, from its package.json. */
  version: string;
  /** `process.version`, e.g. v20.19.0. */
  nodeVersion: string;
  /** The version of the xstate package this process loaded. */
  xstate: string;
}

const PACKAGE_NAME = 'pgfsm';

/** The directory of pgfsm's package.json, searched upwards from `from` (a directory); throws when none is found. */
export function packageRootOf(from: string): string {
  for (let dir = from; ; ) {
    const file = join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === PACKAGE_NAME) {
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json of ${PACKAGE_NAME} above ${from}`);
    dir = parent;
  }
}

const versionIn = (file: string): string => (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;

let cached: BuildInfo | undefined;

/** This process's build info, read once. */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const here = dirname(fileURLToPath(import.meta.url));
  cached = {
    version: versionIn(join(packageRootOf(here), 'package.json')),
    nodeVersion: process.version,
    xstate: versionIn(createRequire(import.meta.url).resolve('xstate/package.json')),
  };
  return cached;
}
