/**
 * The image cache: `<cacheDir>/<image>/<key>/image.tar` plus `image.json` (what the key was made of, the
 * packages inside, the image ID). The key is a hash of everything that decides the image's content; an entry
 * is built in `<cacheDir>/tmp/` and renamed into place whole, under a per-image lock, so a reader never sees a
 * half-written archive and two callers never build the same image at once.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { acquireLock } from '../../control-plane/lock.ts';
import type { Log } from '../../control-plane/log.ts';
import { sha256 } from '../image-archive.ts';

/** Bump when the way archives are written changes (every key changes with it). */
export const ARCHIVE_FORMAT = 'docker-archive/1';

export function defaultImageCacheDir(): string {
  const explicit = process.env.PGFSM_NODE_IMAGE_CACHE;
  if (explicit) return explicit;
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'pgfsm', 'node-images');
}

/** JSON with object keys sorted, so that a key never depends on property order. */
export function canonicalJson(value: unknown): string {
  const byName = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Map) {
      return Object.fromEntries([...v.entries()].map(([k, x]): [string, unknown] => [String(k), x]).sort(byName));
    }
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(byName));
    }
    return v;
  });
}

/** 24 hex digits of the sha256 of the canonical JSON of `inputs` (and the archive format). */
export function cacheKey(inputs: unknown): string {
  return sha256(canonicalJson({ format: ARCHIVE_FORMAT, inputs })).slice(0, 24);
}

export interface CachedImage {
  ref: string;
  tar: string;
  /** `sha256:…` of the image's config: the image ID crictl and kubelet report. */
  id: string;
}

export interface EntryInfo extends CachedImage {
  key: string;
  inputs: unknown;
  builtAt: string;
  buildSeconds: number;
  /** Debian packages inside, `name → version`, when known. */
  packages?: Record<string, string>;
}

export class ImageCache {
  constructor(readonly dir: string) {}

  entryDir(image: string, key: string): string {
    return join(this.dir, image, key);
  }

  /** The cached entry for this key, if complete. */
  lookup(image: string, key: string): EntryInfo | undefined {
    const dir = this.entryDir(image, key);
    try {
      const info = JSON.parse(readFileSync(join(dir, 'image.json'), 'utf8')) as EntryInfo;
      const tar = join(dir, 'image.tar');
      if (!statSync(tar).isFile()) return undefined;
      return { ...info, tar };
    } catch {
      return undefined;
    }
  }

  /** A fresh, empty working directory on the cache's filesystem (for a later atomic rename). */
  workDir(image: string, key: string): string {
    const dir = join(this.dir, 'tmp', `${image}-${key}-${process.pid}`);
    removeTree(dir);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Work directories of this image left by builds whose process is gone (killed mid-build). */
  private removeAbandoned(image: string): void {
    const tmp = join(this.dir, 'tmp');
    if (!existsSync(tmp)) return;
    for (const name of readdirSync(tmp)) {
      const pid = Number(new RegExp(`^${image}-[0-9a-f]+-(\\d+)$`).exec(name)?.[1]);
      if (!pid || pid === process.pid || alive(pid)) continue;
      try {
        removeTree(join(tmp, name));
      } catch {
        // something still mounted in it: left for a person to look at
      }
    }
  }

  /**
   * Moves `staged` (a directory holding image.tar and image.json) to the entry's place, then drops the image's
   * older entries (only the newest key of each image is kept: a PostgreSQL archive is ~0.5 GB).
   */
  publish(image: string, key: string, staged: string): string {
    const target = this.entryDir(image, key);
    mkdirSync(join(this.dir, image), { recursive: true });
    rmSync(target, { recursive: true, force: true });
    renameSync(staged, target);
    for (const other of readdirSync(join(this.dir, image))) {
      if (other !== key) rmSync(join(this.dir, image, other), { recursive: true, force: true });
    }
    return join(target, 'image.tar');
  }

  /**
   * The entry for `key`, built by `build` when absent: `build` gets a scratch directory and must write
   * image.tar and image.json into `out` (inside it). Concurrent callers of the same image wait for each other;
   * the second finds the first's entry.
   */
  async ensure(
    image: string,
    key: string,
    log: Log,
    build: (dirs: { work: string; out: string }) => Promise<void>,
  ): Promise<{ entry: EntryInfo; built: boolean }> {
    const hit = this.lookup(image, key);
    if (hit) return { entry: hit, built: false };
    const lock = await acquireLock(join(this.dir, 'locks', `${image}.lock`), `the ${image} image build`, log);
    try {
      const again = this.lookup(image, key);
      if (again) return { entry: again, built: false };
      this.removeAbandoned(image);
      const work = this.workDir(image, key);
      const out = join(work, 'entry');
      mkdirSync(out);
      try {
        await build({ work, out });
        if (!existsSync(join(out, 'image.tar')) || !existsSync(join(out, 'image.json'))) {
          throw new Error(`internal error: the ${image} build left no image.tar/image.json in ${out}`);
        }
        this.publish(image, key, out);
      } finally {
        removeTree(work);
      }
      const entry = this.lookup(image, key);
      if (!entry) throw new Error(`internal error: ${image} entry ${key} missing after publishing`);
      return { entry, built: true };
    } finally {
      await lock.release();
    }
  }
}

/** Mount points at or under `dir` (a crashed chroot build could leave /proc or /dev mounted in its tree). */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mount) => mount === dir || mount.startsWith(`${dir}/`));
}

/** Removes a build tree, refusing to if anything is still mounted inside it. */
export function removeTree(dir: string): void {
  const mounts = mountsUnder(dir);
  if (mounts.length > 0) throw new Error(`not removing ${dir}: still mounted inside it: ${mounts.join(', ')}`);
  rmSync(dir, { recursive: true, force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
