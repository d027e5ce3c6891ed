/**
 * Finds or builds the control-plane binaries: kube-apiserver, etcd, (optionally) kube-controller-manager and
 * (optionally) CloudNativePG's operator, `cmd/manager`, whose admission webhooks the harness runs; and, for a
 * real single node ({@link ensureNodeBinaries}), also kubelet, kube-scheduler, kube-proxy, kubectl and CoreDNS.
 *
 * Order of precedence, per binary:
 *   1. envtest's variables: TEST_ASSET_KUBE_APISERVER / TEST_ASSET_ETCD / TEST_ASSET_KUBECTL (plus our own
 *      TEST_ASSET_KUBE_CONTROLLER_MANAGER, TEST_ASSET_CNPG_MANAGER, TEST_ASSET_KUBELET, TEST_ASSET_KUBE_SCHEDULER,
 *      TEST_ASSET_KUBE_PROXY, TEST_ASSET_COREDNS), then KUBEBUILDER_ASSETS (a directory holding the binaries);
 *   2. the per-version cache outside git (`${XDG_CACHE_HOME:-$HOME/.cache}/pgfsm/control-plane/`);
 *   3. a build from the Go module proxy using the wrapper modules in
 *      src/tools/control-plane/modules/{kube,etcd,cnpg,coredns}, which hold only go.mod/go.sum (cnpg also a
 *      build-tagged blank import, coredns a small main choosing its plugins) (upstream's own go.mod files carry
 *      replace directives, so `go install pkg@version` is refused; the wrappers supply the replaces instead).
 *
 * A missing binary with no Go toolchain is a loud error, never a silent skip: a suite that "passes" without a
 * control plane would prove nothing.
 */
