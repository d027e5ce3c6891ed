/**
 * The operator against a real API server (issue 10, "The benchmark"): kube-apiserver + etcd on loopback with
 * CloudNativePG's CRDs and webhooks (src/tools/control-plane), pgfsm's CRDs and deploy/rbac installed, the CNPG
 * simulator playing CNPG's controller with every delay 0 (so every millisecond is the operator, the API server
 * or the simulator), and the operator as a separate `pgfsm run` process with the ServiceAccount token the RBAC
 * binds, 2 workers. N clusters are created at once; each (size, repetition) gets a fresh control plane.
 *
 * Instruments, and why these:
 * - requests are counted at the API server, from its audit log (level Metadata, the operator's user only), not
 *   by the operator; `apiserver_request_total` (which has no user label) cross-checks one kind only the
 *   operator makes: PATCH postgresclusters/status;
 * - operator CPU from /proc/<pid>/stat (utime + stime) of the `pgfsm run` process before and after; peak RSS
 *   is its VmHWM from /proc/<pid>/status;
 * - time to Ready per cluster: from its create's response to the first watch event showing status.state Ready
 *   (a watch in this process: ms, where the condition's lastTransitionTime has whole seconds);
 * - reaction latency: both ends at the API server, from the audit log: the simulator's status patch of one
 *   Ready CNPG Cluster (a switchover: phase and currentPrimary change) received → the operator's next
 *   PATCH postgresclusters/status of that cluster answered. Not from the simulator's patch answered: the API
 *   server may stamp that answer after it has sent the change to the watches and answered the operator's
 *   write (seen: 9 ms the wrong way round at 100 clusters), so a reaction read below zero. From the arrival
 *   it includes the API server's own work on the simulator's write: an upper bound of what the operator adds.
 *
 * Run alone: `npm run bench:api -- [--sizes 100,300,1000] [--reps 3] [--big-reps 3] [--changes 20] [--idle 30]
 * [--api-server-profile S] [--operator-profile 300] [--floor 100,300] [--floor-reps 1] [--no-results]`;
 * `npm run bench` runs it after the engine and in-memory parts. Writes bench/results.md.
 * `--operator-profile SIZES` runs those sizes once more with the operator profiled and adds where its CPU goes
 * (cpu-profile.ts); any other node flags of the operator's go in PGFSM_BENCH_OPERATOR_NODE_ARGS.
 * `--floor SIZES` runs those sizes `--floor-reps` times more beside two client processes that make the
 * operator's traffic and nothing else (floor-client.ts): what that traffic costs any Node client, beside what
 * the operator spends.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { withKeepAlive } from '../src/operator/kubernetes/connection.ts';
import { Informer } from '../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../src/operator/kubernetes/resources.ts';
import {
  auditPolicyFor,
  type ControlPlane,
  serviceAccountUser,
  startControlPlane,
} from '../src/tools/control-plane/index.ts';
import {
  createManifests,
  installCrds,
  PGFSM_CRDS,
  RBAC_MANIFESTS,
  readManifests,
} from '../src/tools/install/manifests.ts';
import { CnpgSimulator, type SimulatorDelays } from '../src/tools/simulation/cnpg-simulator.ts';
import { KubernetesSimulatorApi } from '../src/tools/simulation/kubernetes-api.ts';
import { details, floorReport, OPERATOR, profileReport, type RunFigures, SETTLE_MS, table } from './api-report.ts';
import { type AuditEntry, AuditLogReader, countRequests } from './audit-log.ts';
import { readProfile, splitProfile } from './cpu-profile.ts';
import { deployedHeapBudgetMb } from './fleet.ts';
import {
  compileFloorClient,
  type FloorFigures,
  floorAuditPolicy,
  floorAuthOf,
  linesOf,
  replayRequests,
  runFloorReplay,
  startFloorWatch,
} from './floor.ts';
import { sleep, until } from './poll.ts';
import { writeSection } from './results-section.ts';
import { quantile } from './stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NS = 'bench';
const OPERATOR_SA = { namespace: 'pgfsm-system', name: 'pgfsm' };
const OPERATOR_USER = serviceAccountUser(OPERATOR_SA);
/** The harness's admin client certificate (CN=admin): the simulator and this bench write as it. */
const ADMIN_USER = 'admin';
const ZERO_DELAYS: SimulatorDelays = {
  firstPhaseMs: 0,
  primaryMs: 0,
  replicaMs: 0,
  configurationMs: 0,
  roleMs: 0,
  poolerMs: 0,
};
/** How long a switchover lasts in the simulator before the Cluster is healthy again. */
const SWITCHOVER_MS = 500;
/** How often the simulator's timers run (zero delays: a step runs on the next tick). */
const SIMULATOR_TICK_MS = 10;
const CREATE_CONCURRENCY = 16;

