/**
 * Child processes that must never outlive the test run.
 *
 * Each server runs in its own process group (`detached`), so stopping it kills everything it might have
 * started and a Ctrl-C aimed at the terminal's foreground group reaches only us; we then stop the servers in
 * order. Three layers make sure they go away:
 *   1. `stop()`: SIGTERM to the group, SIGKILL after a grace period (the normal path, from try/finally or
 *      afterAll);
 *   2. a synchronous SIGKILL from a `process.on('exit')` hook, and optionally from SIGINT/SIGTERM/SIGHUP
 *      handlers (when the test process ends without running teardown);
 *   3. a tiny `sh` watchdog per server that holds a pipe from us: if we die hard (SIGKILL, OOM), the pipe
 *      reaches EOF and the watchdog kills the group and deletes the server's state directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  readonly exited: Promise<ExitInfo>;
  isRunning(): boolean;
  /** SIGTERM to the process group, then SIGKILL after `graceMs`. Resolves once the leader has exited. */
  stop(graceMs?: number): Promise<void>;
  /** Synchronous SIGKILL of the group, for exit hooks where nothing asynchronous can run any more. */
  killNow(): void;
}

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  /** Working directory; default ours. */
  cwd?: string;
  /** Directory the watchdog deletes if we die without cleaning up (e.g. etcd's data dir on tmpfs). */
  removeOnCrash?: string;
  /**
   * A daemon meant to outlive us (the real node's, which `npm run node -- stop` ends later): no watchdog,
   * and it does not keep our event loop alive.
   */
  outlivesUs?: boolean;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

// `while read` only ends at EOF, i.e. when our end of the pipe closes (normally because we died).
const WATCHDOG =
  'while read -r _; do :; done; kill -s KILL -- "-$1" 2>/dev/null; if [ -n "$2" ]; then rm -rf -- "$2"; fi';

function startWatchdog(pgid: number, removeOnCrash: string | undefined): ChildProcess {
  const watchdog = spawn('sh', ['-c', WATCHDOG, 'pgfsm-watchdog', String(pgid), removeOnCrash ?? ''], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the watchdog nor its pipe may keep our event loop alive.
  watchdog.unref();
  (watchdog.stdin as unknown as Socket | null)?.unref();
  return watchdog;
}

export function startProcess(spec: ProcessSpec): ManagedProcess {
  const out = openSync(spec.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(spec.command, spec.args, {
      detached: true,
      stdio: ['ignore', out, out],
      env: spec.env ?? process.env,
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
    });
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(out);
  }
  const pid = child.pid;
  if (pid === undefined) {
    throw new Error(`could not start ${spec.name} (${spec.command}); is it executable?`);
  }
  const watchdog = spec.outlivesUs ? undefined : startWatchdog(pid, spec.removeOnCrash);
  if (spec.outlivesUs) child.unref();
  let running = true;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    });
  });
  child.once('error', () => {
    running = false;
  });

  const dismissWatchdog = () => {
    if (watchdog?.pid !== undefined) {
      try {
        process.kill(watchdog.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };

  return {
    name: spec.name,
    pid,
    logFile: spec.logFile,
    exited,
    isRunning: () => running,
    async stop(graceMs = 10_000) {
      if (running) {
        killGroup(pid, 'SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), graceMs);
        });
        const outcome = await Promise.race([exited, timedOut]);
        clearTimeout(timer);
        if (outcome === 'timeout') {
          killGroup(pid, 'SIGKILL');
          await exited;
        }
      }
      // Anything the leader left behind in its group goes too.
      killGroup(pid, 'SIGKILL');
      dismissWatchdog();
    },
    killNow() {
      killGroup(pid, 'SIGKILL');
      dismissWatchdog();
    },
  };
}

export function tailOf(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns true. Fails fast, with the server's log, if a watched process exits meanwhile;
 * fails with the log after `timeoutMs` too, so a hung start is diagnosable from the test output alone.
 */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  options: { timeoutMs: number; watch: ManagedProcess[] },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError = '';
  for (;;) {
    for (const proc of options.watch) {
      if (!proc.isRunning()) {
        const info = await proc.exited;
        throw new Error(
          `${proc.name} exited (code ${info.code}, signal ${info.signal}) while waiting for ${what}.\n` +
            `Last lines of ${proc.logFile}:\n${tailOf(proc.logFile)}`,
        );
      }
    }
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = (error as Error).message;
    }
    if (Date.now() > deadline) {
      const logs = options.watch.map((p) => `--- ${p.logFile}:\n${tailOf(p.logFile)}`).join('\n');
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${what} (last error: ${lastError})\n${logs}`,
      );
    }
    await sleep(250);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Last-resort cleanup when the Node process ends without running teardown.

interface ExitCleanup {
  run: () => void;
  onSignals: boolean;
}

const exitCleanups = new Set<ExitCleanup>();
let hooksInstalled = false;
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function runExitCleanups(signalled: boolean): void {
  for (const cleanup of [...exitCleanups]) {
    if (signalled && !cleanup.onSignals) continue;
    exitCleanups.delete(cleanup);
    try {
      cleanup.run();
    } catch {
      // best effort: the process is going away
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  runExitCleanups(true);
  process.removeListener(signal, onSignal);
  // Restore the default behaviour (terminate) unless someone else also handles this signal.
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

/**
 * Registers a synchronous cleanup for process exit (and, if `onSignals`, for SIGINT/SIGTERM/SIGHUP).
 * Returns a function that unregisters it (call it after a normal, asynchronous teardown).
 */
export function registerExitCleanup(run: () => void, options: { onSignals: boolean }): () => void {
  if (!hooksInstalled) {
    hooksInstalled = true;
    process.on('exit', () => runExitCleanups(false));
  }
  if (options.onSignals) {
    for (const signal of SIGNALS) {
      if (!process.listeners(signal).includes(onSignal)) process.on(signal, onSignal);
    }
  }
  const cleanup: ExitCleanup = { run, onSignals: options.onSignals };
  exitCleanups.add(cleanup);
  return () => {
    exitCleanups.delete(cleanup);
  };
}
