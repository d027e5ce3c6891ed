/**
 * A real single-node Kubernetes on this machine: containerd + runc, etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, kubelet, kube-proxy (iptables) and CoreDNS, every one a process of
 * the node's network namespace (layout.ts has the rule), started with `nsenter --net` only: `ip netns exec`
 * would give each daemon a private mount namespace, and kubelet's volume mounts would then be invisible to
 * runc. Static local PersistentVolumes with a StorageClass stand in for a provisioner.
 *
 * The daemons outlive the process that starts them (`npm run node -- start`, then `stop`): what runs is
 * recorded in the state file, and `stopNode` (teardown.ts) removes everything, also after a crash.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, StorageV1Api, type V1PersistentVolume } from '@kubernetes/client-node';
import { createPki, issueCertificate } from '../control-plane/certs.ts';
import { type Log, stderrLog } from '../control-plane/log.ts';
import { get } from '../control-plane/probe.ts';
import { type ManagedProcess, startProcess, waitUntil } from '../control-plane/processes.ts';
import { packageFile } from '../package-files.ts';
import { cniConfig, containerdConfig, corefile, kubeconfig, kubeletConfig, kubeProxyConfig } from './configs.ts';
import { type Gateway, gatewayTo } from './gateway.ts';
import {
  API_PORT,
  CLUSTER_DOMAIN,
  DNS_IP,
  KUBERNETES_SERVICE_IP,
  LOCAL_VOLUMES,
  NETNS_PATH,
  NODE_IP,
  NODE_NAME,
  type NodeDirs,
  nodeDirs,
  POD_CIDR,
  SERVICE_CIDR,
  STORAGE_CLASS,
} from './layout.ts';
import { command, createNamespace, namespaceExists, runInNamespace } from './netns.ts';
import { podNamespaces, teardown } from './teardown.ts';

/** The programs the node runs; ensureNodeBinaries (control-plane/build.ts) provides them. */
export interface NodePrograms {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubelet: string;
  kubeProxy: string;
  kubectl: string;
  coredns: string;
}

/** A `docker save`-format archive and the reference it carries, imported into containerd at start. */
export interface ImageArchive {
  ref: string;
  tar: string;
}

export interface StartNodeOptions {
  programs: NodePrograms;
  /** The pause image (containerd's sandbox image) and every other image the node's Pods may run. */
  pauseImage: ImageArchive;
  images: ImageArchive[];
  dirs?: NodeDirs;
  /** Per-step readiness timeout; default 120 s (two slow cores). */
  timeoutMs?: number;
  log?: Log;
}

interface NodeState {
  startedAt: string;
  pids: Record<string, number>;
  /** The Pods' network namespaces (`cni-…`) that existed before: never ours to delete. */
  cniNamespacesBefore: string[];
}

export interface RealNode {
  readonly dirs: NodeDirs;
  /** Loopback ports into the node (gateway.ts). */
  readonly gateway: Gateway;
  /** Admin access to the API server over the gateway. */
  readonly kubeConfig: KubeConfig;
  /** For programs run inside the namespace (`nsenter --net=… kubectl --kubeconfig …`). */
  readonly adminKubeconfig: string;
  /** kubectl run inside the node's namespace with the admin kubeconfig; resolves with stdout. */
  kubectl(args: string[], options?: { input?: string; timeoutMs?: number }): Promise<string>;
  /** Closes the gateway's listeners; the node keeps running. */
  detach(): Promise<void>;
}

const CNI_BIN = '/usr/lib/cni';
const RUNC = '/usr/sbin/runc';

function readState(dirs: NodeDirs): NodeState | undefined {
  try {
    return JSON.parse(readFileSync(dirs.stateFile, 'utf8')) as NodeState;
  } catch {
    return undefined;
  }
}

/** Whether a node is (at least partly) up: its namespace exists. */
export const nodeIsUp = () => namespaceExists();

/** Stops the node and removes everything it made; harmless when none runs. */
export async function stopNode(options: { dirs?: NodeDirs; log?: Log } = {}): Promise<void> {
  const dirs = options.dirs ?? nodeDirs();
  const state = readState(dirs);
  await teardown(dirs, state?.cniNamespacesBefore ?? []);
  rmSync(dirs.stateFile, { force: true });
}

function adminKubeConfigOver(gatewayPort: number, dirs: NodeDirs): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'pgfsm-node',
        server: `https://127.0.0.1:${gatewayPort}`,
        caData: readFileSync(join(dirs.pki, 'ca.crt')).toString('base64'),
      },
    ],
    users: [
      {
        name: 'admin',
        certData: readFileSync(join(dirs.pki, 'admin.crt')).toString('base64'),
        keyData: readFileSync(join(dirs.pki, 'admin.key')).toString('base64'),
      },
    ],
    contexts: [{ name: 'pgfsm-node', cluster: 'pgfsm-node', user: 'admin' }],
    currentContext: 'pgfsm-node',
  });
  return kc;
}

