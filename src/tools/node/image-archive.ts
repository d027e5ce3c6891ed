/**
 * `docker save`-format image archives (a.k.a. docker-archive), the form `ctr -n k8s.io images import` and
 * buildah's `docker-archive:` transport read:
 *
 *   manifest.json          [{"Config": "<config digest>.json", "RepoTags": ["<ref>"], "Layers": ["<diff id>/layer.tar"]}]
 *   <config digest>.json   the image configuration (Env, Entrypoint, User, WorkingDir, …, rootfs.diff_ids)
 *   <diff id>/layer.tar    each layer, an uncompressed tar of a filesystem tree
 *   repositories           the legacy {"<name>": {"<tag>": "<top layer id>"}} map `docker save` also writes
 *
 * The image ID (what crictl and kubelet report) is the sha256 of the config file.
 */
import { createHash } from 'node:crypto';
import { createReadStream, linkSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { run } from './images/process.ts';

export interface ImageConfig {
  /** `NAME=value` */
  env: string[];
  entrypoint?: string[];
  cmd?: string[];
  /** `uid`, `uid:gid` or a user name */
  user?: string;
  workingDir?: string;
  labels?: Record<string, string>;
  /** `8080/tcp` */
  exposedPorts?: string[];
}

export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** The image configuration document (Docker's image spec v1.2, which OCI's config is a subset of). */
export function imageConfigDocument(
  config: ImageConfig,
  diffIds: readonly string[],
  options: { created: string; createdBy: string; architecture?: string },
): Record<string, unknown> {
  const inner: Record<string, unknown> = { Env: config.env };
  if (config.entrypoint) inner.Entrypoint = config.entrypoint;
  if (config.cmd) inner.Cmd = config.cmd;
  if (config.user !== undefined) inner.User = config.user;
  inner.WorkingDir = config.workingDir ?? '/';
  if (config.labels) inner.Labels = config.labels;
  if (config.exposedPorts) inner.ExposedPorts = Object.fromEntries(config.exposedPorts.map((p) => [p, {}]));
  return {
    architecture: options.architecture ?? 'amd64',
    os: 'linux',
    created: options.created,
    config: inner,
    rootfs: { type: 'layers', diff_ids: diffIds.map((id) => `sha256:${id}`) },
    history: diffIds.map(() => ({ created: options.created, created_by: options.createdBy })),
  };
}

/** manifest.json of a docker-archive holding one image. */
export function dockerArchiveManifest(
  configFile: string,
  ref: string,
  layerFiles: readonly string[],
): Array<{ Config: string; RepoTags: string[]; Layers: string[] }> {
  return [{ Config: configFile, RepoTags: [ref], Layers: [...layerFiles] }];
}

/** `registry/name:tag` → the legacy `repositories` map. */
export function repositoriesFile(ref: string, topLayerId: string): Record<string, Record<string, string>> {
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  const [name, tag] = colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
  return { [name]: { [tag]: topLayerId } };
}

/**
 * A layer from a directory tree: numeric owners as they are on disk (or all root with `rootOwned`), entries
 * sorted, names without a leading `./`.
 */
export async function writeLayerTar(
  rootfs: string,
  out: string,
  options: { rootOwned?: boolean; logFile?: string } = {},
): Promise<void> {
  const entries = readdirSync(rootfs).sort();
  await run(
    'tar',
    [
      '--create',
      '--file',
      out,
      '--directory',
      rootfs,
      '--numeric-owner',
      '--sort=name',
      ...(options.rootOwned ? ['--owner=0', '--group=0'] : []),
      '--',
      ...entries,
    ],
    options.logFile ? { logFile: options.logFile } : {},
  );
}

/**
 * Writes `out` from layer tars (bottom first) and a configuration. The layer files are hard-linked into a
 * staging directory beside `out`, so they must live on the same filesystem. Returns the image ID.
 */
export async function writeDockerArchive(options: {
  layers: readonly string[];
  config: ImageConfig;
  ref: string;
  out: string;
  createdBy: string;
  created?: string;
}): Promise<{ imageId: string; diffIds: string[] }> {
  const diffIds = await Promise.all(options.layers.map(sha256OfFile));
  const staging = `${options.out}.parts`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    const layerFiles = diffIds.map((id) => `${id}/layer.tar`);
    options.layers.forEach((layer, i) => {
      const target = join(staging, layerFiles[i] ?? '');
      mkdirSync(dirname(target), { recursive: true });
      linkSync(layer, target);
    });
    const configText = JSON.stringify(
      imageConfigDocument(options.config, diffIds, {
        created: options.created ?? new Date().toISOString(),
        createdBy: options.createdBy,
      }),
    );
    const imageId = sha256(configText);
    writeFileSync(join(staging, `${imageId}.json`), configText);
    writeFileSync(
      join(staging, 'manifest.json'),
      JSON.stringify(dockerArchiveManifest(`${imageId}.json`, options.ref, layerFiles)),
    );
    writeFileSync(join(staging, 'repositories'), JSON.stringify(repositoriesFile(options.ref, diffIds.at(-1) ?? '')));
    await run('tar', [
      '--create',
      '--file',
      options.out,
      '--directory',
      staging,
      '--numeric-owner',
      '--owner=0',
      '--group=0',
      '--mode=a+r',
      'manifest.json',
      'repositories',
      `${imageId}.json`,
      ...layerFiles,
    ]);
    return { imageId: `sha256:${imageId}`, diffIds: diffIds.map((id) => `sha256:${id}`) };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
