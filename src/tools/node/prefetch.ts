/**
 * Building the real node's images and binaries beside the earlier tests, so that `npm test`'s e2e part finds them
 * cached. On a fresh machine that part spent about 8 of its 16 minutes building (2026-12-07, 2 cores) while most of
 * the integration suite before it waits on an API server with a core to spare.
 *
 * Nothing here is trusted for correctness: every step is the one `startRealNode` runs anyway, under the same
 * locks (the Go build lock, one lock per image), so a prefetch that is still running makes the e2e suite wait for
 * it, and one that failed (say, not root) leaves the e2e suite to build, and to fail, loudly, itself.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cachedBinaryPath, defaultCacheDir, ensureNodeBinaries } from '../control-plane/build.ts';
import type { Log } from '../control-plane/log.ts';
import { PACKAGE_ROOT } from '../package-files.ts';
import { ensureBackupArtifacts } from './backups.ts';
import { ensureDebianPackages } from './debian.ts';
import { defaultImageCacheDir, ensureDebianNodeImages, ensureNodeImages, ensurePgfsmImage } from './images.ts';
import { NODE_PACKAGES } from './index.ts';

/** Where a background prefetch writes its progress (beside the node's image cache). */
export const prefetchLogPath = (): string => join(dirname(defaultImageCacheDir()), 'node-prefetch.log');

/** The binaries the integration suite builds first; the node's own wait for them (see {@link prefetchNode}). */
const CONTROL_PLANE = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'cnpg-manager'] as const;

/**
 * How long a background prefetch waits for the integration suite's build. If the binaries do not come (the run
 * stopped before, or its control plane comes from KUBEBUILDER_ASSETS), it stops: the e2e suite builds its own.
 */
const CONTROL_PLANE_WAIT_MS = 60 * 60_000;

/**
 * Images first: they are mostly downloads and disk, so they overlap well with the CPU-bound unit and path tests.
 * Then the node's Go binaries, but only once the integration suite has built the control plane's: building them
 * earlier would hold the Go build lock and make that suite wait behind a low-priority build.
 */
export async function prefetchNode(log: Log, options: { awaitControlPlane: boolean }): Promise<void> {
  const began = Date.now();
  const since = () => `${((Date.now() - began) / 1000).toFixed(0)}s`;
  await ensureDebianPackages(NODE_PACKAGES, log);
  await ensurePgfsmImage({ projectDir: PACKAGE_ROOT, log });
  await ensureDebianNodeImages({ log });
  log(`images from Debian and pgfsm's image ready after ${since()}`);

  if (options.awaitControlPlane) {
    const cacheDir = defaultCacheDir();
    const built = () => CONTROL_PLANE.every((c) => existsSync(cachedBinaryPath(cacheDir, c)));
    const deadline = Date.now() + CONTROL_PLANE_WAIT_MS;
    while (!built() && Date.now() < deadline) await sleep(10_000);
    if (!built()) {
      log(`no control-plane binaries in ${cacheDir} after ${since()}: the node's binaries are left to the e2e suite`);
      return;
    }
  }
  log(`building the node's binaries from ${since()}`);
  const binaries = await ensureNodeBinaries({ log });
  await ensureNodeImages({ cnpgManager: binaries.cnpg.manager, log });
  // Last: only the backups e2e file needs them, and it runs after the node has started.
  await ensureBackupArtifacts({ log });
  log(`everything the node needs is cached, after ${since()}`);
}

/**
 * Starts {@link prefetchNode} in a detached process at the lowest CPU priority (its builds inherit it) and returns
 * at once; the process writes to {@link prefetchLogPath}. For `npm test`: what a test needs first never waits
 * for it, since the locks are taken only for what is being built.
 */
export function prefetchInBackground(): string {
  const logPath = prefetchLogPath();
  mkdirSync(dirname(logPath), { recursive: true });
  const out = openSync(logPath, 'w');
  const child = spawn(
    process.execPath,
    [
      '--conditions=development',
      '--import',
      'tsx',
      join(PACKAGE_ROOT, 'src/tools/node/cli.ts'),
      'prefetch',
      '--await-control-plane',
    ],
    { cwd: PACKAGE_ROOT, detached: true, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  if (child.pid !== undefined) setPriority(child.pid, 19);
  child.unref();
  return logPath;
}
