/**
 * `pgfsm run` as a process of its own, from the sources (through tsx, as `npm run pgfsm` runs it), so a
 * test can kill it with SIGKILL at any moment and start it again, as a crashed pod is restarted. Its JSON
 * log lines are kept for the test to read.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CLI = ['--conditions=development', '--import', 'tsx', join(ROOT, 'src', 'operator', 'cli', 'main.ts')];

export interface OperatorProcessOptions {
  kubeconfig: string;
  identity: string;
  /** More `pgfsm run` flags, e.g. `--leader-elect false`. */
  args?: string[];
  logLevel?: string;
  /**
   * Modules loaded before the command line (`node --import`), from the repository's root: e.g.
   * src/tools/sandbox/recorded-grants.ts where no PostgreSQL runs, as the sandbox's `pgfsm run` loads it.
   */
  preload?: string[];
}

export class OperatorProcess {
  /** Every line every incarnation wrote, stdout and stderr, in order. */
  readonly lines: string[] = [];
  /** How many times the process was started. */
  starts = 0;
  private child: ChildProcess | undefined;

  constructor(private readonly options: OperatorProcessOptions) {}

  start(): void {
    if (this.running) throw new Error('pgfsm run is already running');
    this.starts++;
    const child = spawn(
      process.execPath,
      [
        ...CLI.slice(0, -1),
        ...(this.options.preload ?? []).flatMap((module) => ['--import', pathToFileURL(join(ROOT, module)).href]),
        ...CLI.slice(-1),
        'run',
        '--kubeconfig',
        this.options.kubeconfig,
        '--metrics-addr',
        '127.0.0.1:0',
        '--identity',
        this.options.identity,
        '--log-level',
        this.options.logLevel ?? 'debug',
        ...(this.options.args ?? []),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '/nonexistent' } },
    );
    const collect = (stream: NodeJS.ReadableStream | null) => {
      let partial = '';
      stream?.on('data', (chunk: Buffer) => {
        const parts = (partial + chunk.toString()).split('\n');
        partial = parts.pop() ?? '';
        this.lines.push(...parts);
      });
    };
    collect(child.stdout);
    collect(child.stderr);
    this.child = child;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILL: no drain, no Lease release, nothing flushed — a crash. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM and wait for the exit, as a pod is stopped. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }

  /** The JSON log records, across incarnations. */
  records(): Array<Record<string, unknown>> {
    return this.lines.flatMap((line) => {
      try {
        const record = JSON.parse(line) as unknown;
        return typeof record === 'object' && record !== null ? [record as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  }
}
