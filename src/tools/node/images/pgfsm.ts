/**
 * pgfsm's own image, from the project's Dockerfile, with a real OCI builder: Debian's buildah. Its two base
 * images (node:20-bookworm-slim and distroless nodejs20) cannot be pulled here, so local stand-ins made from
 * Debian trixie packages (recipes.ts) are loaded into a private buildah store under the cache and passed as the
 * Dockerfile's BUILD_IMAGE / RUNTIME_IMAGE arguments; nothing is pulled (`--pull=never`). RUN steps use the
 * machine's network (`npm ci` reaches the npm registry).
 */
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import type { Log } from '../../control-plane/log.ts';
import { sha256 } from '../image-archive.ts';
import type { BuiltImage } from './build.ts';
import { Buildah, trustArguments } from './buildah.ts';
import { cacheKey, type ImageCache } from './cache.ts';
import { dockerfileBaseImages, dockerfileContextSources } from './dockerfile.ts';
import { run } from './process.ts';

/** Bump when the way the image is built here changes. */
const PGFSM_RECIPE = 'pgfsm image via buildah bud/1';

/** The Dockerfile's base-image arguments and the stand-in each gets here. */
export const BASE_ARGUMENTS = ['BUILD_IMAGE', 'RUNTIME_IMAGE'] as const;
export type BaseArgument = (typeof BASE_ARGUMENTS)[number];

/** sha256 of every file under the given context paths (path, executable bit and content; links by target). */
export function hashContextFiles(projectDir: string, sources: readonly string[]): Record<string, string> {
  const hashes: Record<string, string> = {};
  const visit = (path: string) => {
    const rel = relative(projectDir, path);
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) hashes[rel] = `link:${readlinkSync(path)}`;
    else if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name));
    } else if (stat.isFile()) {
      hashes[rel] = `${stat.mode & 0o111 ? 'x' : '-'}:${sha256(readFileSync(path))}`;
    }
  };
  for (const source of sources) visit(join(projectDir, source));
  return hashes;
}

export interface PgfsmKeyInputs {
  dockerfile: string;
  dockerignore: string;
  files: Record<string, string>;
  /** Cache keys of the stand-in base images. */
  bases: Record<BaseArgument, string>;
  ref: string;
  buildah: string;
}

export const pgfsmImageKey = (inputs: PgfsmKeyInputs): string =>
  cacheKey({ recipe: PGFSM_RECIPE, ...inputs, dockerfile: sha256(inputs.dockerfile) });

/** Reads the project: its image reference and the Dockerfile's contract with this builder. */
export function readProject(projectDir: string): {
  ref: string;
  dockerfile: string;
  dockerignore: string;
  sources: string[];
} {
  const pkg = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')) as { name: string; version: string };
  const dockerfile = readFileSync(join(projectDir, 'Dockerfile'), 'utf8');
  let dockerignore = '';
  try {
    dockerignore = readFileSync(join(projectDir, '.dockerignore'), 'utf8');
  } catch {
    dockerignore = '';
  }
  const args = new Set(dockerfileBaseImages(dockerfile).map((s) => s.arg));
  const lacking = BASE_ARGUMENTS.filter((a) => !args.has(a));
  if (lacking.length > 0) {
    throw new Error(
      `${join(projectDir, 'Dockerfile')} no longer chooses its base images with ${lacking.join(' and ')} ` +
        `(\`FROM \${${lacking[0]}:-…}\`): the local build cannot substitute the bases it cannot pull.`,
    );
  }
  return {
    ref: `localhost/${pkg.name}/${pkg.name}:${pkg.version}`,
    dockerfile,
    dockerignore,
    sources: dockerfileContextSources(dockerfile),
  };
}

export interface PgfsmImage {
  ref: string;
  tar: string;
  /** The image ID (`sha256:` of its config), what crictl and kubelet report for it. */
  id: string;
  /** The manifest digest buildah reported when it wrote the archive. */
  digest?: string;
}