export interface ApiBenchOptions {
  sizes: number[];
  reps: number;
  /** Repetitions of the sizes from 1,000 up, which take minutes each on two cores. */
  bigReps: number;
  changes: number;
  idleSeconds: number;
  /** Every k-th cluster has the connection pooler on (1: all, 0: none). */
  pooledEvery: number;
  workers: number;
  /** Where to write the results; undefined: not written. */
  resultsPath?: string;
  /**
   * Run the operator from its TypeScript sources through tsx instead of compiled as the image runs it. The
   * loader costs memory and start-up CPU the image does not pay, so RSS is only honest compiled.
   */
  fromSource: boolean;
  /**
   * Seconds of kube-apiserver CPU profile to take from the first create on (`--api-server-profile S`), saved
   * beside the results as `kube-apiserver-<size>.pprof` (read it with `go tool pprof -top`): where the API
   * server, the bottleneck of the fleet, spends its CPU. 0: none, and the API server runs with profiling off.
   */
  apiServerProfileSeconds: number;
  /**
   * The sizes to run once more with the operator under `--cpu-prof` (`--operator-profile 300`), left out of
   * the table (profiling slows it): where its main-thread CPU goes over the window to Ready (cpu-profile.ts).
   */
  operatorProfileSizes: number[];
  /**
   * The sizes to run once more beside the floor clients (`--floor 300`), left out of the table: a client that
   * makes the operator's watches and writes and does nothing else (floor-client.ts), and what it costs.
   */
  floorSizes: number[];
  /** Repetitions of each floor size. */
  floorReps: number;
  /**
   * Clusters taken to Ready and deleted before the measured window (`--warm-up N`, default
   * {@link DEFAULT_WARM_UP}): the measured clusters then meet an operator whose code V8 has compiled, as a
   * long-running operator's is and as the floor's client is (its dry runs). The batch's own CPU per cluster is
   * reported too: what the first clusters after a start cost, compilation included. 0: no warm-up.
   */
  warmUp: number;
}

/**
 * Twice the smallest fleet measured, so that even it meets compiled code. Not shown to be the least that does:
 * bench/results.md has the figures after it beside the batch's own ("the warm-up batch, cold").
 */
export const DEFAULT_WARM_UP = 200;

export function parseApiBenchArgs(argv: readonly string[]): ApiBenchOptions {
  const value = (flag: string) => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const number = (flag: string, fallback: number) => {
    const raw = value(flag);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} wants a number, got ${raw}`);
    return n;
  };
  // Issue 10's sizes and its three repetitions by default: a run of 1,000 takes minutes on two cores, so
  // `--sizes 100,300` or `--big-reps 1` make a shorter run that says so in its results' header.
  const sizes = (value('--sizes') ?? '100,300,1000').split(',').map(Number);
  // Before 1,000 was a default size it was added by `--big`; still accepted.
  if (argv.includes('--big') && !sizes.includes(1000)) sizes.push(1000);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sizes wants a,b,c of whole numbers');
  const profiled = (value('--operator-profile') ?? '').split(',').filter(Boolean).map(Number);
  if (profiled.some((n) => !sizes.includes(n))) throw new Error('--operator-profile wants sizes the run has');
  const floor = (value('--floor') ?? '').split(',').filter(Boolean).map(Number);
  if (floor.some((n) => !sizes.includes(n))) throw new Error('--floor wants sizes the run has');
  return {
    sizes,
    reps: number('--reps', 3),
    bigReps: number('--big-reps', 3),
    changes: number('--changes', 20),
    idleSeconds: number('--idle', 30),
    pooledEvery: number('--pooled-every', 2),
    workers: number('--workers', 2),
    resultsPath: argv.includes('--no-results') ? undefined : join(ROOT, 'bench', 'results.md'),
    fromSource: argv.includes('--from-source'),
    apiServerProfileSeconds: number('--api-server-profile', 0),
    operatorProfileSizes: profiled,
    floorSizes: floor,
    floorReps: number('--floor-reps', 1),
    warmUp: number('--warm-up', DEFAULT_WARM_UP),
  };
}

const CLOCK_TICKS = 100; // USER_HZ on Linux: /proc/<pid>/stat counts in 1/100 s.

/** CPU time of a process so far, in ms: in user space, in the kernel (system) for it. */
export function cpuSplitMsOf(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(fields[11]) * 1000) / CLOCK_TICKS, system: (Number(fields[12]) * 1000) / CLOCK_TICKS };
}

/** CPU time (user + system) of a process so far, in ms. */
export function cpuMsOf(pid: number): number {
  const { user, system } = cpuSplitMsOf(pid);
  return user + system;
}

/** A field of /proc/<pid>/status in MB (VmHWM: peak resident set; VmRSS: now). */
export function memoryMbOf(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return kb / 1024;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A GET of one of the API server's own endpoints (/metrics, /debug/pprof/…) as `kc`'s user. */
async function apiserverGet(kc: KubeConfig, path: string): Promise<Buffer> {
  const url = new URL(path, kc.getCurrentCluster()?.server);
  const options: import('node:https').RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  return new Promise<Buffer>((resolve, reject) => {
    const req = request(url, { ...options, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`GET ${path}: ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A Prometheus text exposition's counter `name`, summed over its series whose labels include `labels`. */
function sumCounter(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (matches) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The API server's own /metrics, summed over the series of `apiserver_request_total` matching `labels`. */
async function apiserverRequests(kc: KubeConfig, labels: Record<string, string>): Promise<number> {
  return sumCounter((await apiserverGet(kc, '/metrics')).toString('utf8'), 'apiserver_request_total', labels);
}

/** The operator's reconcile passes so far: `controller_runtime_reconcile_total` summed over its results. */
async function operatorPasses(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return sumCounter(text, 'controller_runtime_reconcile_total');
}

function clusterBody(name: string, pooled: boolean, clusterDeletionPolicy?: 'Delete') {
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: { name, namespace: NS },
    spec: {
      class: 'standard',
      connectionPoolerEnabled: pooled,
      ...(clusterDeletionPolicy ? { clusterDeletionPolicy } : {}),
    },
  };
}

const classBody = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresClusterClass',
  metadata: { name: 'standard' },
  spec: {
    provisioner: 'postgresql.cnpg.io',
    config: { instances: 1, storage: '1Gi', postgresVersion: '17' },
    cnpg: { connectionPooler: { instances: 2, mode: 'transaction' } },
  },
};

