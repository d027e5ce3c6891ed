/**
 * The node's network namespace: created with loopback, the node's /32 address and the CNI bridge, and with
 * no default route and no link to any interface of the machine. A route to the Service range over the bridge
 * lets processes of the namespace (the relay, the harness's psql) reach ClusterIPs: locally generated packets
 * need a route before kube-proxy's OUTPUT DNAT applies.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { BRIDGE, BRIDGE_ADDRESS, NETNS, NETNS_PATH, NODE_IP, SERVICE_CIDR } from './layout.ts';

const execFileAsync = promisify(execFile);

/** Runs a command and fails with its stderr; the command line is in the message, so a failure says what to try. */
export async function command(file: string, args: string[], timeoutMs = 60_000): Promise<string> {
  try {
    const { stdout } = await execFileAsync(file, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: string };
    const detail = e.code === 'ENOENT' ? `${file} is not installed` : (e.stderr?.trim() || e.message).slice(0, 2000);
    throw new Error(`\`${file} ${args.join(' ')}\` failed: ${detail}`);
  }
}

/** The same command run inside the node's namespace (network only: mounts stay shared, see daemons.ts). */
export function inNamespace(file: string, args: string[], timeoutMs?: number): Promise<string> {
  return command('nsenter', [`--net=${NETNS_PATH}`, '--', file, ...args], timeoutMs);
}

/**
 * A command inside the node's namespace that reads `input` on stdin (a manifest, curl's config with credentials,
 * which must not be on a command line) and whose exit code the caller judges. Killed after `timeoutMs`.
 */
export function runInNamespace(
  file: string,
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--net=${NETNS_PATH}`, '--', file, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

export const namespaceExists = () => existsSync(NETNS_PATH);

export async function createNamespace(): Promise<void> {
  await command('ip', ['netns', 'add', NETNS]);
  const ip = (...args: string[]) => command('ip', ['-n', NETNS, ...args]);
  await ip('link', 'set', 'lo', 'up');
  await ip('addr', 'add', `${NODE_IP}/32`, 'dev', 'lo');
  // Made before the CNI plugin runs (it adopts an existing bridge), so that the Service route can exist now.
  await ip('link', 'add', BRIDGE, 'type', 'bridge');
  await ip('addr', 'add', BRIDGE_ADDRESS, 'dev', BRIDGE);
  await ip('link', 'set', BRIDGE, 'up');
  await ip('route', 'add', SERVICE_CIDR, 'dev', BRIDGE, 'src', NODE_IP);
  // Pod → Service → Pod on the same bridge is routed back out of it.
  await inNamespace('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  // kube-proxy's rules must see bridged traffic (Pod → Service of a Pod on the same bridge).
  await command('modprobe', ['br_netfilter']).catch(() => undefined);
}

/** What proves the rule: the namespace has no default route, and the root namespace no route into it. */
export async function routesOutOf(): Promise<{ defaultRoute: boolean; rootRoutesToNode: string[] }> {
  const inside = await command('ip', ['-n', NETNS, 'route', 'show', 'default']);
  const root = await command('ip', ['route', 'show']);
  const rootRoutesToNode = root.split('\n').filter((line) => /^(10\.77\.|10\.244\.|10\.96\.)/.test(line.trim()));
  return { defaultRoute: inside.trim() !== '', rootRoutesToNode };
}

export async function deleteNamespace(): Promise<void> {
  if (namespaceExists()) await command('ip', ['netns', 'del', NETNS]);
}