import { execFile, spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { packageFile } from '../package-files.ts';
import { acquireLock } from './lock.ts';
import { type Log, stderrLog } from './log.ts';

const execFileAsync = promisify(execFile);

/**
 * The versions pgfsm is tested on (docs/compatibility.md), each with its wrapper module. The first of each list is
 * the default; `PGFSM_KUBERNETES_VERSION` / `PGFSM_CNPG_VERSION` pick another for `npm run test:compat`. Pinned
 * exactly: the Go module proxy refuses version lists, so nothing may ask for "latest".
 */
export const SUPPORTED_KUBERNETES = { 'v1.36.3': 'kube', 'v1.34.4': 'kube-v1.34' } as const;
export const SUPPORTED_CNPG = { 'v1.30.1': 'cnpg', 'v1.29.2': 'cnpg-v1.29', 'v1.28.2': 'cnpg-v1.28' } as const;
export type KubernetesVersion = keyof typeof SUPPORTED_KUBERNETES;
export type CnpgVersion = keyof typeof SUPPORTED_CNPG;

/** A version chosen by environment variable, or the default; an unknown one is an error naming the choices. */
export function chosenVersion<V extends string>(
  variable: string,
  supported: Record<V, string>,
  env: NodeJS.ProcessEnv = process.env,
): V {
  const versions = Object.keys(supported) as V[];
  const wanted = env[variable];
  if (wanted === undefined || wanted === '') return versions[0] as V;
  const normalised = (wanted.startsWith('v') ? wanted : `v${wanted}`) as V;
  if (!versions.includes(normalised)) {
    throw new Error(`${variable}=${wanted} is not one pgfsm is tested on; choose one of ${versions.join(', ')}`);
  }
  return normalised;
}

export const KUBERNETES_VERSION: KubernetesVersion = chosenVersion('PGFSM_KUBERNETES_VERSION', SUPPORTED_KUBERNETES);
export const ETCD_VERSION = 'v3.6.16';
export const CNPG_VERSION: CnpgVersion = chosenVersion('PGFSM_CNPG_VERSION', SUPPORTED_CNPG);
export const CNPG_MODULE = 'github.com/cloudnative-pg/cloudnative-pg';
/** CoreDNS for a real node's cluster DNS; its own wrapper module (it brings client-go v0.32.3). */
export const COREDNS_VERSION = 'v1.12.1';
/**
 * For backups on a real node (issue 36): the Barman Cloud Plugin, CloudNativePG's CNPG-I plugin that archives WAL and
 * takes base backups with barman-cloud, and versitygw, an S3 gateway on a local directory that plays the object
 * store inside the node's namespace. Each has a wrapper module of its own, so that neither can shift the version of
 * anything the operator or the control plane is built from.
 */
export const BARMAN_CLOUD_VERSION = 'v0.15.0';
export const BARMAN_CLOUD_MODULE = 'github.com/cloudnative-pg/plugin-barman-cloud';
export const VERSITYGW_VERSION = 'v1.8.0';
export const VERSITYGW_MODULE = 'github.com/versity/versitygw';
/** What only a backup test needs: built on demand by ensureBackupBinaries, never by a plain node start. */
export const BACKUP_COMPONENTS: readonly Component[] = ['barman-cloud-plugin', 'versitygw'];
/** etcd 3.6.16's own go.mod says `go 1.26.0`, and we build with GOTOOLCHAIN=local (no toolchain downloads). */
const MINIMUM_GO = [1, 26] as const;

export type Component =
  | 'kube-apiserver'
  | 'etcd'
  | 'kube-controller-manager'
  | 'cnpg-manager'
  | 'kubelet'
  | 'kube-scheduler'
  | 'kube-proxy'
  | 'kubectl'
  | 'coredns'
  | 'barman-cloud-plugin'
  | 'versitygw';

/** What a real single node runs, in build order (kubelet first: the others reuse most of what it compiles). */
export const NODE_COMPONENTS: readonly Component[] = [
  'kube-apiserver',
  'etcd',
  'kube-controller-manager',
  'cnpg-manager',
  'kubelet',
  'kube-scheduler',
  'kube-proxy',
  'kubectl',
  'coredns',
];

interface ComponentSpec {
  component: Component;
  version: string;
  /** Wrapper module directory (go.mod/go.sum only). */
  moduleDir: string;
  /** Upstream `main` package, built by import path. */
  pkg: string;
  ldflags: string;
  envVar: string;
  /** Arguments that make the binary print its version (default `--version`). */
  versionArgs?: string[];
  /** envtest's asset bundles always hold it, so KUBEBUILDER_ASSETS without it is an error. */
  inEnvtestAssets?: boolean;
}

const wrappers = packageFile('src/tools/control-plane/modules');

/** Without these -X flags /version would say v0.0.0-master; the API itself does not depend on them. */
const kubeLdflags = (() => {
  const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
  const base = 'k8s.io/component-base/version';
  return [
    '-s -w',
    `-X ${base}.gitVersion=${KUBERNETES_VERSION}`,
    `-X ${base}.gitMajor=${major}`,
    `-X ${base}.gitMinor=${minor}`,
    `-X ${base}.gitTreeState=clean`,
  ].join(' ');
})();

const SPECS: Record<Component, ComponentSpec> = {
  'kube-apiserver': {
    component: 'kube-apiserver',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kube-apiserver',
    ldflags: kubeLdflags,
    envVar: 'TEST_ASSET_KUBE_APISERVER',
    inEnvtestAssets: true,
  },
  etcd: {
    component: 'etcd',
    version: ETCD_VERSION,
    moduleDir: join(wrappers, 'etcd'),
    pkg: 'go.etcd.io/etcd/server/v3',
    // etcd's version is a compile-time constant in its api module; no -X needed.
    ldflags: '-s -w',
    envVar: 'TEST_ASSET_ETCD',
    inEnvtestAssets: true,
  },
  'kube-controller-manager': {
    component: 'kube-controller-manager',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager',
    ldflags: kubeLdflags,
    envVar: 'TEST_ASSET_KUBE_CONTROLLER_MANAGER',
  },
  'cnpg-manager': {
    component: 'cnpg-manager',
    version: CNPG_VERSION,
    moduleDir: join(wrappers, SUPPORTED_CNPG[CNPG_VERSION]),
    pkg: `${CNPG_MODULE}/cmd/manager`,
    // CNPG's version is a constant in its pkg/versions; no -X needed.
    ldflags: '-s -w',
    envVar: 'TEST_ASSET_CNPG_MANAGER',
    versionArgs: ['version'],
  },
  kubelet: {
    component: 'kubelet',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kubelet',
    ldflags: kubeLdflags,
    envVar: 'TEST_ASSET_KUBELET',
  },
  'kube-scheduler': {
    component: 'kube-scheduler',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kube-scheduler',
    ldflags: kubeLdflags,
    envVar: 'TEST_ASSET_KUBE_SCHEDULER',
  },
  'kube-proxy': {
    component: 'kube-proxy',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kube-proxy',
    ldflags: kubeLdflags,
    envVar: 'TEST_ASSET_KUBE_PROXY',
  },
  kubectl: {
    component: 'kubectl',
    version: KUBERNETES_VERSION,
    moduleDir: join(wrappers, SUPPORTED_KUBERNETES[KUBERNETES_VERSION]),
    pkg: 'k8s.io/kubernetes/cmd/kubectl',
    ldflags: kubeLdflags,
    // envtest's own variable; its bundles carry kubectl, but we never insist on it there.
    envVar: 'TEST_ASSET_KUBECTL',
    versionArgs: ['version', '--client'],
  },
  coredns: {
    component: 'coredns',
    version: COREDNS_VERSION,
    moduleDir: join(wrappers, 'coredns'),
    // The wrapper's own main package (CoreDNS's coremain plus eight plugins).
    pkg: 'pgfsm.local/control-plane/coredns',
    // CoreDNS's version is a constant in coremain; no -X needed.
    ldflags: '-s -w',
    envVar: 'TEST_ASSET_COREDNS',
    versionArgs: ['-version'],
  },
  'barman-cloud-plugin': {
    component: 'barman-cloud-plugin',
    version: BARMAN_CLOUD_VERSION,
    moduleDir: join(wrappers, 'barman-cloud'),
    // One binary serves as the plugin's operator part (`operator`) and as the sidecar in each instance Pod
    // (`instance`, `restore`). It prints no version: componentVersion reads Go's build information instead.
    pkg: `${BARMAN_CLOUD_MODULE}/cmd/manager`,
    ldflags: '-s -w',
    envVar: 'TEST_ASSET_BARMAN_CLOUD_PLUGIN',
  },
  versitygw: {
    component: 'versitygw',
    version: VERSITYGW_VERSION,
    moduleDir: join(wrappers, 'versitygw'),
    pkg: `${VERSITYGW_MODULE}/cmd/versitygw`,
    // Upstream's Makefile sets this variable; without it the binary calls itself version `git`.
    ldflags: `-s -w -X main.Version=${VERSITYGW_VERSION}`,
    envVar: 'TEST_ASSET_VERSITYGW',
  },
};

export interface Binaries {
  kubeApiserver: string;
  etcd: string;
  /** Present when requested and available. */
  kubeControllerManager?: string;
  /** CloudNativePG's operator binary and its module directory (CRDs, webhook configurations); when requested. */
  cnpg?: CnpgAssets;
  /** What each binary reports for `--version`, normalised to `vX.Y.Z`. */
  versions: { kubeApiserver: string; etcd: string; kubeControllerManager?: string; cnpg?: string };
}

export interface CnpgAssets {
  /** The operator binary (`manager`; its `controller` subcommand serves the webhooks). */
  manager: string;
  /** CloudNativePG's Go module directory: `config/crd/bases/*.yaml`, `config/webhook/manifests.yaml`. */
  moduleDir: string;
}

export interface EnsureBinariesOptions {
  /** Also provide kube-controller-manager (for real ownerReference GC and namespace deletion). */
  controllerManager?: boolean;
  /** Also provide CloudNativePG's operator binary and module directory (for its real CRDs and webhooks). */
  cnpg?: boolean;
  /** Cache root; default `$PGFSM_CONTROL_PLANE_CACHE` or `${XDG_CACHE_HOME:-$HOME/.cache}/pgfsm/control-plane`. */
  cacheDir?: string;
  log?: Log;
}

export class MissingBinariesError extends Error {
  override name = 'MissingBinariesError';
}

export function defaultCacheDir(): string {
  const explicit = process.env.PGFSM_CONTROL_PLANE_CACHE;
  if (explicit) return explicit;
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'pgfsm', 'control-plane');
}

