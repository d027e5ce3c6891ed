/**
 * Stopping the node leaves nothing behind: no process (daemons, shims, Pods' processes), no mount (kubelet's
 * volumes, containerd's snapshots and shm, the Pods' network namespaces), no network namespace, no kubepods
 * cgroup and, because kube-proxy's chains live in the node's namespace, no iptables chain. `leftovers()`
 * lists whatever remains, so the teardown test (and `npm run node -- status`) can prove it.
 *
 * The order matters: the Pods' processes first (they are in kubepods cgroups, outside the node's namespace
 * when they have their own), then everything in the namespace, then mounts, then namespaces and cgroups.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { KUBEPODS_CGROUP, NETNS, NETNS_PATH, type NodeDirs } from './layout.ts';
import { command } from './netns.ts';

const CGROUP_ROOT = '/sys/fs/cgroup';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every `kubepods` directory of every cgroup hierarchy (v1: one per controller; v2: one). */
function kubepodsCgroups(): string[] {
  const found: string[] = [];
  const direct = join(CGROUP_ROOT, KUBEPODS_CGROUP);
  if (existsSync(join(direct, 'cgroup.procs'))) found.push(direct);
  let hierarchies: string[] = [];
  try {
    hierarchies = readdirSync(CGROUP_ROOT);
  } catch {
    return found;
  }
  for (const hierarchy of hierarchies) {
    const dir = join(CGROUP_ROOT, hierarchy, KUBEPODS_CGROUP);
    if (existsSync(join(dir, 'cgroup.procs'))) found.push(dir);
  }
  return found;
}

/** Directories of a cgroup subtree, deepest first (rmdir order). */
function subtree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries: import('node:fs').Dirent[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(join(d, e.name));
    out.push(d);
  };
  walk(dir);
  return out;
}

function pidsOfCgroups(): number[] {
  const pids = new Set<number>();
  for (const top of kubepodsCgroups()) {
    for (const dir of subtree(top)) {
      try {
        for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
          if (line.trim()) pids.add(Number(line));
        }
      } catch {
        // gone meanwhile
      }
    }
  }
  return [...pids];
}

async function pidsOfNamespace(): Promise<number[]> {
  if (!existsSync(NETNS_PATH)) return [];
  const out = await command('ip', ['netns', 'pids', NETNS]).catch(() => '');
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

function kill(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Mount points under the node's directories, and the Pods' network namespaces, deepest first. */
function nodeMounts(dirs: NodeDirs, podNamespaces: readonly string[]): string[] {
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => Boolean(p))
    .map((p) => p.replace(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))));
  const ours = (p: string) => p.startsWith(`${dirs.base}/`) || podNamespaces.some((ns) => p === `/run/netns/${ns}`);
  return [...new Set(points.filter(ours))].sort((a, b) => b.length - a.length);
}

/** The Pods' network namespaces containerd made (`cni-<uuid>`) that were not there before the node started. */
export function podNamespaces(before: readonly string[]): string[] {
  let now: string[] = [];
  try {
    now = readdirSync('/run/netns');
  } catch {
    return [];
  }
  return now.filter((name) => name.startsWith('cni-') && !before.includes(name));
}

export async function teardown(dirs: NodeDirs, cniNamespacesBefore: readonly string[]): Promise<void> {
  // 1. The Pods' processes, then the daemons and shims in the namespace: a polite TERM, then KILL.
  kill(pidsOfCgroups(), 'SIGKILL');
  kill(await pidsOfNamespace(), 'SIGTERM');
  for (let i = 0; i < 20 && (await pidsOfNamespace()).length > 0; i++) await sleep(250);
  for (let i = 0; i < 20; i++) {
    const left = [...(await pidsOfNamespace()), ...pidsOfCgroups()];
    if (left.length === 0) break;
    kill(left, 'SIGKILL');
    await sleep(100);
  }
  // 2. Mounts: lazily, deepest first, so a busy one cannot stop the rest.
  const pods = podNamespaces(cniNamespacesBefore);
  for (const point of nodeMounts(dirs, pods)) {
    await command('umount', [point]).catch(() => command('umount', ['-l', point]).catch(() => undefined));
  }
  // 3. Namespaces, the node's last.
  for (const ns of pods) await command('ip', ['netns', 'del', ns]).catch(() => undefined);
  if (existsSync(NETNS_PATH)) await command('ip', ['netns', 'del', NETNS]);
  // 4. The kubepods cgroups, now empty.
  for (const top of kubepodsCgroups()) {
    for (const dir of subtree(top)) {
      for (let i = 0; i < 10; i++) {
        try {
          rmdirSync(dir);
          break;
        } catch {
          // rmdir of a cgroup: EBUSY for a moment after its last process died
          await sleep(100);
        }
      }
    }
  }
  rmSync(dirs.run, { recursive: true, force: true });
}

export interface Leftovers {
  processes: number[];
  mounts: string[];
  namespaces: string[];
  cgroups: string[];
  rootIptablesChains: string[];
}

export async function leftovers(dirs: NodeDirs, cniNamespacesBefore: readonly string[]): Promise<Leftovers> {
  const pods = podNamespaces(cniNamespacesBefore);
  const rules = await command('iptables-save', []).catch(() => '');
  return {
    processes: [...(await pidsOfNamespace()), ...pidsOfCgroups()],
    mounts: nodeMounts(dirs, pods),
    namespaces: [...(existsSync(NETNS_PATH) ? [NETNS] : []), ...pods],
    cgroups: kubepodsCgroups(),
    rootIptablesChains: rules
      .split('\n')
      .filter((line) => /^:KUBE-/.test(line))
      .map((line) => line.split(' ')[0]?.slice(1) ?? line),
  };
}

export const isClean = (l: Leftovers) =>
  l.processes.length + l.mounts.length + l.namespaces.length + l.cgroups.length + l.rootIptablesChains.length === 0;
