/**
 * Builds one recipe's image into the cache (or finds it there): Debian recipes with mmdebstrap from the apt
 * lists their versions were resolved with, file recipes by copying files into an empty tree. Both end as one
 * layer in a docker-archive (image-archive.ts).
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Log } from '../../control-plane/log.ts';
import { sha256OfFile, writeDockerArchive, writeLayerTar } from '../image-archive.ts';
import { AptSuite } from './apt.ts';
import { cacheKey, type EntryInfo, ImageCache, removeTree } from './cache.ts';
import { run } from './process.ts';
import { type DebianRecipe, DPKG_OPTIONS, type FilesRecipe } from './recipes.ts';

/** Bump when this module changes what it puts into an image. */
const BUILDER_REVISION = 1;

export interface BuildContext {
  cache: ImageCache;
  log: Log;
  /** One private apt state per suite, shared by the recipes of a call. */
  suites: Map<string, AptSuite>;
}

export function buildContext(cacheDir: string, log: Log): BuildContext {
  return { cache: new ImageCache(cacheDir), log, suites: new Map() };
}

export interface BuiltImage extends EntryInfo {
  built: boolean;
  seconds: number;
}

const seconds = (since: number) => (Date.now() - since) / 1000;
const megabytes = (path: string) => `${Math.round(statSync(path).size / 1e6)} MB`;

function suiteOf(ctx: BuildContext, suite: string): AptSuite {
  let apt = ctx.suites.get(suite);
  if (!apt) {
    apt = new AptSuite(ctx.cache.dir, suite);
    ctx.suites.set(suite, apt);
  }
  return apt;
}

/** The cache key of a Debian recipe: its text and the version of every package it resolves to. */
export function debianImageKey(recipe: DebianRecipe, packages: ReadonlyMap<string, string>): string {
  return cacheKey({ builder: BUILDER_REVISION, recipe, packages });
}

/** The cache key of a file recipe: its text and each file's hash (sources by content, not by path). */
export function filesImageKey(recipe: FilesRecipe, hashes: readonly string[], extra: unknown = {}): string {
  const files = recipe.files.map((f, i) => ({ path: f.path, mode: f.mode, sha256: hashes[i] }));
  return cacheKey({ builder: BUILDER_REVISION, recipe: { ...recipe, files }, extra });
}

function dpkgList(rootfs: string): Map<string, string> {
  const admindir = join(rootfs, 'var/lib/dpkg');
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not JavaScript's
  const text = execFileSync('dpkg-query', [`--admindir=${admindir}`, '-W', '-f=${Package}\t${Version}\n'], {
    encoding: 'utf8',
  });
  return new Map(
    text
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t') as [string, string]),
  );
}

function describeDifference(resolved: ReadonlyMap<string, string>, installed: ReadonlyMap<string, string>): string {
  const lines: string[] = [];
  for (const [name, version] of resolved) {
    const got = installed.get(name);
    if (got !== version) lines.push(`${name} ${version} → ${got ?? 'absent'}`);
  }
  for (const [name, version] of installed) if (!resolved.has(name)) lines.push(`${name} absent → ${version}`);
  return lines.slice(0, 8).join(', ') + (lines.length > 8 ? ` (+${lines.length - 8})` : '');
}

function writeInfo(out: string, info: Omit<EntryInfo, 'tar'>): void {
  writeFileSync(join(out, 'image.json'), `${JSON.stringify(info, null, 2)}\n`);
}