export function cachedBinaryPath(cacheDir: string, component: Component): string {
  const spec = SPECS[component];
  return join(cacheDir, `${component}-${spec.version}`, component);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** A binary named by an environment variable must exist: a typo there should not trigger a 20-minute build. */
function fromEnvironment(component: Component): string | undefined {
  const spec = SPECS[component];
  const direct = process.env[spec.envVar];
  if (direct) {
    if (!isExecutable(direct)) {
      throw new MissingBinariesError(`${spec.envVar}=${direct} is not an executable file.`);
    }
    return direct;
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) {
    const candidate = join(assets, component);
    if (isExecutable(candidate)) return candidate;
    // envtest's asset bundles never ship kube-controller-manager, CNPG or the node's binaries, so their absence
    // there is not an error (they are then taken from the cache, or built).
    if (spec.inEnvtestAssets) {
      throw new MissingBinariesError(`KUBEBUILDER_ASSETS=${assets} has no executable ${component}.`);
    }
  }
  return undefined;
}

/**
 * Reads the version a binary prints for `args` (default `--version`), normalised to `vX.Y.Z`. See
 * {@link parseBinaryVersion} for the formats understood.
 */
export async function binaryVersion(path: string, args: string[] = ['--version']): Promise<string> {
  const { stdout } = await execFileAsync(path, args, { timeout: 30_000 });
  const version = parseBinaryVersion(stdout);
  if (!version) throw new Error(`cannot read a version from \`${path} ${args.join(' ')}\`: ${stdout.trim()}`);
  return version;
}

/**
 * kube-apiserver, kube-controller-manager, kubelet, kube-scheduler, kube-proxy: `Kubernetes v1.34.4`;
 * kubectl (`version --client`): `Client Version: v1.34.4` (then `Kustomize Version: …`); etcd:
 * `etcd Version: 3.6.16` (then `Git SHA: …`); CoreDNS (`-version`): `CoreDNS-1.12.1` (then `linux/amd64, …`).
 */
export function parseBinaryVersion(output: string): string | undefined {
  const match = /(?:Kubernetes |Client Version: |etcd Version: |CoreDNS-)v?(\d+\.\d+\.\d+[^\s]*)/.exec(output);
  return match ? `v${match[1]}` : undefined;
}

/** The version of a component's binary, asked the way that component answers. */
function componentVersion(component: Component, path: string): Promise<string> {
  if (component === 'cnpg-manager') return cnpgBinaryVersion(path);
  // Neither prints a version in a form parseBinaryVersion knows: the build information names their modules'.
  if (component === 'barman-cloud-plugin') return moduleVersionOfBinary(path, BARMAN_CLOUD_MODULE);
  if (component === 'versitygw') return moduleVersionOfBinary(path, VERSITYGW_MODULE);
  return binaryVersion(path, SPECS[component].versionArgs);
}

/**
 * The version of `module` a Go binary was built with, from the build information the Go linker embeds (what
 * `go version -m` prints): lines `dep\t<module>\t<version>\t<sum>`, or `mod\t…` for the main module.
 */
export async function moduleVersionOfBinary(path: string, module: string): Promise<string> {
  const text = readFileSync(path).toString('latin1');
  const version = parseModuleVersion(text, module);
  if (!version) throw new Error(`${path} carries no build information naming ${module}`);
  return version;
}

export function parseModuleVersion(buildInfo: string, module: string): string | undefined {
  const escaped = module.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?:^|\n)(?:dep|mod)\t${escaped}\t(v[^\t\n]+)`).exec(buildInfo)?.[1];
}

/** CNPG's `manager version` prints e.g. `Build: {Version:1.30.1 Commit:… Date:…}`. */
export async function cnpgBinaryVersion(path: string): Promise<string> {
  const { stdout } = await execFileAsync(path, ['version'], { timeout: 30_000 });
  const match = /Version:\s*"?v?(\d+\.\d+\.\d+[^\s"}]*)/.exec(stdout);
  if (!match) throw new Error(`cannot read a version from \`${path} version\`: ${stdout.trim()}`);
  return `v${match[1]}`;
}

