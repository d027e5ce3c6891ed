/**
 * The container images of the real node, built on this machine without any registry and cached by content
 * (`${XDG_CACHE_HOME:-~/.cache}/pgfsm/node-images/<image>/<key>/image.tar`, docker-archives that
 * `ctr -n k8s.io images import` reads):
 *
 *   registry.k8s.io/pause:3.10                    Debian's catatonit (`-P`), the Pod sandbox
 *   ghcr.io/cloudnative-pg/postgresql:18           postgresql-18 from Debian forky (mmdebstrap), uid/gid 26: the default
 *   ghcr.io/cloudnative-pg/postgresql:17           postgresql-17 from Debian trixie, the same way
 *   ghcr.io/cloudnative-pg/pgbouncer:1.25.2        pgbouncer from Debian trixie (1.24.x), under CNPG's default name
 *   ghcr.io/cloudnative-pg/cloudnative-pg:1.30.1   CloudNativePG's manager binary, laid out as upstream's image
 *
 * (the PgBouncer and operator tags are those of the chosen CloudNativePG, PGFSM_CNPG_VERSION).
 *   localhost/pgfsm/pgfsm:<version>                the project's Dockerfile, built by buildah (ensurePgfsmImage)
 *
 * A key hashes all that decides an image's content: the recipe's text (images/recipes.ts), the Debian package
 * versions apt resolves for it (images/apt.ts), the hashes of the files copied in. An image is rebuilt only when
 * its key changes. Building needs root (mmdebstrap in root mode, chroot).
 */
import { execFileSync } from 'node:child_process';
import { CNPG_VERSION, cnpgBinaryVersion } from '../control-plane/build.ts';
import { type Log, stderrLog } from '../control-plane/log.ts';
import { ensureDebianPackages } from './debian.ts';
import { type BuiltImage, buildContext, ensureDebianImage, ensureFilesImage } from './images/build.ts';
import { defaultImageCacheDir } from './images/cache.ts';
import { buildPgfsmImage, type PgfsmImage } from './images/pgfsm.ts';
import {
  cnpgOperatorRecipe,
  nodeBuildRecipe,
  nodeRuntimeRecipe,
  pauseRecipe,
  pgbouncerRecipe,
  postgresRecipe,
  postgresRecipeFor,
} from './images/recipes.ts';

export { defaultImageCacheDir } from './images/cache.ts';
export type { PgfsmImage } from './images/pgfsm.ts';
export {
  CNPG_OPERATOR_REF,
  NODE_BUILD_REF,
  NODE_RUNTIME_REF,
  PAUSE_REF,
  PGBOUNCER_REF,
  POSTGRES_17_REF,
  POSTGRES_REF,
} from './images/recipes.ts';

/** A docker-archive in the cache and the reference it carries. */
export interface NodeImage {
  ref: string;
  tar: string;
  /** `sha256:` of the image's config: the image ID crictl and kubelet report. */
  id: string;
}

export interface NodeImages {
  pause: NodeImage;
  /** The default major (18). */
  postgres: NodeImage;
  postgres17: NodeImage;
  pgbouncer: NodeImage;
  cnpgOperator: NodeImage;
}

export interface EnsureNodeImagesOptions {
  /** Default `${XDG_CACHE_HOME:-~/.cache}/pgfsm/node-images` (or $PGFSM_NODE_IMAGE_CACHE). */
  cacheDir?: string;
  /** The chosen CloudNativePG's manager binary (control-plane/build.ts builds it). */
  cnpgManager: string;
  log?: Log;
}

/** The Debian packages the image builders run. */
const BUILDER_PACKAGES = ['mmdebstrap', 'catatonit'];

const image = (built: BuiltImage): NodeImage => ({ ref: built.ref, tar: built.tar, id: built.id });

function requireRoot(what: string): void {
  if (process.getuid?.() !== 0) {
    throw new Error(`${what} are built as root (mmdebstrap --mode=root, chroot, buildah); run this as root`);
  }
}