/** A handle on a node that is already running (started by this process or by `npm run node -- start`). */
export async function attachNode(options: { programs: Pick<NodePrograms, 'kubectl'>; dirs?: NodeDirs }) {
  const dirs = options.dirs ?? nodeDirs();
  const gateway = gatewayTo(dirs.gatewaySocket);
  return nodeHandle(dirs, gateway, await gateway.open('127.0.0.1', API_PORT), options.programs.kubectl);
}

/** The handle on a running node, reached through `gateway`, whose API server is at loopback port `apiPort`. */
function nodeHandle(dirs: NodeDirs, gateway: Gateway, apiPort: number, kubectl: string): RealNode {
  const adminKubeconfig = join(dirs.pki, 'admin.kubeconfig');
  return {
    dirs,
    gateway,
    kubeConfig: adminKubeConfigOver(apiPort, dirs),
    adminKubeconfig,
    kubectl: (args, opts = {}) => kubectlIn(kubectl, adminKubeconfig, args, opts),
    detach: () => gateway.close(),
  };
}

async function kubectlIn(
  kubectl: string,
  kubeconfigPath: string,
  args: string[],
  options: { input?: string; timeoutMs?: number },
): Promise<string> {
  const { code, stdout, stderr } = await runInNamespace(kubectl, [`--kubeconfig=${kubeconfigPath}`, ...args], options);
  if (code === 0) return stdout;
  throw new Error(`kubectl ${args.join(' ')} failed (exit ${code}): ${stderr.trim() || stdout.trim()}`);
}