function howToGetBinaries(cacheDir: string, needed: Component[], problem: string, forNode = false): string {
  const list = needed.map((c) => `${c} ${SPECS[c].version}`).join(', ');
  const what = forNode ? 'a real Kubernetes node' : 'the real Kubernetes control plane for the integration tests';
  return [
    '',
    '==================================================================================================',
    `Cannot start ${what}: ${list || 'binaries'} not found.`,
    problem,
    '',
    'Get the binaries in one of these ways:',
    `  1. Install Go >= ${MINIMUM_GO.join('.')} (https://go.dev/dl/) so that \`go\` is on PATH (or set GO=/path/to/go),`,
    `     then run \`npm run control-plane -- build${forNode ? ' --node' : ''}\` (or just re-run the tests). It builds them`,
    '     once from the Go module proxy (about 5 min per binary on 2 cores; longer when modules must be downloaded;',
    `     \`build --node\` adds kubelet, kube-scheduler, kube-proxy, kubectl and CoreDNS ${COREDNS_VERSION}, about 10 min`,
    `     more) and caches them in ${cacheDir}.`,
    '  2. Point the harness at binaries you already have (envtest conventions):',
    '       export KUBEBUILDER_ASSETS=/dir/containing/kube-apiserver/and/etcd',
    '     or',
    '       export TEST_ASSET_KUBE_APISERVER=/path/to/kube-apiserver TEST_ASSET_ETCD=/path/to/etcd',
    '     (optionally TEST_ASSET_KUBE_CONTROLLER_MANAGER=/path/to/kube-controller-manager).',
    `     CloudNativePG's operator (${CNPG_MODULE}/cmd/manager ${CNPG_VERSION}) is never among envtest's`,
    '     assets: TEST_ASSET_CNPG_MANAGER=/path/to/manager, plus PGFSM_CNPG_MODULE_DIR=/path/to/its/module',
    '     source (for its CRDs and webhook configurations) when Go cannot fetch it.',
    '     A real node also needs TEST_ASSET_KUBELET, TEST_ASSET_KUBE_SCHEDULER, TEST_ASSET_KUBE_PROXY,',
    `     TEST_ASSET_KUBECTL and TEST_ASSET_COREDNS (CoreDNS ${COREDNS_VERSION} with the kubernetes plugin), each`,
    '     taken from KUBEBUILDER_ASSETS when it holds a file of that name, else from the cache, or built.',
    '==================================================================================================',
  ].join('\n');
}

