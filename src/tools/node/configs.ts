/**
 * The node's configuration files, made fresh at every start. Every setting that is not a default says why:
 * most of them are what this kind of machine needs (a VM without CAP_SYS_RESOURCE, cgroup v1, a network
 * namespace that is not the initial one). The reference notes in shared/reference/real-node.md found them.
 */
import { stringify } from 'yaml';
import { BRIDGE, CLUSTER_DOMAIN, DNS_IP, NODE_IP, NODE_NAME, type NodeDirs, POD_CIDR } from './layout.ts';

export function containerdConfig(dirs: NodeDirs, options: { pauseImage: string; runc: string; cniBin: string }) {
  const q = JSON.stringify;
  return `version = 2
root = ${q(dirs.containerdRoot)}
state = ${q(dirs.containerdState)}
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = ${q(dirs.containerdSocket)}
[ttrpc]
  address = ${q(`${dirs.containerdSocket}.ttrpc`)}
[debug]
  address = ""
  level = "info"
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${dirs.containerdRoot}/opt`)}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(options.pauseImage)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # This kind of VM withholds CAP_SYS_RESOURCE: a negative oom_score_adj (kubelet asks -998 for sandboxes) is
  # refused and every sandbox fails to start. Clamp to containerd's own score instead.
  restrict_oom_score_adj = true
  disable_apparmor = true
  max_container_log_line_size = 16384
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    discard_unpacked_layers = false
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = ${q(options.runc)}
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(options.cniBin)}
    conf_dir = ${q(`${dirs.run}/cni/net.d`)}
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
`;
}

/** The bridge network: no masquerading and no route out, so Pods reach only the node's namespace. */
export function cniConfig(dirs: NodeDirs): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'pgfsm',
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          // The bridge plugin refuses hairpinMode together with promiscMode; hairpin alone lets a Pod reach
          // itself through its own Service.
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            dataDir: `${dirs.run}/cni/ipam`,
            ranges: [[{ subnet: POD_CIDR }]],
            // Inside the Pod: everything goes to the bridge. The node's namespace has no default route, so
            // anything not of the node ends there.
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
      ],
    },
    null,
    2,
  )}\n`;
}

export function kubeletConfig(dirs: NodeDirs): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This machine has cgroup v1 (hybrid); kubelet (1.34 and 1.36) refuses it unless told not to.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    // The pods' cgroups go to /kubepods of each hierarchy (KUBEPODS_CGROUP): global, so one node per machine.
    cgroupRoot: '/',
    containerRuntimeEndpoint: `unix://${dirs.containerdSocket}`,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: `${dirs.pki}/ca.crt` },
    },
    authorization: { mode: 'Webhook' },
    tlsCertFile: `${dirs.pki}/kubelet-serving.crt`,
    tlsPrivateKeyFile: `${dirs.pki}/kubelet-serving.key`,
    address: NODE_IP,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    clusterDomain: CLUSTER_DOMAIN,
    clusterDNS: [DNS_IP],
    // Nothing of the machine's own resolver reaches the Pods.
    resolvConf: '',
    podLogsDir: `${dirs.logs}/pods`,
    failSwapOn: false,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    registerNode: true,
    serializeImagePulls: false,
    maxPods: 80,
    evictionHard: {
      'memory.available': '200Mi',
      'nodefs.available': '2%',
      'imagefs.available': '2%',
      'nodefs.inodesFree': '2%',
    },
    imageGCHighThresholdPercent: 95,
    imageGCLowThresholdPercent: 90,
  });
}

export function kubeProxyConfig(dirs: NodeDirs): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: `${dirs.pki}/admin.kubeconfig` },
    hostnameOverride: NODE_NAME,
    mode: 'iptables',
    clusterCIDR: POD_CIDR,
    bindAddress: NODE_IP,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    nodePortAddresses: [`${NODE_IP}/32`],
    // nf_conntrack_max is read-only outside the initial network namespace: leave it (and the timeouts) alone.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    iptables: { masqueradeAll: false, localhostNodePorts: false },
  });
}

/** CoreDNS as a process of the namespace. No `forward`: a name outside cluster.local is never sent anywhere. */
export function corefile(dirs: NodeDirs): string {
  return `.:53 {
    bind ${DNS_IP}
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        kubeconfig ${dirs.pki}/admin.kubeconfig pgfsm-node
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
`;
}

/** A kubeconfig with a client certificate, for a daemon of the node or for an admin. */
export function kubeconfig(options: { server: string; ca: string; cert: string; key: string; user: string }): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'pgfsm-node', cluster: { server: options.server, 'certificate-authority': options.ca } }],
    users: [{ name: options.user, user: { 'client-certificate': options.cert, 'client-key': options.key } }],
    contexts: [{ name: 'pgfsm-node', context: { cluster: 'pgfsm-node', user: options.user } }],
    'current-context': 'pgfsm-node',
  });
}
