/**
 * The real node, ready for use: Debian's packages present, the Go binaries built (control-plane/build.ts), the
 * images built (images.ts), the node started (node.ts), CloudNativePG and pgfsm installed (install.ts).
 * One function for tests and the sandbox; `npm run node` (cli.ts) for people.
 */
import { ensureNodeBinaries, type NodeBinaries } from '../control-plane/build.ts';
import type { Log } from '../control-plane/log.ts';
import { PACKAGE_ROOT } from '../package-files.ts';
import { ensureDebianPackages } from './debian.ts';
import { ensureNodeImages, ensurePgfsmImage } from './images.ts';
import { installCnpg, installPgfsm } from './install.ts';
import { nodeDirs } from './layout.ts';
import { type ImageArchive, type RealNode, startNode, stopNode } from './node.ts';

export { type RealNode, stopNode } from './node.ts';

/** Progress on stderr, like the control plane's, under the node's own name. */
export const nodeLog: Log = (line) => {
  process.stderr.write(`[real node] ${line}\n`);
};

/** What the node needs from Debian, installed by the harness when it runs as root. */
export const NODE_PACKAGES = [
  'containerd',
  'runc',
  'containernetworking-plugins',
  'iptables',
  'conntrack',
  'catatonit',
  'mmdebstrap',
  'buildah',
];

export interface RealNodeWorld {
  node: RealNode;
  binaries: NodeBinaries;
  images: {
    postgres: ImageArchive;
    postgres17: ImageArchive;
    pgbouncer: ImageArchive;
    cnpgOperator: ImageArchive;
    pgfsm: ImageArchive;
  };
  /** Seconds each stage took: what the closing note and the benchmark report. */
  timings: Record<string, number>;
}

export interface StartRealNodeOptions {
  /** Install CloudNativePG and pgfsm too (default true). */
  install?: boolean;
  log?: Log;
}

export async function startRealNode(options: StartRealNodeOptions = {}): Promise<RealNodeWorld> {
  const log = options.log ?? nodeLog;
  const timings: Record<string, number> = {};
  const timed = async <T>(stage: string, run: () => Promise<T>): Promise<T> => {
    const began = Date.now();
    try {
      return await run();
    } finally {
      timings[stage] = (Date.now() - began) / 1000;
    }
  };
  await timed('packages', () => ensureDebianPackages(NODE_PACKAGES, log));
  const binaries = await timed('binaries', () => ensureNodeBinaries({ log }));
  const built = await timed('images', () => ensureNodeImages({ cnpgManager: binaries.cnpg.manager, log }));
  const pgfsm = await timed('pgfsm image', () => ensurePgfsmImage({ projectDir: PACKAGE_ROOT, log }));
  const images = {
    postgres: built.postgres,
    postgres17: built.postgres17,
    pgbouncer: built.pgbouncer,
    cnpgOperator: built.cnpgOperator,
    pgfsm,
  };
  const node = await timed('node start', () =>
    startNode({ programs: binaries, pauseImage: built.pause, images: Object.values(images), log }),
  );
  try {
    if (options.install ?? true) {
      await timed('CloudNativePG install', () =>
        installCnpg(node, { moduleDir: binaries.cnpg.moduleDir, operatorImage: images.cnpgOperator.ref, log }),
      );
      await timed('pgfsm install', () => installPgfsm(node, { log }));
    }
  } catch (error) {
    await node.detach();
    throw error;
  }
  return { node, binaries, images, timings };
}

export async function stopRealNode(world?: RealNodeWorld): Promise<void> {
  await world?.node.detach();
  await stopNode({ dirs: world?.node.dirs ?? nodeDirs() });
}