async function findGo(): Promise<{ go: string; version: string } | { problem: string }> {
  const go = process.env.GO || 'go';
  let version: string;
  try {
    const { stdout } = await execFileAsync(go, ['env', 'GOVERSION'], {
      timeout: 60_000,
      env: { ...process.env, GOTOOLCHAIN: 'local' },
    });
    version = stdout.trim();
  } catch (error) {
    return { problem: `No usable Go toolchain: running \`${go} env GOVERSION\` failed (${(error as Error).message}).` };
  }
  const match = /^go(\d+)\.(\d+)/.exec(version);
  const major = Number(match?.[1] ?? 0);
  const minor = Number(match?.[2] ?? 0);
  if (major < MINIMUM_GO[0] || (major === MINIMUM_GO[0] && minor < MINIMUM_GO[1])) {
    return { problem: `The Go toolchain \`${go}\` is ${version}; building needs go${MINIMUM_GO.join('.')} or newer.` };
  }
  return { go, version };
}

interface RunResult {
  code: number | null;
  tail: string[];
}

/** Runs a command, copying its output to a log file and handing each line to `onLine`. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; logFile: string; onLine?: (line: string) => void },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const logStream = createWriteStream(options.logFile, { flags: 'a' });
    logStream.write(`$ ${command} ${args.join(' ')}\n`);
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    let partial = '';
    const onData = (chunk: Buffer) => {
      logStream.write(chunk);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 80) tail.shift();
        options.onLine?.(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (error) => {
      logStream.end();
      reject(error);
    });
    child.once('close', (code) => {
      if (partial) tail.push(partial);
      logStream.end(() => resolve({ code, tail }));
    });
  });
}

/**
 * `[#########...............]  37%`. Packages already in Go's build cache are not named by `go build -v`,
 * so a rebuild may finish before the bar is full: it is a guide, not a promise.
 */