/**
 * The pause, PostgreSQL (18 and 17), PgBouncer and CloudNativePG operator images, each from the cache or built (one at a
 * time; concurrent callers wait on a per-image lock). One log line per image, with its duration.
 */
export async function ensureNodeImages(options: EnsureNodeImagesOptions): Promise<NodeImages> {
  const log = options.log ?? stderrLog;
  const ctx = buildContext(options.cacheDir ?? defaultImageCacheDir(), log);
  requireRoot("the node's images");
  await ensureDebianPackages(BUILDER_PACKAGES, log);

  const cnpgVersion = await cnpgBinaryVersion(options.cnpgManager);
  if (cnpgVersion !== CNPG_VERSION) {
    throw new Error(
      `${options.cnpgManager} is CloudNativePG ${cnpgVersion}; the operator image must be ${CNPG_VERSION}`,
    );
  }
  const catatonit = '/usr/bin/catatonit';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not JavaScript's
  const catatonitVersion = execFileSync('dpkg-query', ['-W', '-f=${Version}', 'catatonit'], { encoding: 'utf8' });

  const pause = await ensureFilesImage(pauseRecipe(catatonit), ctx, {
    inputs: { catatonit: catatonitVersion },
    note: `catatonit ${catatonitVersion}`,
  });
  const cnpgOperator = await ensureFilesImage(cnpgOperatorRecipe(options.cnpgManager), ctx, {
    note: `CloudNativePG manager ${cnpgVersion}`,
  });
  const postgres = await ensureDebianImage(postgresRecipe, ctx);
  const postgres17 = await ensureDebianImage(postgresRecipeFor('17'), ctx);
  const pgbouncer = await ensureDebianImage(pgbouncerRecipe, ctx);
  return {
    pause: image(pause),
    postgres: image(postgres),
    postgres17: image(postgres17),
    pgbouncer: image(pgbouncer),
    cnpgOperator: image(cnpgOperator),
  };
}

/**
 * The node's images that come from Debian alone (PostgreSQL 18 and 17, PgBouncer), from the cache or built: what a
 * prefetch can build before CloudNativePG's manager exists. {@link ensureNodeImages} then finds them cached.
 */
export async function ensureDebianNodeImages(options: { cacheDir?: string; log?: Log } = {}): Promise<void> {
  const log = options.log ?? stderrLog;
  const ctx = buildContext(options.cacheDir ?? defaultImageCacheDir(), log);
  requireRoot("the node's images");
  await ensureDebianPackages(BUILDER_PACKAGES, log);
  for (const recipe of [postgresRecipe, postgresRecipeFor('17'), pgbouncerRecipe]) await ensureDebianImage(recipe, ctx);
}

export interface EnsurePgfsmImageOptions {
  /** The checkout holding package.json and the Dockerfile. */
  projectDir: string;
  cacheDir?: string;
  log?: Log;
}

/**
 * pgfsm's image from the project's Dockerfile, built by buildah on local stand-ins for its two base images
 * (Node.js 20 from Debian trixie: a build base with npm, a distroless-like runtime with /nodejs/bin/node),
 * tagged `localhost/pgfsm/pgfsm:<package.json version>` and written as a docker-archive. Cached by the
 * Dockerfile, every file it copies and the bases' keys.
 */
export async function ensurePgfsmImage(options: EnsurePgfsmImageOptions): Promise<PgfsmImage> {
  const log = options.log ?? stderrLog;
  const ctx = buildContext(options.cacheDir ?? defaultImageCacheDir(), log);
  requireRoot("pgfsm's image and its bases");
  await ensureDebianPackages(['mmdebstrap', 'buildah'], log);
  const BUILD_IMAGE = await ensureDebianImage(nodeBuildRecipe, ctx);
  const RUNTIME_IMAGE = await ensureDebianImage(nodeRuntimeRecipe, ctx);
  const built = await buildPgfsmImage({
    projectDir: options.projectDir,
    cache: ctx.cache,
    bases: { BUILD_IMAGE, RUNTIME_IMAGE },
    log,
  });
  return { ref: built.ref, tar: built.tar, id: built.id, ...(built.digest ? { digest: built.digest } : {}) };
}