const GROUP = { group: 'pgfsm.io', version: 'v1alpha1' };

/** Runs `work` over `items` with at most `limit` at once. */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** Where the operator is compiled to: under node_modules, so its imports resolve to the checkout's packages. */
const COMPILED = join(ROOT, 'node_modules', '.cache', 'pgfsm', 'bench-operator');

/**
 * Compiles the operator as `npm run build` does (tsconfig.build.json), into a directory of the bench's own so
 * that dist/ is left alone. Others may be mid-edit: tsc still emits when a file has a type error, so the
 * bench goes on, saying so.
 */
function compileOperator(log: Log): string {
  rmSync(COMPILED, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', COMPILED, '--sourceMap', 'false'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (error) {
    const out = String((error as { stdout?: Buffer }).stdout ?? error).slice(0, 500);
    if (!existsSync(join(COMPILED, 'src', 'operator', 'cli', 'main.js'))) throw new Error(`tsc failed: ${out}`);
    log(`  the operator compiled with type errors (someone mid-edit?), measuring what was emitted: ${out}`);
  }
  return join(COMPILED, 'src', 'operator', 'cli', 'main.js');
}

function startOperator(
  entry: string[],
  kubeconfig: string,
  port: number,
  workers: number,
  profileDir: string | undefined,
): { child: ChildProcess; output: string[] } {
  const output: string[] = [];
  const child = spawn(
    process.execPath,
    [
      // As the image's entry point runs it (Dockerfile: no conditions, XState's production build), plus any flags
      // to profile it with, e.g. PGFSM_BENCH_OPERATOR_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (Node refuses
      // those in NODE_OPTIONS), or "--conditions=development" for the build the tests run.
      // The Deployment's heap budget (its NODE_OPTIONS): V8 sizes the heap from it, and so the peak RSS.
      `--max-old-space-size=${deployedHeapBudgetMb()}`,
      ...(process.env.PGFSM_BENCH_OPERATOR_NODE_ARGS ?? '').split(' ').filter(Boolean),
      // Written when the process exits (SIGTERM included: pgfsm run shuts down and exits).
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      ...entry,
      'run',
      '--kubeconfig',
      kubeconfig,
      '--metrics-addr',
      `127.0.0.1:${port}`,
      '--lease-namespace',
      OPERATOR_SA.namespace,
      '--identity',
      'bench',
      '--workers',
      String(workers),
      '--log-level',
      'warn',
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '/nonexistent', NODE_ENV: 'production' },
    },
  );
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output };
}

type Log = (line: string) => void;

/** Stops the floor's watch client and runs its replay of the operator's writes from `from` to `to`. */
async function measureFloor(
  watch: Awaited<ReturnType<typeof startFloorWatch>>,
  watchCpuMs: number,
  server: string,
  operatorKubeconfig: string,
  auditPath: string,
  from: number,
  to: number,
  dir: string,
  log: Log,
): Promise<FloorFigures> {
  const watchReport = await watch.stop();
  if (watchReport.ended > 0)
    log(`  the floor: ${watchReport.ended} of its watches ended early; its watch figure is low`);
  const { requests, synthesized } = replayRequests(linesOf(auditPath), OPERATOR_USER, from, to);
  const kc = new KubeConfig();
  kc.loadFromFile(operatorKubeconfig);
  log(`  the floor: replaying the operator's ${requests.length} writes to Ready at its pace`);
  const replay = await runFloorReplay(server, floorAuthOf(kc), requests, dir);
  return { watchCpuMs, watch: watchReport, replay, requests: requests.length, synthesized };
}