export function progressBar(done: number, total: number, width = 24): string {
  const fraction = total > 0 ? Math.min(done / total, 1) : 0;
  const filled = Math.round(fraction * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%`;
}

async function buildComponent(component: Component, go: string, cacheDir: string, log: Log): Promise<string> {
  const spec = SPECS[component];
  const target = cachedBinaryPath(cacheDir, component);
  const outDir = join(cacheDir, `${component}-${spec.version}`);
  mkdirSync(outDir, { recursive: true });
  const logFile = join(outDir, 'build.log');
  rmSync(logFile, { force: true });
  // GOTOOLCHAIN=local: a dependency asking for a newer Go must fail loudly, not fetch a toolchain.
  // GOWORK=off: a go.work in some parent directory must not change what gets built.
  // CGO_ENABLED=0: static binaries, no C compiler needed (upstream ships kube-apiserver this way too).
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', CGO_ENABLED: '0' };
  const started = Date.now();
  const elapsed = () => `${Math.round((Date.now() - started) / 1000)}s`;
  const fail = (step: string, result: RunResult) =>
    new Error(
      `building ${component} ${spec.version} failed during ${step} (exit ${result.code}); ` +
        `full log: ${logFile}\n${result.tail.join('\n')}`,
    );

  log(`building ${component} ${spec.version} from the Go module proxy (first time only; this takes minutes)`);
  log(`  [1/3] resolving ${spec.pkg} and downloading modules…`);
  let total = 0;
  const listed = await run(go, ['list', '-mod=readonly', '-deps', spec.pkg], {
    cwd: spec.moduleDir,
    env,
    logFile,
    // stdout names one package per line; stderr interleaves "go: downloading …" lines.
    onLine: (line) => {
      if (line && !line.startsWith('go: ')) total += 1;
    },
  });
  if (listed.code !== 0) throw fail('module download (go list -deps)', listed);
  log(`  [1/3] done after ${elapsed()}: ${total} packages in the build graph`);

  log(`  [2/3] compiling (go build; packages already in the Go build cache are skipped)…`);
  const partialOut = `${target}.partial-${process.pid}`;
  let compiled = 0;
  let linking = false;
  const ticker = setInterval(() => {
    const what = linking ? 'linking' : `${progressBar(compiled, total)} ${compiled}/${total} packages`;
    log(`  still building ${component}… ${elapsed()} ${what}`);
  }, 10_000);
  let built: RunResult;
  try {
    built = await run(
      go,
      ['build', '-mod=readonly', '-v', '-trimpath', '-ldflags', spec.ldflags, '-o', partialOut, spec.pkg],
      {
        cwd: spec.moduleDir,
        env,
        logFile,
        onLine: (line) => {
          // `go build -v` names each package as it finishes compiling; the main package comes last, then the link.
          if (/^[\w.-]+(\/[\w.~-]+)*$/.test(line)) compiled += 1;
          if (line === spec.pkg && !linking) {
            linking = true;
            log(`  [3/3] linking ${component} after ${elapsed()}…`);
          }
        },
      },
    );
  } finally {
    clearInterval(ticker);
  }
  if (built.code !== 0) {
    rmSync(partialOut, { force: true });
    throw fail('go build', built);
  }
  // Rename into place only when complete: an existing binary in the cache always means a finished build.
  renameSync(partialOut, target);
  log(`built ${component} ${spec.version} in ${elapsed()}: ${target}`);
  return target;
}

/**
 * Where CloudNativePG's module source is: its real CRDs (`config/crd/bases`) and webhook configurations
 * (`config/webhook/manifests.yaml`) are read from there at run time. `go mod download` fetches the pinned
 * module into Go's module cache (once), and `go list -m -f '{{.Dir}}'` inside the wrapper module names the
 * directory, the usual envtest way to reach a dependency's CRDs. The answer is remembered per version in the
 * cache directory and checked on every use. `PGFSM_CNPG_MODULE_DIR` overrides all of it.
 */
export async function ensureCnpgModule(options: { cacheDir?: string; log?: Log } = {}): Promise<string> {
  const log = options.log ?? stderrLog;
  const explicit = process.env.PGFSM_CNPG_MODULE_DIR;
  if (explicit) {
    if (!hasCnpgFiles(explicit)) {
      throw new MissingBinariesError(`PGFSM_CNPG_MODULE_DIR=${explicit} holds no ${CNPG_FILES.join(' or ')}.`);
    }
    return explicit;
  }
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const outDir = join(cacheDir, `cnpg-module-${CNPG_VERSION}`);
  const pointer = join(outDir, 'module-dir');
  if (existsSync(pointer)) {
    const remembered = readFileSync(pointer, 'utf8').trim();
    if (hasCnpgFiles(remembered)) return remembered;
  }
  const go = await findGo();
  if ('problem' in go) {
    throw new MissingBinariesError(
      howToGetBinaries(cacheDir, [], `CloudNativePG's module ${CNPG_MODULE}@${CNPG_VERSION}: ${go.problem}`),
    );
  }
  mkdirSync(outDir, { recursive: true });
  const logFile = join(outDir, 'fetch.log');
  rmSync(logFile, { force: true });
  const cwd = SPECS['cnpg-manager'].moduleDir;
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', GOFLAGS: '-mod=readonly' };
  const fail = (step: string, result: RunResult) =>
    new Error(
      `fetching ${CNPG_MODULE} ${CNPG_VERSION} failed during ${step} (exit ${result.code}); full log: ${logFile}\n` +
        result.tail.join('\n'),
    );
  const started = Date.now();
  log(`fetching ${CNPG_MODULE} ${CNPG_VERSION} from the Go module proxy (its CRDs and webhook configurations)…`);
  const downloaded = await run(go.go, ['mod', 'download', CNPG_MODULE], { cwd, env, logFile });
  if (downloaded.code !== 0) throw fail(`go mod download ${CNPG_MODULE}`, downloaded);
  let dir = '';
  const listed = await run(go.go, ['list', '-m', '-f', '{{.Dir}}', CNPG_MODULE], {
    cwd,
    env,
    logFile,
    onLine: (line) => {
      if (line.startsWith('/')) dir = line.trim();
    },
  });
  if (listed.code !== 0) throw fail(`go list -m -f '{{.Dir}}' ${CNPG_MODULE}`, listed);
  if (!hasCnpgFiles(dir)) {
    throw fail(`reading ${CNPG_FILES.join(', ')} under ${dir || '(no directory named)'}`, listed);
  }
  const partial = `${pointer}.partial-${process.pid}`;
  writeFileSync(partial, `${dir}\n`);
  renameSync(partial, pointer);
  log(`CloudNativePG ${CNPG_VERSION} module at ${dir} (${Math.round((Date.now() - started) / 1000)}s)`);
  return dir;
}

/** The files of CloudNativePG's module the harness reads. */
export const CNPG_FILES = [
  'config/crd/bases/postgresql.cnpg.io_clusters.yaml',
  'config/crd/bases/postgresql.cnpg.io_poolers.yaml',
  'config/webhook/manifests.yaml',
];

const hasCnpgFiles = (dir: string) => dir !== '' && CNPG_FILES.every((f) => existsSync(join(dir, f)));

/**
 * Takes each of `wanted` not already in `paths` from the cache, and builds whatever is still missing (under the
 * build lock, so that concurrent callers build each binary once). Throws {@link MissingBinariesError} with
 * instructions when there is no Go toolchain to build with.
 */