export async function buildPgfsmImage(options: {
  projectDir: string;
  cache: ImageCache;
  bases: Record<BaseArgument, BuiltImage>;
  log: Log;
}): Promise<PgfsmImage & { built: boolean; seconds: number }> {
  const began = Date.now();
  const { cache, log, projectDir, bases } = options;
  const project = readProject(projectDir);
  const buildahVersion = (await run('buildah', ['--version'])).stdout.trim();
  const files = hashContextFiles(projectDir, project.sources);
  const key = pgfsmImageKey({
    dockerfile: project.dockerfile,
    dockerignore: project.dockerignore,
    files,
    bases: { BUILD_IMAGE: bases.BUILD_IMAGE.key, RUNTIME_IMAGE: bases.RUNTIME_IMAGE.key },
    ref: project.ref,
    buildah: buildahVersion,
  });

  const { entry, built } = await cache.ensure('pgfsm', key, log, async ({ out }) => {
    log(`building ${project.ref} from ${join(projectDir, 'Dockerfile')} with ${buildahVersion}…`);
    const logFile = join(cache.dir, 'logs', 'pgfsm.log');
    mkdirSync(join(cache.dir, 'logs'), { recursive: true });
    writeFileSync(logFile, '');
    const buildah = new Buildah(cache.dir, logFile);
    await buildah.configure(bases.BUILD_IMAGE, log);
    for (const base of Object.values(bases)) await buildah.load(base);
    let step = '';
    await buildah
      .run(
        [
          'bud',
          '--pull=never',
          '--signature-policy',
          buildah.signaturePolicy,
          '--layers',
          // A failed RUN would otherwise leave its working container (and its overlay mount) behind.
          '--force-rm',
          '--network',
          'host',
          ...trustArguments(),
          '--isolation',
          buildah.isolation,
          '--format',
          'docker',
          ...BASE_ARGUMENTS.flatMap((arg) => ['--build-arg', `${arg}=${bases[arg].ref}`]),
          '--file',
          join(projectDir, 'Dockerfile'),
          '--tag',
          project.ref,
          projectDir,
        ],
        { onLine: (line) => (step = /STEP \d+\/\d+: /.test(line) ? line : step) },
      )
      .catch((error: unknown) => {
        throw new Error(`buildah bud failed at ${step || 'its start'} (log: ${logFile})\n${String(error)}`);
      });
    const id = await buildah.imageId(project.ref);
    if (!id) throw new Error(`buildah bud succeeded but ${project.ref} is not in its store`);
    const tar = join(out, 'image.tar');
    const digestFile = join(out, 'digest');
    await buildah.run([
      'push',
      '--signature-policy',
      buildah.signaturePolicy,
      '--digestfile',
      digestFile,
      project.ref,
      `docker-archive:${tar}:${project.ref}`,
    ]);
    let digest: string | undefined;
    try {
      digest = readFileSync(digestFile, 'utf8').trim() || undefined;
      rmSync(digestFile);
    } catch {
      digest = undefined;
    }
    writeFileSync(
      join(out, 'image.json'),
      `${JSON.stringify(
        {
          ref: project.ref,
          id,
          ...(digest ? { digest } : {}),
          key,
          inputs: {
            recipe: PGFSM_RECIPE,
            buildah: buildahVersion,
            storageDriver: buildah.driver,
            isolation: buildah.isolation,
            bases: Object.fromEntries(BASE_ARGUMENTS.map((a) => [a, { ref: bases[a].ref, key: bases[a].key }])),
            files,
          },
          builtAt: new Date().toISOString(),
          buildSeconds: (Date.now() - began) / 1000,
        },
        null,
        2,
      )}\n`,
    );
  });
  const info = entry as typeof entry & { digest?: string };
  const seconds = (Date.now() - began) / 1000;
  log(
    `image ${project.ref}: ${built ? 'built' : 'cached'} in ${seconds.toFixed(1)}s ` +
      `(buildah, ${Math.round(statSync(entry.tar).size / 1e6)} MB, key ${key.slice(0, 12)})`,
  );
  return {
    ref: entry.ref,
    tar: entry.tar,
    id: entry.id,
    ...(info.digest ? { digest: info.digest } : {}),
    built,
    seconds,
  };
}