/** Now on the clock V8's CPU profiles are stamped with (CLOCK_MONOTONIC, shared by every process), in µs. */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** A repetition left out of the table: with the operator profiled, or beside the floor clients. */
type Extra = 'profile' | 'floor';

async function runOnce(
  size: number,
  options: ApiBenchOptions,
  entry: string[],
  log: Log,
  extra?: Extra,
): Promise<RunFigures> {
  const loadBefore = loadavg()[0] ?? 0;
  const profiled = extra === 'profile';
  // The simulator's Cluster status writes too: the start of each reaction, timed where it lands.
  const simulatorStatus = {
    level: 'Metadata',
    users: [ADMIN_USER],
    verbs: ['patch'],
    resources: [{ group: 'postgresql.cnpg.io', resources: ['clusters/status'] }],
  };
  const cp: ControlPlane = await startControlPlane({
    audit: {
      policy:
        extra === 'floor'
          ? floorAuditPolicy(OPERATOR_USER, [simulatorStatus])
          : auditPolicyFor([OPERATOR_USER], [simulatorStatus]),
    },
    log: () => {},
    ...(options.apiServerProfileSeconds > 0 ? { apiServerArgs: ['--profiling=true'] } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'pgfsm-bench-'));
  const profileDir = profiled ? join(dir, 'operator-profile') : undefined;
  let window: { fromUs: number; toUs: number } | undefined;
  let figures: RunFigures | undefined;
  let operator: ReturnType<typeof startOperator> | undefined;
  const stops: Array<() => Promise<void> | void> = [];
  try {
    const auditPath = cp.auditLogPath;
    if (!auditPath || !cp.cnpg) throw new Error('the control plane has no audit log or no CNPG CRDs');
    const admin = cp.kubeConfig;
    await installCrds(admin, PGFSM_CRDS);
    await createManifests(admin, readManifests(RBAC_MANIFESTS));
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    const custom = admin.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({ ...GROUP, plural: 'postgresclusterclasses', body: classBody });

    // The simulator and this bench's watch reuse their connections, as the operator does: handshakes of the
    // bench's own clients would otherwise load the API server it measures.
    const keepAlive = () => {
      const kc = new KubeConfig();
      kc.loadFromFile(cp.kubeconfigPath);
      return withKeepAlive(kc);
    };
    const simulatorApi = new KubernetesSimulatorApi(keepAlive(), { ignoreNamespaces: [cp.cnpg.watchNamespace] });
    await simulatorApi.start();
    const simulator = new CnpgSimulator(simulatorApi, { now: () => Date.now() }, ZERO_DELAYS);
    const ticker = setInterval(() => simulator.advance(), SIMULATOR_TICK_MS);
    stops.push(async () => {
      clearInterval(ticker);
      simulator.stop();
      await simulatorApi.stop();
    });

    // Time to Ready and flaps, from a watch of the PostgresClusters.
    const createdAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    const isReady = new Map<string, boolean>();
    let flaps = 0;
    const watch = new Informer(keepAlive(), { resource: RESOURCES.clusters, namespace: NS });
    const gone = new Set<string>();
    watch.on(({ type, object }) => {
      if (type === 'delete') {
        gone.add(object.metadata.name);
        return;
      }
      const ready = (object as { status?: { state?: string } }).status?.state === 'Ready';
      const name = object.metadata.name;
      if (ready && !readyAt.has(name)) readyAt.set(name, Date.now());
      if (isReady.get(name) && !ready) flaps++;
      isReady.set(name, ready);
    });
    watch.start();
    stops.push(() => watch.stop());
    await until('the bench watch to sync', () => (watch.synced ? true : undefined), 30_000);

    const token = await cp.tokenFor(OPERATOR_SA, { expirationSeconds: 4 * 3600 });
    const kubeconfig = join(dir, 'operator.kubeconfig');
    writeFileSync(kubeconfig, cp.kubeConfigForToken(token).exportConfig(), { mode: 0o600 });
    const port = await freePort();
    operator = startOperator(entry, kubeconfig, port, options.workers, profileDir);
    const { child } = operator;
    const pid = child.pid;
    if (!pid) throw new Error('pgfsm run did not start');
    await until(
      'pgfsm run to be ready',
      async () => {
        if (child.exitCode !== null)
          throw new Error(`pgfsm run exited ${child.exitCode}: ${operator?.output.join('')}`);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      },
      120_000,
    );
    const leases = admin.makeApiClient(CoordinationV1Api);
    await until(
      'the operator to lead',
      async () => {
        const lease = await leases
          .readNamespacedLease({ name: 'pgfsm-leader', namespace: OPERATOR_SA.namespace })
          .catch(() => undefined);
        return lease?.spec?.holderIdentity === 'bench' ? true : undefined;
      },
      60_000,
    );

    /** Creates `names` (`<letter><i>`: every `pooledEvery`-th i with the pooler), CREATE_CONCURRENCY at a time. */
    const createClusters = (names: string[], deletionPolicy?: 'Delete', created?: (name: string) => void) =>
      inParallel(names, CREATE_CONCURRENCY, async (name) => {
        const pooled = options.pooledEvery > 0 && Number(name.slice(1)) % options.pooledEvery === 0;
        const body = clusterBody(name, pooled, deletionPolicy);
        await custom.createNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', body });
        created?.(name);
      });

    // ---- warm-up: a batch to Ready and deleted, before anything is measured ----------------------------
    let warmUp: RunFigures['warmUp'];
    if (options.warmUp > 0) {
      const warmNames = Array.from({ length: options.warmUp }, (_, i) => `w${i}`);
      const cpuBefore = cpuMsOf(pid);
      const warmStart = Date.now();
      await createClusters(warmNames, 'Delete');
      await until(
        `${options.warmUp} warm-up clusters Ready`,
        () => (warmNames.every((n) => readyAt.has(n)) ? true : undefined),
        120_000 + options.warmUp * 1_000,
      );
      await sleep(SETTLE_MS);
      warmUp = {
        clusters: options.warmUp,
        cpuPerClusterMs: (cpuMsOf(pid) - cpuBefore) / options.warmUp,
        readyAfterMs: Math.max(...warmNames.map((n) => readyAt.get(n) ?? 0)) - warmStart,
      };
      await inParallel(warmNames, CREATE_CONCURRENCY, async (name) => {
        await custom.deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name });
      });
      await until(
        'the warm-up clusters to be deleted',
        () => (warmNames.every((n) => gone.has(n)) ? true : undefined),
        120_000 + options.warmUp * 500,
      );
      // Their last Events and the children's deletions die down; none of it is the measured clusters'.
      await sleep(SETTLE_MS);
      for (const n of warmNames) {
        readyAt.delete(n);
        isReady.delete(n);
      }
      // Leaving Ready on the way to deletion is no flap.
      flaps = 0;
      log(
        `  warm-up: ${options.warmUp} clusters Ready in ${(warmUp.readyAfterMs / 1000).toFixed(1)} s, ` +
          `${warmUp.cpuPerClusterMs.toFixed(1)} ms of operator CPU per cluster (cold), then deleted`,
      );
    }

    // The floor's watches, open before the first measured create and after the warm-up, whose events would
    // otherwise be counted as the window's (with the bench's admin identity, so that the audit log's count of the
    // operator's requests stays the operator's).
    const floorWatch = extra === 'floor' ? await startFloorWatch(cp.url, floorAuthOf(admin), dir) : undefined;
    if (floorWatch)
      stops.push(() =>
        floorWatch.stop().then(
          () => undefined,
          () => undefined,
        ),
      );
    await sleep(1_000);

    // ---- N clusters at once, to Ready ------------------------------------------------------------------
    const audit = new AuditLogReader(auditPath);
    const statusMetric = { resource: 'postgresclusters', subresource: 'status', verb: 'PATCH' };
    const metricBefore = await apiserverRequests(admin, statusMetric);
    const passesBefore = await operatorPasses(port);
    const cpuBefore = cpuSplitMsOf(pid);
    const controlPlaneCpu = () => Object.fromEntries(Object.entries(cp.pids).map(([n, p]) => [n, cpuMsOf(p)]));
    const controlPlaneBefore = controlPlaneCpu();
    const benchCpuBefore = process.cpuUsage();
    const floorWatchCpuBefore = floorWatch ? cpuMsOf(floorWatch.pid) : 0;
    const writesBefore = simulatorApi.stats.writes;
    const start = Date.now();
    const startUs = monotonicUs();
    const profile =
      options.apiServerProfileSeconds > 0
        ? apiserverGet(admin, `/debug/pprof/profile?seconds=${options.apiServerProfileSeconds}`).then((pprof) => {
            const file = join(ROOT, 'bench', `kube-apiserver-${size}.pprof`);
            writeFileSync(file, pprof);
            log(`  kube-apiserver CPU profile of the first ${options.apiServerProfileSeconds} s: ${file}`);
          })
        : undefined;
    const names = Array.from({ length: size }, (_, i) => `c${i}`);
    await createClusters(names, undefined, (name) => createdAt.set(name, Date.now()));
    const readyTimeout = 120_000 + size * 1_000;
    let notReady = 0;
    await until(
      `${size} clusters Ready`,
      () => {
        if (child.exitCode !== null) throw new Error(`pgfsm run exited ${child.exitCode}`);
        return readyAt.size >= size ? true : undefined;
      },
      readyTimeout,
    ).catch((error: unknown) => {
      notReady = size - readyAt.size;
      log(`  ${String(error)}: ${notReady} not Ready; going on with the ones that are`);
    });
    const allReady = Math.max(...readyAt.values());
    await profile;
    await sleep(SETTLE_MS);
    const settled = Date.now();
    window = { fromUs: startUs, toUs: monotonicUs() };
    const cpuAfter = cpuSplitMsOf(pid);
    const systemCpu = cpuAfter.system - cpuBefore.system;
    const cpu = cpuAfter.user - cpuBefore.user + systemCpu;
    const controlPlaneAfter = controlPlaneCpu();
    const controlPlaneUsed = Object.fromEntries(
      Object.entries(controlPlaneAfter).map(([n, v]) => [n, v - (controlPlaneBefore[n] ?? 0)]),
    );
    const serverCpu = controlPlaneUsed['kube-apiserver'] ?? Number.NaN;
    const etcdCpu = controlPlaneUsed.etcd ?? Number.NaN;
    const benchCpu = process.cpuUsage(benchCpuBefore);
    const floorWatchCpu = floorWatch ? cpuMsOf(floorWatch.pid) - floorWatchCpuBefore : 0;
    const peakRssMb = memoryMbOf(pid, 'VmHWM');
    const metricAfter = await apiserverRequests(admin, statusMetric);
    const passes = (await operatorPasses(port)) - passesBefore;
    audit.read();
    const toReady = countRequests(audit.entries, { user: OPERATOR_USER, from: start, to: settled });
    const toReadyNoLease = countRequests(audit.entries, {
      user: OPERATOR_USER,
      from: start,
      to: settled,
      excludeResources: ['leases'],
    });
    const statusPatches = toReady.byKind.find(([k]) => k === 'patch postgresclusters/status')?.[1] ?? 0;
    const times = names.flatMap((n) => {
      const r = readyAt.get(n);
      const c = createdAt.get(n);
      return r !== undefined && c !== undefined ? [r - c] : [];
    });
    log(
      `  ${readyAt.size}/${size} Ready in ${((allReady - start) / 1000).toFixed(1)} s; ` +
        `${(toReady.total / size).toFixed(1)} requests/cluster; CPU ${(cpu / size).toFixed(1)} ms/cluster`,
    );

    // ---- idle -----------------------------------------------------------------------------------------
    const idleStart = Date.now();
    await sleep(options.idleSeconds * 1000);
    const idleEnd = Date.now();
    await sleep(500);
    audit.read();
    // The issue's "zero idle cost" allows the Lease renewals and the informers' watches: a watch the API server
    // ends after its timeout is opened again, which is how a watch stays open. Both are counted apart.
    const idle = countRequests(audit.entries, {
      user: OPERATOR_USER,
      from: idleStart,
      to: idleEnd,
      excludeResources: ['leases'],
      excludeVerbs: ['watch'],
    });
    const idleAll = countRequests(audit.entries, {
      user: OPERATOR_USER,
      from: idleStart,
      to: idleEnd,
      excludeVerbs: ['watch'],
    });
    const idleWatches =
      countRequests(audit.entries, { user: OPERATOR_USER, from: idleStart, to: idleEnd }).total - idleAll.total;
    const perMinute = (n: number) => (n * 60_000) / (idleEnd - idleStart);
    // Before any switchover: a cluster leaving Ready now is a flap (the simulator's or the operator's).
    const flapsWhileQuiet = flaps;

    // ---- reaction latency ---------------------------------------------------------------------------------
    const reactions: number[] = [];
    let missed = 0;
    const candidates = names.filter((n) => readyAt.has(n)).slice(0, Math.min(options.changes, readyAt.size));
    for (const name of candidates) {
      audit.read();
      // Only entries logged from now on: a scan of the whole log on every poll would slow this process, which
      // runs the simulator, and so the reaction measured.
      const from = audit.entries.length;
      const find = (match: (e: AuditEntry) => boolean) => {
        audit.read();
        for (let i = from; i < audit.entries.length; i++) {
          const e = audit.entries[i] as AuditEntry;
          if (match(e)) return e;
        }
        return undefined;
      };
      const before = Date.now();
      simulator.switchover(NS, name, SWITCHOVER_MS);
      const isOf = (e: AuditEntry, user: string, resource: string) =>
        e.user === user &&
        e.verb === 'patch' &&
        e.resource === resource &&
        e.subresource === 'status' &&
        e.name === name &&
        e.stage === 'ResponseComplete' &&
        e.receivedAt >= before - 5;
      try {
        const written = await until(
          `the simulator's switchover of ${name} in the audit log`,
          () => find((e) => isOf(e, ADMIN_USER, 'clusters')),
          10_000,
        );
        const reacted = await until(
          `the operator's status write for ${name}`,
          () => find((e) => isOf(e, OPERATOR_USER, 'postgresclusters') && e.receivedAt >= written.receivedAt),
          30_000,
        );
        // From the simulator's write arriving, not from its answer: the API server can answer the simulator
        // after the watch has carried the change to the operator and answered the operator's write too.
        reactions.push(reacted.stageAt - written.receivedAt);
      } catch (error) {
        missed++;
        log(`  ${String(error)}`);
      }
      // Back to an idle fleet: the switchover ends and the operator has written Ready again.
      await sleep(SWITCHOVER_MS + 300);
      await until(`${name} Ready again`, () => (isReady.get(name) ? true : undefined), 30_000).catch(() => undefined);
      await sleep(200);
    }
    const rssAfterMb = memoryMbOf(pid, 'VmRSS');
    // Last, on a quiet fleet: the floor's replay of the operator's writes to Ready.
    const floor = floorWatch
      ? await measureFloor(floorWatch, floorWatchCpu, cp.url, kubeconfig, auditPath, start, settled, dir, log)
      : undefined;
    figures = {
      size,
      ...(warmUp ? { warmUp } : {}),
      allReadyMs: allReady - start,
      readyP50Ms: quantile(times, 0.5),
      readyP99Ms: quantile(times, 0.99),
      requestsPerCluster: toReady.total / size,
      requestsPerClusterNoLease: toReadyNoLease.total / size,
      eventsPerCluster: (toReady.byKind.find(([kind]) => kind === 'create events')?.[1] ?? 0) / size,
      breakdown: toReady.byKind,
      breakdownByCode: toReady.byKindAndCode,
      statusPatchesAudit: statusPatches,
      statusPatchesMetric: metricAfter - metricBefore,
      cpuPerClusterMs: cpu / size,
      systemCpuPerClusterMs: systemCpu / size,
      apiServerCpuPerClusterMs: serverCpu / size,
      etcdCpuPerClusterMs: etcdCpu / size,
      cpuByProcessMs: {
        [OPERATOR]: cpu,
        ...controlPlaneUsed,
        'this process (simulator, creates, watch)': (benchCpu.user + benchCpu.system) / 1000,
      },
      windowMs: settled - start,
      simulatorCpuPerClusterMs: (benchCpu.user + benchCpu.system) / 1000 / size,
      passesPerCluster: passes / size,
      peakRssMb,
      rssAfterMb,
      idleWindowS: (idleEnd - idleStart) / 1000,
      idlePerMinute: perMinute(idle.total),
      idleKinds: idle.byKindAndCode,
      leasePerMinute: perMinute(idleAll.total - idle.total),
      watchesPerMinute: perMinute(idleWatches),
      reactions,
      reactionsMissed: missed,
      flaps: flapsWhileQuiet,
      notReady,
      simulatorWrites: simulatorApi.stats.writes - writesBefore,
      load: [loadBefore, loadavg()[0] ?? 0],
      ...(floor ? { floor } : {}),
    };
    if (simulatorApi.failures.length > 0)
      log(`  simulator write failures: ${simulatorApi.failures.slice(0, 3).join('; ')}`);
    return figures;
  } finally {
    if (operator && operator.child.exitCode === null) {
      const exited = new Promise((r) => operator?.child.once('exit', r));
      operator.child.kill('SIGTERM');
      // A profiled operator writes its profile on the way out, which takes a moment.
      await Promise.race([exited, sleep(profiled ? 60_000 : 10_000)]);
      if (operator.child.exitCode === null) operator.child.kill('SIGKILL');
    }
    if (figures && profileDir && window) {
      const [file] = existsSync(profileDir) ? readdirSync(profileDir) : [];
      if (file) {
        figures.profile = splitProfile(readProfile(join(profileDir, file)), window.fromUs, window.toUs);
        // The raw profile, to open in a viewer (Chrome's DevTools, speedscope) when the split is not enough.
        const keep = process.env.PGFSM_BENCH_KEEP_PROFILE;
        if (keep) {
          copyFileSync(join(profileDir, file), keep);
          log(`  the operator's CPU profile: ${keep} (window to Ready: ${window.fromUs}–${window.toUs} µs)`);
        }
      } else log('  the profiled operator wrote no profile');
    }
    for (const stop of stops.reverse()) await stop();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runApiServerBench(options: ApiBenchOptions, command: string): Promise<RunFigures[]> {
  const log: Log = (line) => console.log(line);
  const results: RunFigures[] = [];
  const profiled: RunFigures[] = [];
  const floors: RunFigures[] = [];
  log(
    `\nreal API server (kube-apiserver + etcd on loopback), CNPG simulator delays 0, pgfsm run with ${options.workers} workers; ` +
      `sizes ${options.sizes.join(', ')}, ${options.reps} repetition(s)`,
  );
  const loadAtStart = loadavg();
  const entry = options.fromSource ? ['--import', 'tsx', 'src/operator/cli/main.ts'] : [compileOperator(log)];
  if (options.floorSizes.length > 0) await compileFloorClient();
  for (const size of options.sizes) {
    const reps = repsOf(size, options);
    for (let rep = 1; rep <= reps; rep++) {
      log(`${size} clusters, repetition ${rep}/${reps}: starting a control plane`);
      results.push(await runOnce(size, options, entry, log));
    }
    if (options.operatorProfileSizes.includes(size)) {
      log(`${size} clusters, one more repetition with the operator profiled (left out of the table)`);
      profiled.push(await runOnce(size, options, entry, log, 'profile'));
    }
    for (let rep = 1; options.floorSizes.includes(size) && rep <= options.floorReps; rep++) {
      log(
        `${size} clusters, floor repetition ${rep}/${options.floorReps}, beside the floor clients (left out of the table)`,
      );
      floors.push(await runOnce(size, options, entry, log, 'floor'));
    }
  }
  const report = table(results, options.sizes);
  log(`\n${report}\n`);
  log(details(results, options.sizes));
  const whereCpuGoes = profiled.map((run) => profileReport(run, results)).join('\n');
  if (whereCpuGoes) log(whereCpuGoes);
  const floorText = floorReport(floors, results);
  if (floorText) log(floorText);
  if (options.resultsPath) {
    const cpu = cpus();
    const text = [
      '## The operator against a real API server',
      '',
      `Written by the last run of \`${command}\` on ${new Date().toISOString()}.`,
      '',
      `- machine: ${cpu.length} cores (\`os.cpus().length\`), ${cpu[0]?.model ?? 'unknown CPU'}; Node ${process.version}`,
      `- set-up: kube-apiserver and etcd on loopback with CloudNativePG's CRDs and webhooks, the CNPG simulator (all delays 0, timers every ${SIMULATOR_TICK_MS} ms) in the bench process, \`pgfsm run\` as its own process (${options.fromSource ? 'from the TypeScript sources through tsx: RSS includes the loader' : "compiled as `npm run build` does, run as the image runs it: `node …/cli/main.js run` (XState's production build), NODE_ENV=production"}${process.env.PGFSM_BENCH_OPERATOR_NODE_ARGS ? `, node flags added: \`${process.env.PGFSM_BENCH_OPERATOR_NODE_ARGS}\`` : ''}, with the Deployment's heap budget \`--max-old-space-size=${deployedHeapBudgetMb()}\`) with the pgfsm ServiceAccount token, ${options.workers} workers, leader election on`,
      `- clusters: ${options.pooledEvery > 0 ? `every ${options.pooledEvery === 1 ? '' : `${ordinal(options.pooledEvery)} `}cluster with the connection pooler (2 Poolers each), the others without` : 'none with the connection pooler'}; class \`standard\`, 1 instance; created ${CREATE_CONCURRENCY} at a time`,
      `- warm-up: ${options.warmUp > 0 ? `in each repetition, after \`pgfsm run\` leads and before anything is measured, ${options.warmUp} clusters of the same mix (deletion policy Delete) were taken to Ready and deleted, so that the measured clusters meet an operator whose code V8 has compiled, as the floor's client is warmed by its dry runs; the batch's own CPU per cluster is the "warm-up batch, cold" row, and the peak RSS includes it` : 'none (`--warm-up 0`): the measured clusters are the first the operator sees, V8 compiling its code while they go to Ready'}`,
      `- load average when the bench started (1/5/15 min): ${loadAtStart.map((l) => l.toFixed(1)).join(' / ')}; other work on the machine shares its cores with everything measured here`,
      `- cells: median (min–max) over ${options.sizes.map((n) => `${repsOf(n, options)} repetition(s) of ${n}`).join(', ')}, each on a fresh control plane; ${options.changes} reactions and ${options.idleSeconds} s idle per repetition`,
      '',
      report,
      '',
      details(results, options.sizes),
      ...(whereCpuGoes ? [whereCpuGoes] : []),
      ...(floorText ? [floorText] : []),
    ].join('\n');
    // Only its own section: the engine and the in-memory fleet write theirs (results-section.ts).
    writeSection(options.resultsPath, 'api', text);
    log(`written to ${options.resultsPath}`);
  }
  return results;
}

const repsOf = (size: number, options: ApiBenchOptions) => (size >= 1000 ? options.bigReps : options.reps);

const ordinal = (n: number) => (n === 2 ? 'second' : n === 3 ? 'third' : `${n}th`);

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  await runApiServerBench(parseApiBenchArgs(argv), `npm run bench:api${argv.length ? ` -- ${argv.join(' ')}` : ''}`);
}
