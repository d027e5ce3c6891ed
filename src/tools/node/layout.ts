/**
 * Where the real node lives: its network namespace, its addresses and its directories.
 *
 * The network rule: every daemon and every Pod of the node runs inside ONE network namespace that the harness
 * creates, with no default route and no masquerading, so nothing of the node can reach, or be routed through,
 * this machine's own interfaces. Processes outside reach it only over a Unix socket (see gateway.ts), never
 * over an interface of the root namespace.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';

export const NETNS = 'pgfsmnode';
export const NETNS_PATH = `/run/netns/${NETNS}`;
export const NODE_NAME = 'pgfsm-node';
/** The node's own address: a /32 on the namespace's loopback (this kernel has no dummy interfaces). */
export const NODE_IP = '10.77.0.1';
/** CoreDNS runs as a process of the namespace on the node's address. */
export const DNS_IP = NODE_IP;
export const POD_CIDR = '10.244.0.0/24';
export const BRIDGE = 'cni0';
export const BRIDGE_ADDRESS = '10.244.0.1/24';
export const SERVICE_CIDR = '10.96.0.0/16';
/** The first address of the Service range: the `kubernetes` Service. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
export const API_PORT = 6443;
export const CLUSTER_DOMAIN = 'cluster.local';
/** kubelet's cgroup parent: global on this machine, so only one node may run at a time. */
export const KUBEPODS_CGROUP = 'kubepods';
/** Static local PersistentVolumes made at start; CNPG's instances and their replicas claim them. */
export const LOCAL_VOLUMES = 24;
export const STORAGE_CLASS = 'local';

/** `${PGFSM_NODE_DIR:-${XDG_CACHE_HOME:-~/.cache}/pgfsm/node}` */
export function nodeBaseDir(): string {
  const explicit = process.env.PGFSM_NODE_DIR;
  if (explicit) return explicit;
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'pgfsm', 'node');
}

export interface NodeDirs {
  base: string;
  /** Wiped at every start and every stop: PKI, configs, etcd, kubelet, logs, volumes, sockets. */
  run: string;
  pki: string;
  logs: string;
  etcd: string;
  kubelet: string;
  volumes: string;
  /** containerd's content and snapshots are kept between runs: a warm start imports no image again. */
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  gatewaySocket: string;
  stateFile: string;
}

export function nodeDirs(base = nodeBaseDir()): NodeDirs {
  const run = join(base, 'run');
  return {
    base,
    run,
    pki: join(run, 'pki'),
    logs: join(run, 'logs'),
    etcd: join(run, 'etcd'),
    kubelet: join(run, 'kubelet'),
    volumes: join(run, 'volumes'),
    containerdRoot: join(base, 'containerd'),
    containerdState: join(run, 'containerd'),
    containerdSocket: join(run, 'containerd.sock'),
    gatewaySocket: join(run, 'gateway.sock'),
    stateFile: join(base, 'state.json'),
  };
}