export async function startNode(options: StartNodeOptions): Promise<RealNode> {
  const log = options.log ?? stderrLog;
  const dirs = options.dirs ?? nodeDirs();
  const timeoutMs = options.timeoutMs ?? 120_000;
  const { programs } = options;
  const started = Date.now();
  const step = (what: string) => log(`${what} (${((Date.now() - started) / 1000).toFixed(1)}s)`);

  if (nodeIsUp() || readState(dirs)) {
    log('a node of an earlier run is still up: stopping it first');
    await stopNode({ dirs, log });
  }
  rmSync(dirs.run, { recursive: true, force: true });
  for (const dir of [dirs.run, dirs.pki, dirs.logs, dirs.etcd, dirs.kubelet, dirs.volumes, dirs.containerdRoot]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  mkdirSync(join(dirs.run, 'cni', 'net.d'), { recursive: true });
  const state: NodeState = { startedAt: new Date().toISOString(), pids: {}, cniNamespacesBefore: podNamespaces([]) };
  const saveState = () => writeFileSync(dirs.stateFile, `${JSON.stringify(state, null, 2)}\n`);
  saveState();

  const running: ManagedProcess[] = [];
  const daemon = (name: string, program: string, args: string[], cwd?: string) => {
    const proc = startProcess({
      name,
      command: 'nsenter',
      args: [`--net=${NETNS_PATH}`, '--', program, ...args],
      logFile: join(dirs.logs, `${name}.log`),
      outlivesUs: true,
      ...(cwd ? { cwd } : {}),
    });
    running.push(proc);
    state.pids[name] = proc.pid;
    saveState();
    return proc;
  };
  const until = (what: string, probe: () => Promise<boolean>) => waitUntil(what, probe, { timeoutMs, watch: running });

  try {
    await createNamespace();
    step(`network namespace ${NETNS_PATH}: ${NODE_IP} on lo, pods on ${POD_CIDR}, no default route`);

    const pki = await createPki(dirs.pki, [
      `IP:${NODE_IP}`,
      `IP:${KUBERNETES_SERVICE_IP}`,
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      'DNS:kubernetes.default.svc',
      `DNS:kubernetes.default.svc.${CLUSTER_DOMAIN}`,
    ]);
    await Promise.all([
      issueCertificate(
        dirs.pki,
        'kubelet-serving',
        `/CN=${NODE_NAME}`,
        `subjectAltName=IP:${NODE_IP},DNS:${NODE_NAME}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`,
      ),
      issueCertificate(
        dirs.pki,
        'kubelet',
        `/O=system:nodes/CN=system:node:${NODE_NAME}`,
        'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n',
      ),
    ]);
    const server = `https://127.0.0.1:${API_PORT}`;
    const adminKubeconfig = join(dirs.pki, 'admin.kubeconfig');
    writeFileSync(
      adminKubeconfig,
      kubeconfig({ server, ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey, user: 'admin' }),
    );
    const kubeletKubeconfig = join(dirs.pki, 'kubelet.kubeconfig');
    writeFileSync(
      kubeletKubeconfig,
      kubeconfig({
        server,
        ca: pki.caCert,
        cert: join(dirs.pki, 'kubelet.crt'),
        key: join(dirs.pki, 'kubelet.key'),
        user: `system:node:${NODE_NAME}`,
      }),
    );
    const file = (name: string, text: string) => {
      const path = join(dirs.run, name);
      writeFileSync(path, text);
      return path;
    };
    const containerdToml = file(
      'containerd.toml',
      containerdConfig(dirs, { pauseImage: options.pauseImage.ref, runc: RUNC, cniBin: CNI_BIN }),
    );
    writeFileSync(join(dirs.run, 'cni', 'net.d', '10-pgfsm.conflist'), cniConfig(dirs));
    const kubeletYaml = file('kubelet.yaml', kubeletConfig(dirs));
    const kubeProxyYaml = file('kube-proxy.yaml', kubeProxyConfig(dirs));
    const corefilePath = file('Corefile', corefile(dirs));
    step('PKI and configuration written');

    // The gateway's relay first: every probe below goes through it.
    daemon('gateway-relay', process.execPath, [
      packageFile('src/tools/node/gateway-relay.mjs'),
      dirs.gatewaySocket,
      DNS_IP,
    ]);
    await until('the gateway relay', async () => existsSync(dirs.gatewaySocket));
    const gateway = gatewayTo(dirs.gatewaySocket);
    const port = (p: number) => gateway.open('127.0.0.1', p);

    daemon('containerd', 'containerd', ['--config', containerdToml]);
    const ctr = (...args: string[]) =>
      command('ctr', ['--address', dirs.containerdSocket, '--namespace', 'k8s.io', ...args], 300_000);
    await until('containerd', async () => {
      await ctr('version');
      return true;
    });
    step('containerd ready');
    await importImages(ctr, [options.pauseImage, ...options.images], dirs, log);
    step(`${options.images.length + 1} images in containerd`);

    daemon('etcd', programs.etcd, [
      '--name=pgfsm-node',
      `--data-dir=${dirs.etcd}`,
      '--listen-client-urls=http://127.0.0.1:2379',
      '--advertise-client-urls=http://127.0.0.1:2379',
      '--listen-peer-urls=http://127.0.0.1:2380',
      '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      '--initial-cluster=pgfsm-node=http://127.0.0.1:2380',
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    const etcdPort = await port(2379);
    await until('etcd', async () => (await get(`http://127.0.0.1:${etcdPort}/health`)).status === 200);
    step('etcd ready');

    daemon('kube-apiserver', programs.kubeApiserver, [
      '--etcd-servers=http://127.0.0.1:2379',
      '--bind-address=0.0.0.0',
      `--secure-port=${API_PORT}`,
      `--advertise-address=${NODE_IP}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${pki.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--allow-privileged=true',
      `--kubelet-client-certificate=${pki.adminCert}`,
      `--kubelet-client-key=${pki.adminKey}`,
      `--kubelet-certificate-authority=${pki.caCert}`,
      '--kubelet-preferred-address-types=InternalIP',
      '--profiling=false',
    ]);
    const apiPort = await port(API_PORT);
    const tls = {
      ca: readFileSync(pki.caCert),
      cert: readFileSync(pki.adminCert),
      key: readFileSync(pki.adminKey),
    };
    await until('kube-apiserver /readyz', async () => {
      const res = await get(`https://127.0.0.1:${apiPort}/readyz`, tls);
      return res.status === 200;
    });
    step('kube-apiserver ready');

    daemon('kube-controller-manager', programs.kubeControllerManager, [
      `--kubeconfig=${adminKubeconfig}`,
      `--authentication-kubeconfig=${adminKubeconfig}`,
      `--authorization-kubeconfig=${adminKubeconfig}`,
      '--leader-elect=false',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${join(dirs.pki, 'ca.key')}`,
      '--bind-address=127.0.0.1',
      '--secure-port=10257',
      `--cert-dir=${join(dirs.run, 'kcm')}`,
      '--profiling=false',
    ]);
    daemon('kube-scheduler', programs.kubeScheduler, [
      `--kubeconfig=${adminKubeconfig}`,
      `--authentication-kubeconfig=${adminKubeconfig}`,
      `--authorization-kubeconfig=${adminKubeconfig}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      '--secure-port=10259',
      '--profiling=false',
    ]);
    const kcmPort = await port(10257);
    const schedulerPort = await port(10259);
    await until(
      'kube-controller-manager',
      async () => (await get(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true })).status === 200,
    );
    await until(
      'kube-scheduler',
      async () => (await get(`https://127.0.0.1:${schedulerPort}/healthz`, { insecure: true })).status === 200,
    );
    step('kube-controller-manager and kube-scheduler ready');

    daemon('kubelet', programs.kubelet, [
      `--config=${kubeletYaml}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${dirs.kubelet}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--v=1',
    ]);
    const kubeConfig = adminKubeConfigOver(apiPort, dirs);
    const core = kubeConfig.makeApiClient(CoreV1Api);
    await until(`node ${NODE_NAME} Ready`, async () => {
      const node = await core.readNode({ name: NODE_NAME });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    });
    step(`kubelet registered ${NODE_NAME}: Ready`);

    daemon('kube-proxy', programs.kubeProxy, [`--config=${kubeProxyYaml}`]);
    daemon('coredns', programs.coredns, ['-conf', corefilePath]);
    const proxyPort = await port(10256);
    const dnsReadyPort = await port(8181);
    await until('kube-proxy', async () => (await get(`http://127.0.0.1:${proxyPort}/healthz`)).status === 200);
    await until('CoreDNS', async () => (await get(`http://127.0.0.1:${dnsReadyPort}/ready`)).status === 200);
    // Pods are refused ("serviceaccount default not found") until the controllers have made it.
    await until('the default ServiceAccount', async () => {
      await core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
      return true;
    });
    await makeLocalVolumes(kubeConfig, dirs);
    step(`node up: kube-proxy, CoreDNS, ${LOCAL_VOLUMES} local volumes of StorageClass ${STORAGE_CLASS}`);

    return nodeHandle(dirs, gateway, apiPort, programs.kubectl);
  } catch (error) {
    log(`the node did not start; its logs are in ${dirs.logs} until the next start`);
    // Keep the logs for the reader: stop everything, then put the logs back where the message says.
    const logsCopy = `${dirs.base}/last-failed-logs`;
    rmSync(logsCopy, { recursive: true, force: true });
    await command('cp', ['-r', dirs.logs, logsCopy]).catch(() => undefined);
    await stopNode({ dirs, log }).catch(() => undefined);
    throw Object.assign(error as Error, {
      message: `${(error as Error).message}\n(the node's logs were kept in ${logsCopy})`,
    });
  }
}

/**
 * Imports archives into the containerd of a node that runs already (e.g. another CloudNativePG release's
 * operator and PgBouncer images, for an upgrade), the way a start imports its own.
 */
export async function importIntoNode(images: ImageArchive[], options: { dirs?: NodeDirs; log?: Log } = {}) {
  const dirs = options.dirs ?? nodeDirs();
  const ctr = (...args: string[]) =>
    command('ctr', ['--address', dirs.containerdSocket, '--namespace', 'k8s.io', ...args], 300_000);
  await importImages(ctr, images, dirs, options.log ?? stderrLog);
}

/**
 * Imports each archive unless containerd already holds that reference from the same archive (same path,
 * size and time): a warm start then costs a listing, not an unpack.
 */
async function importImages(
  ctr: (...args: string[]) => Promise<string>,
  images: ImageArchive[],
  dirs: NodeDirs,
  log: Log,
): Promise<void> {
  const ledgerPath = join(dirs.containerdRoot, 'imported.json');
  let ledger: Record<string, string> = {};
  try {
    ledger = JSON.parse(readFileSync(ledgerPath, 'utf8')) as Record<string, string>;
  } catch {
    ledger = {};
  }
  const present = new Set((await ctr('images', 'ls', '-q')).split('\n').map((l) => l.trim()));
  for (const image of images) {
    const stat = statSync(image.tar);
    const stamp = `${image.tar}:${stat.size}:${stat.mtimeMs}`;
    const ref = image.ref.includes('/') ? image.ref : `docker.io/library/${image.ref}`;
    if (ledger[ref] === stamp && present.has(ref)) continue;
    const began = Date.now();
    await ctr('images', 'import', '--no-unpack=false', image.tar);
    ledger[ref] = stamp;
    writeFileSync(ledgerPath, JSON.stringify(ledger, null, 2));
    log(`  imported ${image.ref} (${((Date.now() - began) / 1000).toFixed(1)}s)`);
  }
}

async function makeLocalVolumes(kubeConfig: KubeConfig, dirs: NodeDirs): Promise<void> {
  const storage = kubeConfig.makeApiClient(StorageV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await storage.createStorageClass({
    body: {
      metadata: {
        name: STORAGE_CLASS,
        annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
      },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Retain',
    },
  });
  for (let i = 0; i < LOCAL_VOLUMES; i++) {
    const path = join(dirs.volumes, `pv-${i}`);
    mkdirSync(path, { recursive: true });
    const body: V1PersistentVolume = {
      metadata: { name: `local-pv-${i}` },
      spec: {
        capacity: { storage: '100Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: STORAGE_CLASS,
        local: { path },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] },
            ],
          },
        },
      },
    };
    await core.createPersistentVolume({ body });
  }
}