async function fromCacheOrBuild(
  wanted: readonly Component[],
  paths: Map<Component, string>,
  options: { cacheDir: string; log: Log; forNode?: boolean },
): Promise<void> {
  const { cacheDir, log } = options;
  const fromCache = () => {
    for (const component of wanted) {
      if (paths.has(component)) continue;
      const cached = cachedBinaryPath(cacheDir, component);
      if (isExecutable(cached)) paths.set(component, cached);
    }
    return wanted.filter((c) => !paths.has(c));
  };

  let missing = fromCache();
  if (missing.length === 0) return;
  const go = await findGo();
  if ('problem' in go) throw new MissingBinariesError(howToGetBinaries(cacheDir, missing, go.problem, options.forNode));
  const lock = await acquireLock(join(cacheDir, 'build.lock'), 'the control-plane build lock', log);
  try {
    // Whoever held the lock before us may have built them already.
    missing = fromCache();
    if (missing.length > 0) log(`using ${go.version}; cache: ${cacheDir}`);
    if (missing.length > 1) log(`to build, in this order: ${missing.join(', ')}`);
    for (const component of missing) {
      paths.set(component, await buildComponent(component, go.go, cacheDir, log));
    }
  } finally {
    await lock.release();
  }
}

/** The control-plane part of the answer, with each binary's version (and CloudNativePG's module, when wanted). */
async function describeBinaries(
  paths: Map<Component, string>,
  options: { cnpg: boolean; cacheDir: string; log: Log },
): Promise<Binaries> {
  const kubeApiserver = paths.get('kube-apiserver');
  const etcd = paths.get('etcd');
  if (!kubeApiserver || !etcd) throw new Error('internal error: binaries not resolved');
  const kubeControllerManager = paths.get('kube-controller-manager');
  const cnpgManager = paths.get('cnpg-manager');
  const [apiVersion, etcdVersion, kcmVersion, cnpgVersion, cnpgModuleDir] = await Promise.all([
    binaryVersion(kubeApiserver),
    binaryVersion(etcd),
    kubeControllerManager ? binaryVersion(kubeControllerManager) : Promise.resolve(undefined),
    cnpgManager ? cnpgBinaryVersion(cnpgManager) : Promise.resolve(undefined),
    options.cnpg ? ensureCnpgModule({ cacheDir: options.cacheDir, log: options.log }) : Promise.resolve(undefined),
  ]);
  if (cnpgVersion && cnpgVersion !== CNPG_VERSION) {
    throw new MissingBinariesError(
      `${cnpgManager} is CloudNativePG ${cnpgVersion}; the harness runs ${CNPG_VERSION} (its CRDs and webhooks ` +
        'must match the binary). Unset TEST_ASSET_CNPG_MANAGER or point it at the right build.',
    );
  }
  return {
    kubeApiserver,
    etcd,
    ...(kubeControllerManager ? { kubeControllerManager } : {}),
    ...(cnpgManager && cnpgModuleDir ? { cnpg: { manager: cnpgManager, moduleDir: cnpgModuleDir } } : {}),
    versions: {
      kubeApiserver: apiVersion,
      etcd: etcdVersion,
      ...(kcmVersion ? { kubeControllerManager: kcmVersion } : {}),
      ...(cnpgVersion ? { cnpg: cnpgVersion } : {}),
    },
  };
}

/**
 * Returns paths to the binaries, building whatever is missing from the cache (once; concurrent callers wait
 * on a lock). Throws {@link MissingBinariesError} with instructions when nothing can provide them.
 */
export async function ensureBinaries(options: EnsureBinariesOptions = {}): Promise<Binaries> {
  const log = options.log ?? stderrLog;
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const wanted: Component[] = ['kube-apiserver', 'etcd'];
  if (options.cnpg) wanted.push('cnpg-manager');
  if (options.controllerManager) wanted.push('kube-controller-manager');

  const paths = new Map<Component, string>();
  const fromEnv = new Set<Component>();
  for (const component of wanted) {
    const path = fromEnvironment(component);
    if (path) {
      paths.set(component, path);
      fromEnv.add(component);
    }
  }
  // envtest-style assets without a controller manager: run without it rather than force a Go build.
  if (options.controllerManager && !paths.has('kube-controller-manager') && fromEnv.has('kube-apiserver')) {
    log('kube-controller-manager is not among the provided assets; running without it (no ownerReference GC)');
    wanted.pop();
  }

  await fromCacheOrBuild(wanted, paths, { cacheDir, log });
  return describeBinaries(paths, { cnpg: options.cnpg ?? false, cacheDir, log });
}

/** Everything a real single node runs: absolute paths, and what each binary reports as its version. */
export interface NodeBinaries {
  kubeApiserver: string;
  etcd: string;
  kubeControllerManager: string;
  /** CloudNativePG's operator binary and its module directory (CRDs, webhook configurations). */
  cnpg: CnpgAssets;
  kubelet: string;
  kubeScheduler: string;
  kubeProxy: string;
  kubectl: string;
  /** CoreDNS with the plugins bind, cache, errors, health, kubernetes, loadbalance, log and ready only. */
  coredns: string;
  /** Each normalised to `vX.Y.Z` (CoreDNS's `CoreDNS-1.12.1` gives `v1.12.1`). */
  versions: {
    kubeApiserver: string;
    etcd: string;
    kubeControllerManager: string;
    cnpg: string;
    kubelet: string;
    kubeScheduler: string;
    kubeProxy: string;
    kubectl: string;
    coredns: string;
  };
}

