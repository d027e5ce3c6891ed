/**
 * One CloudNativePG release, ready to install on a node that runs already: its manager binary and module (built
 * or found by control-plane/build.ts) and the two images it names by default, its operator image and its
 * PgBouncer image (images/recipes.ts). What an upgrade test needs of the release it starts from.
 *
 * The version is a constant of the process (`PGFSM_CNPG_VERSION`, read once by control-plane/build.ts), so a
 * release other than this process's is prepared by a child process running this file:
 *
 *   PGFSM_CNPG_VERSION=v1.28.2 node --conditions=development --import tsx src/tools/node/cnpg-release.ts
 *
 * prints the release as JSON on stdout (progress on stderr). Needs root, as the node's images do.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CNPG_VERSION, type CnpgVersion, ensureBinaries } from '../control-plane/build.ts';
import { type Log, stderrLog } from '../control-plane/log.ts';
import { PACKAGE_ROOT, packageFile } from '../package-files.ts';
import { ensureDebianPackages } from './debian.ts';
import { buildContext, ensureDebianImage, ensureFilesImage } from './images/build.ts';
import { defaultImageCacheDir } from './images/cache.ts';
import { cnpgOperatorRecipe, pgbouncerRecipe } from './images/recipes.ts';
import type { ImageArchive } from './node.ts';

export interface CnpgRelease {
  version: CnpgVersion;
  /** The module directory: its config/default is what install.ts applies. */
  moduleDir: string;
  operatorImage: ImageArchive;
  pgbouncerImage: ImageArchive;
}

/** This process's release (CNPG_VERSION). */
export async function ensureCnpgRelease(log: Log = stderrLog): Promise<CnpgRelease> {
  if (process.getuid?.() !== 0) throw new Error("CloudNativePG's images are built as root; run this as root");
  const binaries = await ensureBinaries({ cnpg: true, log });
  if (!binaries.cnpg) throw new Error(`internal error: no CloudNativePG ${CNPG_VERSION} binary`);
  await ensureDebianPackages(['mmdebstrap'], log);
  const ctx = buildContext(defaultImageCacheDir(), log);
  const operator = await ensureFilesImage(cnpgOperatorRecipe(binaries.cnpg.manager), ctx, {
    note: `CloudNativePG manager ${CNPG_VERSION}`,
  });
  const pgbouncer = await ensureDebianImage(pgbouncerRecipe, ctx);
  return {
    version: CNPG_VERSION,
    moduleDir: binaries.cnpg.moduleDir,
    operatorImage: { ref: operator.ref, tar: operator.tar },
    pgbouncerImage: { ref: pgbouncer.ref, tar: pgbouncer.tar },
  };
}

/** Any tested release: this process's directly, another by a child process (see the file's comment). */
export async function cnpgRelease(version: CnpgVersion, log: Log = stderrLog): Promise<CnpgRelease> {
  if (version === CNPG_VERSION) return ensureCnpgRelease(log);
  const script = packageFile('src/tools/node/cnpg-release.ts');
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', script], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, PGFSM_CNPG_VERSION: version },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
    for (const line of chunk.toString().split('\n').filter(Boolean)) log(`[${version}] ${line}`);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0)
    throw new Error(`preparing CloudNativePG ${version} failed (exit ${code}): ${err.trim().slice(-2000)}`);
  const release = JSON.parse(out) as CnpgRelease;
  if (release.version !== version) throw new Error(`asked for CloudNativePG ${version}, got ${release.version}`);
  return release;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  ensureCnpgRelease().then(
    (release) => process.stdout.write(`${JSON.stringify(release)}\n`),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
