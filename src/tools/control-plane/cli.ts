/**
 * `npm run control-plane -- build`  ensures the binaries (builds them the first time) and prints paths/versions.
 * `npm run control-plane -- build --node`  the same, plus a real node's kubelet, kube-scheduler, kube-proxy,
 *                                          kubectl and CoreDNS.
 * `npm run control-plane -- start`  runs a control plane until Ctrl-C, printing the kubeconfig to use.
 *
 * Options: --no-controller-manager, --no-cnpg (both commands); --node (build only).
 */
import { parseArgs } from 'node:util';
import { ensureBinaries, ensureNodeBinaries, MissingBinariesError } from './build.ts';
import { startControlPlane } from './harness.ts';

const USAGE = `usage: npm run control-plane -- <build|start> [--no-controller-manager] [--no-cnpg]
       npm run control-plane -- build --node

  build   build (first time only) or locate kube-apiserver, etcd, kube-controller-manager and CloudNativePG's
          operator, and fetch CloudNativePG's module (its CRDs and webhooks); print paths and versions
          --node: also kubelet, kube-scheduler, kube-proxy, kubectl and CoreDNS, the binaries of a real single
          node (all of them; --no-controller-manager and --no-cnpg do not apply)
  start   start a control plane on 127.0.0.1 (with CloudNativePG's webhooks) and keep it running until Ctrl-C

Binaries come from TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD / TEST_ASSET_KUBE_CONTROLLER_MANAGER /
TEST_ASSET_CNPG_MANAGER (for --node also TEST_ASSET_KUBELET / TEST_ASSET_KUBE_SCHEDULER / TEST_ASSET_KUBE_PROXY /
TEST_ASSET_KUBECTL / TEST_ASSET_COREDNS), KUBEBUILDER_ASSETS, or the cache in \${XDG_CACHE_HOME:-~/.cache}/pgfsm/control-plane (override with
PGFSM_CONTROL_PLANE_CACHE).`;

async function build(controllerManager: boolean, cnpg: boolean): Promise<void> {
  const started = Date.now();
  const binaries = await ensureBinaries({ controllerManager, cnpg });
  console.log(`kube-apiserver           ${binaries.versions.kubeApiserver}  ${binaries.kubeApiserver}`);
  console.log(`etcd                     ${binaries.versions.etcd}  ${binaries.etcd}`);
  if (binaries.kubeControllerManager) {
    console.log(
      `kube-controller-manager  ${binaries.versions.kubeControllerManager}  ${binaries.kubeControllerManager}`,
    );
  }
  if (binaries.cnpg) {
    console.log(`cnpg-manager             ${binaries.versions.cnpg}  ${binaries.cnpg.manager}`);
    console.log(`CloudNativePG module               ${binaries.cnpg.moduleDir}`);
  }
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)}s)`);
}

async function buildNode(): Promise<void> {
  const started = Date.now();
  const b = await ensureNodeBinaries();
  const rows: [string, string, string][] = [
    ['kube-apiserver', b.versions.kubeApiserver, b.kubeApiserver],
    ['etcd', b.versions.etcd, b.etcd],
    ['kube-controller-manager', b.versions.kubeControllerManager, b.kubeControllerManager],
    ['cnpg-manager', b.versions.cnpg, b.cnpg.manager],
    ['kubelet', b.versions.kubelet, b.kubelet],
    ['kube-scheduler', b.versions.kubeScheduler, b.kubeScheduler],
    ['kube-proxy', b.versions.kubeProxy, b.kubeProxy],
    ['kubectl', b.versions.kubectl, b.kubectl],
    ['coredns', b.versions.coredns, b.coredns],
  ];
  for (const [name, version, path] of rows) console.log(`${name.padEnd(24)} ${version}  ${path}`);
  console.log(`CloudNativePG module               ${b.cnpg.moduleDir}`);
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)}s)`);
}

async function start(controllerManager: boolean, cnpg: boolean): Promise<void> {
  // Signals are handled here, with a graceful asynchronous stop, rather than by the harness's sync fallback.
  const controlPlane = await startControlPlane({ controllerManager, cnpg, handleSignals: false });
  console.log(`kube-apiserver ${controlPlane.serverVersion} at ${controlPlane.url}`);
  console.log(`garbage collection: ${controlPlane.controllerManager ? 'on (kube-controller-manager)' : 'off'}`);
  if (controlPlane.cnpg) {
    console.log(
      `CloudNativePG ${controlPlane.cnpg.version}: webhooks at ${controlPlane.cnpg.webhookUrl}, ` +
        `controllers in namespace ${controlPlane.cnpg.watchNamespace}`,
    );
  }
  console.log(`export KUBECONFIG=${controlPlane.kubeconfigPath}`);
  console.log('Press Ctrl-C to stop and delete everything.');

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    // The timer keeps the event loop alive; the signal handlers alone would not.
    const keepAlive = setInterval(() => {}, 1 << 30);
    const onSignal = (sig: NodeJS.Signals) => {
      clearInterval(keepAlive);
      resolve(sig);
    };
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, onSignal);
  });
  console.log(`\n${signal}: stopping…`);
  await controlPlane.stop();
  console.log('stopped; temp files removed.');
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      'no-controller-manager': { type: 'boolean', default: false },
      'no-cnpg': { type: 'boolean', default: false },
      node: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const controllerManager = !values['no-controller-manager'];
  const cnpg = !values['no-cnpg'];
  const [command] = positionals;
  if (values.help || positionals.length !== 1) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  switch (command) {
    case 'build':
      if (values.node) await buildNode();
      else await build(controllerManager, cnpg);
      return 0;
    case 'start':
      if (values.node) {
        console.error('--node applies to build only.');
        console.error(USAGE);
        return 2;
      }
      await start(controllerManager, cnpg);
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
    // The missing-binaries message is already a full set of instructions; don't bury it under a stack trace.
    console.error(error instanceof MissingBinariesError ? error.message : error);
    process.exitCode = 1;
  },
);