export async function ensureDebianImage(recipe: DebianRecipe, ctx: BuildContext): Promise<BuiltImage> {
  const began = Date.now();
  const apt = suiteOf(ctx, recipe.suite);
  const essential = recipe.variant === 'essential';
  const packages = await apt.resolve(recipe.include, essential, ctx.log);
  const key = debianImageKey(recipe, packages);
  const version = packages.get(recipe.mainPackage) ?? '?';

  const { entry, built } = await ctx.cache.ensure(recipe.name, key, ctx.log, async ({ work, out }) => {
    ctx.log(`building ${recipe.name} (${recipe.mainPackage} ${version}, ${recipe.suite}, ${packages.size} packages)…`);
    const lists = join(work, 'lists');
    const again = await apt.resolve(recipe.include, essential, ctx.log, { copyListsTo: lists });
    if (debianImageKey(recipe, again) !== key) {
      throw new Error(`the ${recipe.suite} apt lists changed while ${recipe.name} was being built; run again`);
    }
    const rootfs = join(work, 'rootfs');
    const logFile = join(ctx.cache.dir, 'logs', `${recipe.name}.log`);
    mkdirSync(dirname(logFile), { recursive: true });
    writeFileSync(logFile, '');
    try {
      await run(
        'mmdebstrap',
        [
          `--variant=${recipe.variant}`,
          `--include=${recipe.include.join(',')}`,
          '--mode=root',
          '--format=directory',
          // The lists the versions were resolved with, not a fresh download.
          '--skip=update',
          `--setup-hook=mkdir -p "$1/var/lib/apt/lists" && cp '${lists}'/* "$1/var/lib/apt/lists/"`,
          ...DPKG_OPTIONS.map((o) => `--dpkgopt=${o}`),
          // mmdebstrap runs no hooks in the extract variant: those scripts run below.
          ...(essential ? recipe.customize.map((script) => `--customize-hook=${script}`) : []),
          recipe.suite,
          rootfs,
          apt.sourcesFile,
        ],
        { logFile, env: { ...process.env, LC_ALL: 'C.UTF-8' } },
      );
      if (!essential) {
        for (const script of recipe.customize) await run('sh', ['-c', script, 'exec', rootfs], { logFile });
      }
      const missing = recipe.expect.filter((path) => !existsSync(join(rootfs, path)) && !isLink(join(rootfs, path)));
      if (missing.length > 0) throw new Error(`${recipe.name}: the root filesystem lacks ${missing.join(', ')}`);
      let installed = packages;
      if (essential) {
        installed = dpkgList(rootfs);
        const difference = describeDifference(packages, installed);
        if (difference) ctx.log(`  ${recipe.name}: installed differs from resolved: ${difference}`);
      }
      // The runtime mounts its own /dev; device nodes made for the build stay out of the image.
      for (const name of readdirSync(join(rootfs, 'dev'))) rmSync(join(rootfs, 'dev', name), { recursive: true });
      const layer = join(work, 'layer.tar');
      await writeLayerTar(rootfs, layer, { logFile });
      removeTree(rootfs);
      const labels = {
        'org.opencontainers.image.title': recipe.title,
        'org.opencontainers.image.version': version,
        'org.opencontainers.image.description': `${recipe.mainPackage} ${version} from Debian ${recipe.suite}, built by pgfsm's node harness (mmdebstrap)`,
      };
      const { imageId } = await writeDockerArchive({
        layers: [layer],
        config: { ...recipe.config, labels: { ...recipe.config.labels, ...labels } },
        ref: recipe.ref,
        out: join(out, 'image.tar'),
        createdBy: `pgfsm node image recipe ${recipe.name} (mmdebstrap --variant=${recipe.variant} ${recipe.suite})`,
      });
      writeInfo(out, {
        ref: recipe.ref,
        id: imageId,
        key,
        inputs: { recipe: recipe.name, suite: recipe.suite, mainPackage: `${recipe.mainPackage}=${version}` },
        builtAt: new Date().toISOString(),
        buildSeconds: seconds(began),
        packages: Object.fromEntries(installed),
      });
    } finally {
      if (existsSync(rootfs)) removeTree(rootfs);
    }
  });
  const result = { ...entry, built, seconds: seconds(began) };
  ctx.log(
    `image ${recipe.ref}: ${built ? 'built' : 'cached'} in ${result.seconds.toFixed(1)}s ` +
      `(${recipe.mainPackage} ${version}, ${megabytes(entry.tar)}, key ${key.slice(0, 12)})`,
  );
  return result;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

export async function ensureFilesImage(
  recipe: FilesRecipe,
  ctx: BuildContext,
  extra: { inputs?: unknown; note?: string } = {},
): Promise<BuiltImage> {
  const began = Date.now();
  const hashes = await Promise.all(recipe.files.map((f) => sha256OfFile(f.source)));
  const key = filesImageKey(recipe, hashes, extra.inputs ?? {});
  const { entry, built } = await ctx.cache.ensure(recipe.name, key, ctx.log, async ({ work, out }) => {
    const rootfs = join(work, 'rootfs');
    for (const file of recipe.files) {
      const target = join(rootfs, file.path);
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      copyFileSync(file.source, target);
      execFileSync('chmod', [file.mode.toString(8), target]);
    }
    for (const link of recipe.symlinks) {
      mkdirSync(dirname(join(rootfs, link.path)), { recursive: true, mode: 0o755 });
      symlinkSync(link.target, join(rootfs, link.path));
    }
    const layer = join(work, 'layer.tar');
    await writeLayerTar(rootfs, layer, { rootOwned: true });
    const { imageId } = await writeDockerArchive({
      layers: [layer],
      config: {
        ...recipe.config,
        labels: { 'org.opencontainers.image.title': recipe.title, ...recipe.config.labels },
      },
      ref: recipe.ref,
      out: join(out, 'image.tar'),
      createdBy: `pgfsm node image recipe ${recipe.name} (files: ${recipe.files.map((f) => f.path).join(', ')})`,
    });
    writeInfo(out, {
      ref: recipe.ref,
      id: imageId,
      key,
      inputs: {
        recipe: recipe.name,
        files: recipe.files.map((f, i) => ({ ...f, sha256: hashes[i] })),
        ...(extra.inputs ?? {}),
      },
      builtAt: new Date().toISOString(),
      buildSeconds: seconds(began),
    });
  });
  const result = { ...entry, built, seconds: seconds(began) };
  ctx.log(
    `image ${recipe.ref}: ${built ? 'built' : 'cached'} in ${result.seconds.toFixed(1)}s ` +
      `(${extra.note ?? recipe.title}, ${megabytes(entry.tar)}, key ${key.slice(0, 12)})`,
  );
  return result;
}
