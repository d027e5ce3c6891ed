/**
 * The real pgfsm operator as a process of its own: `pgfsm run`, the command the Deployment runs, started
 * through the same entry point and loader as the sandbox (tsx under `npm start`, the compiled JavaScript
 * under bin/pgfsm.js). Its JSON log goes to a file (the terminal shows the clusters' progress instead), it
 * holds the Lease like a deployed replica, so stopping releases it and a second operator would wait rather
 * than race, and it gets SIGTERM, the signal a pod gets, when the sandbox stops.
 *
 * It runs in a process group of its own (startProcess), so a Ctrl-C at the terminal reaches the sandbox
 * only; the sandbox then stops it in order. A second signal would make `pgfsm run` exit without releasing
 * the Lease.
 *
 * With CNPG simulated there is no PostgreSQL for a PostgresDatabase's grants: `recordGrants` has the process
 * import recorded-grants.ts first, which records them instead of running them.
 */
import { createServer } from 'node:net';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createLogger, type Logger } from '../../operator/driver/logger.ts';
import { type ManagedProcess, registerExitCleanup, startProcess, waitUntil } from '../control-plane/processes.ts';

export const LEASE = { namespace: 'pgfsm-system', name: 'pgfsm-leader' };

/** `pgfsm run` drains its passes, releases the Lease and exits; it forces its own exit after 25 s. */
const STOP_GRACE_MS = 30_000;
const START_TIMEOUT_MS = 60_000;

/** The command line's entry point, next to this module in both layouts (src/ and dist/src/). */
const EXTENSION = extname(fileURLToPath(import.meta.url));
const CLI = fileURLToPath(new URL(`../cli/main${EXTENSION}`, import.meta.url));
/** What `--import` loads before the command line when the grants are recorded. */
const RECORDED_GRANTS = new URL(`./recorded-grants${EXTENSION}`, import.meta.url).href;

/** The sandbox's own log (the simulator, the progress watch), to a file. */
export function fileLogger(path: string, level = 'info'): Logger {
  return createLogger({ level, destination: pino.destination({ dest: path, sync: true, mkdir: true }) });
}

/** `port` on 127.0.0.1 when it is free, else one the kernel picks: a second sandbox still starts. */
export async function availablePort(port: number): Promise<number> {
  const tryListen = (wanted: number) =>
    new Promise<number | undefined>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(undefined));
      server.listen({ host: '127.0.0.1', port: wanted, exclusive: true }, () => {
        const { port: bound } = server.address() as { port: number };
        server.close(() => resolve(bound));
      });
    });
  return (await tryListen(port)) ?? (await tryListen(0)) ?? 0;
}

export interface SandboxOperator {
  process: ManagedProcess;
  identity: string;
  metricsUrl: string;
  /** SIGTERM, then waits for the exit; fails when `pgfsm run` did not exit cleanly. */
  stop(): Promise<void>;
}

export interface SandboxOperatorOptions {
  /** How `pgfsm run` reaches the cluster: `--kubeconfig <file>` or `--context <name>`. */
  connection: string[];
  logFile: string;
  preferredPort: number;
  /** PostgreSQL is simulated: record the PostgresDatabases' grants instead of running them (recorded-grants.ts). */
  recordGrants: boolean;
}

export async function startSandboxOperator(options: SandboxOperatorOptions): Promise<SandboxOperator> {
  const identity = `sandbox-${process.pid}`;
  const port = await availablePort(options.preferredPort);
  const args = [
    // The loader and conditions this process runs with (`--import tsx` under npm start).
    ...process.execArgv,
    ...(options.recordGrants ? ['--import', RECORDED_GRANTS] : []),
    CLI,
    'run',
    ...options.connection,
    '--metrics-addr',
    `127.0.0.1:${port}`,
    '--identity',
    identity,
    '--leader-elect',
    'true',
    '--lease-namespace',
    LEASE.namespace,
    '--lease-name',
    LEASE.name,
  ];
  const operator = startProcess({ name: 'pgfsm run', command: process.execPath, args, logFile: options.logFile });
  // If the sandbox exits without its teardown (a second Ctrl-C), the operator goes with it.
  const unregister = registerExitCleanup(() => operator.killNow(), { onSignals: false });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntil('pgfsm run to answer /healthz', async () => (await fetch(`${base}/healthz`)).ok, {
      timeoutMs: START_TIMEOUT_MS,
      watch: [operator],
    });
  } catch (error) {
    await operator.stop(STOP_GRACE_MS);
    unregister();
    throw error;
  }
  return {
    process: operator,
    identity,
    metricsUrl: `${base}/metrics`,
    async stop() {
      await operator.stop(STOP_GRACE_MS);
      unregister();
      const { code, signal } = await operator.exited;
      if (code !== 0) throw new Error(`pgfsm run exited with code ${code} (signal ${signal}); see ${options.logFile}`);
    },
  };
}