/**
 * Like {@link ensureBinaries} with `cnpg` and `controllerManager`, plus kubelet, kube-scheduler, kube-proxy,
 * kubectl and CoreDNS: the binaries of a real single Kubernetes node. Every one is required (a node without its
 * controller manager cannot bind volumes), so each comes from its TEST_ASSET_* variable or KUBEBUILDER_ASSETS, else
 * the cache, else a build from the Go module proxy (about 10 minutes on 2 cores for the five node binaries,
 * kube-apiserver's compiled packages being reused). Throws {@link MissingBinariesError} with instructions when
 * nothing can provide them.
 */
export async function ensureNodeBinaries(options: { cacheDir?: string; log?: Log } = {}): Promise<NodeBinaries> {
  const log = options.log ?? stderrLog;
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const paths = new Map<Component, string>();
  for (const component of NODE_COMPONENTS) {
    const path = fromEnvironment(component);
    if (path) paths.set(component, path);
  }
  await fromCacheOrBuild(NODE_COMPONENTS, paths, { cacheDir, log, forNode: true });

  const located = async (component: Component) => {
    const path = paths.get(component);
    if (!path) throw new Error(`internal error: ${component} not resolved`);
    return { path: resolve(path), version: await componentVersion(component, path) };
  };
  const [controlPlane, kubelet, kubeScheduler, kubeProxy, kubectl, coredns] = await Promise.all([
    describeBinaries(paths, { cnpg: true, cacheDir, log }),
    located('kubelet'),
    located('kube-scheduler'),
    located('kube-proxy'),
    located('kubectl'),
    located('coredns'),
  ]);
  const { kubeControllerManager, cnpg } = controlPlane;
  const { kubeControllerManager: kcmVersion, cnpg: cnpgVersion } = controlPlane.versions;
  if (!kubeControllerManager || !kcmVersion || !cnpg || !cnpgVersion) {
    throw new Error('internal error: kube-controller-manager or CloudNativePG not resolved');
  }
  return {
    kubeApiserver: resolve(controlPlane.kubeApiserver),
    etcd: resolve(controlPlane.etcd),
    kubeControllerManager: resolve(kubeControllerManager),
    cnpg: { manager: resolve(cnpg.manager), moduleDir: resolve(cnpg.moduleDir) },
    kubelet: kubelet.path,
    kubeScheduler: kubeScheduler.path,
    kubeProxy: kubeProxy.path,
    kubectl: kubectl.path,
    coredns: coredns.path,
    versions: {
      kubeApiserver: controlPlane.versions.kubeApiserver,
      etcd: controlPlane.versions.etcd,
      kubeControllerManager: kcmVersion,
      cnpg: cnpgVersion,
      kubelet: kubelet.version,
      kubeScheduler: kubeScheduler.version,
      kubeProxy: kubeProxy.version,
      kubectl: kubectl.version,
      coredns: coredns.version,
    },
  };
}

/** The backup test's binaries: the Barman Cloud Plugin's manager and versitygw, with what each reports. */
export interface BackupBinaries {
  barmanCloudPlugin: string;
  versitygw: string;
  versions: { barmanCloudPlugin: string; versitygw: string };
}

/**
 * Like {@link ensureNodeBinaries} for {@link BACKUP_COMPONENTS}: from TEST_ASSET_BARMAN_CLOUD_PLUGIN /
 * TEST_ASSET_VERSITYGW or KUBEBUILDER_ASSETS, else the cache, else a build. Separate from the node's own list so that a
 * node start that takes no backup never waits for them.
 */
export async function ensureBackupBinaries(options: { cacheDir?: string; log?: Log } = {}): Promise<BackupBinaries> {
  const log = options.log ?? stderrLog;
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const paths = new Map<Component, string>();
  for (const component of BACKUP_COMPONENTS) {
    const path = fromEnvironment(component);
    if (path) paths.set(component, path);
  }
  await fromCacheOrBuild(BACKUP_COMPONENTS, paths, { cacheDir, log, forNode: true });
  const located = async (component: Component) => {
    const path = paths.get(component);
    if (!path) throw new Error(`internal error: ${component} not resolved`);
    const version = await componentVersion(component, path);
    if (version !== SPECS[component].version) {
      throw new MissingBinariesError(`${path} is ${component} ${version}; the node runs ${SPECS[component].version}`);
    }
    return { path: resolve(path), version };
  };
  const [plugin, versitygw] = await Promise.all([located('barman-cloud-plugin'), located('versitygw')]);
  return {
    barmanCloudPlugin: plugin.path,
    versitygw: versitygw.path,
    versions: { barmanCloudPlugin: plugin.version, versitygw: versitygw.version },
  };
}
