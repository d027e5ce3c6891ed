/**
 * Backups on the real node (issue 36), on top of a node that runs already with CloudNativePG installed: the Barman
 * Cloud Plugin's binary and versitygw built (control-plane/build.ts), the plugin's image built (images/barman-cloud.ts)
 * and imported, versitygw started in the node's namespace with one bucket, and the plugin installed and registered
 * by CloudNativePG. Kept out of a plain node start: only the tests that take backups pay for it.
 */
import { BARMAN_CLOUD_VERSION, type BackupBinaries, ensureBackupBinaries } from '../control-plane/build.ts';
import type { Log } from '../control-plane/log.ts';
import { barmanCloudModuleDir, installBarmanCloud } from './barman-cloud.ts';
import { ensureDebianPackages } from './debian.ts';
import { sha256OfFile } from './image-archive.ts';
import { barmanCloudRecipe } from './images/barman-cloud.ts';
import { buildContext, ensureDebianImage } from './images/build.ts';
import { defaultImageCacheDir } from './images/cache.ts';
import { importIntoNode, type RealNode } from './node.ts';
import { createBucket, type S3Store, startS3Store } from './s3-store.ts';

/** The bucket the node's backups go to. */
export const BACKUP_BUCKET = 'pgfsm-backups';

export interface BackupStack {
  store: S3Store;
  bucket: string;
  /** The plugin's image: its Deployment's and every instance Pod's sidecar. */
  pluginImage: string;
  /** barman-cli-cloud's Debian version in that image. */
  barmanVersion: string;
  binaries: BackupBinaries;
  /** Seconds per step, binaries and image builds included (0.x when cached). */
  timings: Record<string, number>;
}

/** Runs one step, timing it for the stack's `timings`. */
type Timed = <T>(step: string, run: () => Promise<T>) => Promise<T>;

/**
 * What the backup stack needs built: the plugin's and versitygw's binaries and the plugin's image. For the stack
 * itself and for the prefetch that builds it beside the earlier tests (prefetch.ts).
 */
export async function ensureBackupArtifacts(options: { log: Log; timed?: Timed }) {
  const { log } = options;
  const timed: Timed = options.timed ?? ((_step, run) => run());
  const binaries = await timed('binaries', () => ensureBackupBinaries({ log }));
  const image = await timed('plugin image', async () => {
    if (process.getuid?.() !== 0) throw new Error("the Barman Cloud Plugin's image is built as root (mmdebstrap)");
    await ensureDebianPackages(['mmdebstrap'], log);
    const sha = await sha256OfFile(binaries.barmanCloudPlugin);
    return ensureDebianImage(
      barmanCloudRecipe(binaries.barmanCloudPlugin, sha),
      buildContext(defaultImageCacheDir(), log),
    );
  });
  return { binaries, image };
}

export async function startBackupStack(node: RealNode, options: { log: Log }): Promise<BackupStack> {
  const { log } = options;
  const timings: Record<string, number> = {};
  const timed: Timed = async (step, run) => {
    const began = Date.now();
    try {
      return await run();
    } finally {
      timings[step] = (Date.now() - began) / 1000;
    }
  };
  const { binaries, image } = await ensureBackupArtifacts({ log, timed });
  await timed('image import', () => importIntoNode([{ ref: image.ref, tar: image.tar }], { dirs: node.dirs, log }));
  const store = await timed('S3 store', () =>
    startS3Store({ dirs: node.dirs, gateway: node.gateway, versitygw: binaries.versitygw, log }),
  );
  await timed('bucket', () => createBucket(store, BACKUP_BUCKET));
  const moduleDir = await barmanCloudModuleDir();
  const installed = await timed('plugin install', () => installBarmanCloud(node, { moduleDir, image: image.ref, log }));
  for (const [step, s] of Object.entries(installed)) timings[`plugin install: ${step}`] = s;
  log(
    `backups ready: plugin ${BARMAN_CLOUD_VERSION}, versitygw ${binaries.versions.versitygw}, bucket ${BACKUP_BUCKET}`,
  );
  return {
    store,
    bucket: BACKUP_BUCKET,
    pluginImage: image.ref,
    barmanVersion: image.packages?.['barman-cli-cloud'] ?? '?',
    binaries,
    timings,
  };
}
