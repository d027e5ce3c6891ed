/**
 * `npm run node -- start`    builds what is missing, starts the real node, installs CloudNativePG and pgfsm
 *                            (`--bare`: the node only), prints how to use it, and returns; the node keeps running.
 * `npm run node -- stop`     stops it and removes everything it made.
 * `npm run node -- status`   what runs, and what a stop would still have to remove.
 * `npm run node -- kubectl …` kubectl inside the node's network namespace, with its admin kubeconfig.
 * `npm run node -- prefetch` builds what the node needs into the caches and does not start it (`--background`: in a
 *                            detached low-priority process, for `npm test`; see prefetch.ts).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureNodeBinaries, MissingBinariesError } from '../control-plane/build.ts';
import { silentLog } from '../control-plane/log.ts';
import { nodeLog, startRealNode, stopRealNode } from './index.ts';
import { NETNS_PATH, nodeDirs } from './layout.ts';
import { nodeIsUp } from './node.ts';
import { prefetchInBackground, prefetchNode } from './prefetch.ts';
import { isClean, leftovers } from './teardown.ts';

const USAGE = `usage: npm run node -- <start [--bare] | stop | status | prefetch [--background] | kubectl <args…>>

  start    build (first time only) and start a real single-node Kubernetes in the network namespace
           ${NETNS_PATH}: containerd, kubelet, kube-proxy, CoreDNS, CloudNativePG's operator and pgfsm
           (two replicas) from images built on this machine; --bare leaves out CloudNativePG and pgfsm
  stop     stop it and remove every process, mount, namespace and cgroup it made
  status   what runs, and what a stop would remove
  kubectl  kubectl inside the node's namespace with the admin kubeconfig, e.g. npm run node -- kubectl get pods -A
  prefetch build the node's images and binaries into the caches without starting it (after the control plane's
           binaries exist); --background: in a detached low-priority process, logging to a file (npm test does
           this first, so that its e2e part finds them built)

Needs root (network namespaces, mounts, cgroups); installs Debian's containerd, runc, CNI plugins, iptables,
conntrack, catatonit, mmdebstrap and buildah when missing. The first start builds kubelet, kube-scheduler,
kube-proxy, kubectl and CoreDNS from the Go module proxy (about 10 minutes on 2 cores) and the images (1-3 min).`;

const kubectlLine = (kubectl: string) =>
  `nsenter --net=${NETNS_PATH} ${kubectl} --kubeconfig ${join(nodeDirs().pki, 'admin.kubeconfig')}`;

async function start(bare: boolean): Promise<void> {
  const world = await startRealNode({ install: !bare });
  await world.node.detach();
  const total = Object.values(world.timings).reduce((a, b) => a + b, 0);
  console.log(`real node up in ${total.toFixed(1)}s (${describeTimings(world.timings)})`);
  console.log(`kubectl:  ${kubectlLine(world.binaries.kubectl)} get pods -A`);
  console.log('   or:    npm run node -- kubectl get pods -A');
  console.log('stop:     npm run node -- stop');
}

const describeTimings = (timings: Record<string, number>) =>
  Object.entries(timings)
    .map(([stage, s]) => `${stage} ${s.toFixed(1)}s`)
    .join(', ');

async function status(): Promise<number> {
  const dirs = nodeDirs();
  const left = await leftovers(dirs, []);
  if (!nodeIsUp()) {
    console.log(
      isClean(left) ? 'no node runs; nothing is left of one' : `no node runs, but left: ${JSON.stringify(left)}`,
    );
    return isClean(left) ? 0 : 1;
  }
  const binaries = await ensureNodeBinaries({ log: silentLog });
  console.log(`the node runs in ${NETNS_PATH}: ${left.processes.length} processes`);
  const kubectl = spawnSync('nsenter', [
    `--net=${NETNS_PATH}`,
    '--',
    binaries.kubectl,
    `--kubeconfig=${join(dirs.pki, 'admin.kubeconfig')}`,
    'get',
    'nodes,pods',
    '-A',
  ]);
  process.stdout.write(kubectl.stdout);
  process.stderr.write(kubectl.stderr);
  return 0;
}

async function kubectl(args: string[]): Promise<number> {
  const binaries = await ensureNodeBinaries({ log: silentLog });
  const result = spawnSync(
    'nsenter',
    [
      `--net=${NETNS_PATH}`,
      '--',
      binaries.kubectl,
      `--kubeconfig=${join(nodeDirs().pki, 'admin.kubeconfig')}`,
      ...args,
    ],
    { stdio: 'inherit' },
  );
  return result.status ?? 1;
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'kubectl') return kubectl(rest);
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      bare: { type: 'boolean', default: false },
      background: { type: 'boolean', default: false },
      // Internal, for the background process: build the node's binaries only after npm test's integration suite
      // has built the control plane's (prefetch.ts).
      'await-control-plane': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help || positionals.length !== 1) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  switch (command) {
    case 'start':
      await start(values.bare);
      return 0;
    case 'stop': {
      await stopRealNode();
      const left = await leftovers(nodeDirs(), []);
      nodeLog(isClean(left) ? 'stopped: nothing left' : `stopped, but left: ${JSON.stringify(left)}`);
      return isClean(left) ? 0 : 1;
    }
    case 'status':
      return status();
    case 'prefetch':
      if (values.background) {
        console.log(`building the real node's images and binaries in the background; log: ${prefetchInBackground()}`);
        return 0;
      }
      await prefetchNode(nodeLog, { awaitControlPlane: values['await-control-plane'] });
      return 0;
    default:
      console.error(USAGE);
      return 2;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof MissingBinariesError ? error.message : error);
    process.exitCode = 1;
  },
);
