/**
 * Running the image builders' commands (apt-get, mmdebstrap, tar, buildah, dpkg-query): stdout is returned,
 * everything is optionally appended to a log file, and a failure is an Error that carries the command and the
 * last lines it printed.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Appends the command line and all its output here. */
  logFile?: string;
  /** Each line of stdout and stderr, as it comes. */
  onLine?: (line: string) => void;
  /** Exit codes that are not failures (default only 0). */
  okCodes?: number[];
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class CommandError extends Error {
  override name = 'CommandError';
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly tail: string[],
  ) {
    super(
      `${command} failed (${code === null ? 'killed' : `exit ${code}`})${tail.length ? `:\n${tail.join('\n')}` : ''}`,
    );
  }
}

const quote = (arg: string) => (/^[\w./:=@%+,-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/** A shell-readable rendering of a command line, for logs and error messages. */
export const commandLine = (command: string, args: readonly string[]) => [command, ...args].map(quote).join(' ');

export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const printable = commandLine(command, args);
  return new Promise((resolve, reject) => {
    const logStream = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
    logStream?.write(`$ ${printable}\n`);
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    const tail: string[] = [];
    const partial = { out: '', err: '' };
    const consume = (which: 'out' | 'err', chunk: Buffer) => {
      (which === 'out' ? stdout : stderr).push(chunk);
      logStream?.write(chunk);
      const lines = (partial[which] + chunk.toString()).split('\n');
      partial[which] = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        options.onLine?.(line);
      }
    };
    child.stdout.on('data', (chunk: Buffer) => consume('out', chunk));
    child.stderr.on('data', (chunk: Buffer) => consume('err', chunk));
    child.once('error', (error: NodeJS.ErrnoException) => {
      logStream?.end();
      reject(error.code === 'ENOENT' ? new Error(`${command} is not installed (needed for: ${printable})`) : error);
    });
    child.once('close', (code) => {
      for (const rest of [partial.out, partial.err]) {
        if (rest) {
          tail.push(rest);
          options.onLine?.(rest);
        }
      }
      const finish = () => {
        const result = {
          code: code ?? -1,
          stdout: Buffer.concat(stdout).toString(),
          stderr: Buffer.concat(stderr).toString(),
        };
        if (code !== null && (options.okCodes ?? [0]).includes(code)) resolve(result);
        else reject(new CommandError(printable, code, tail.slice(-25)));
      };
      if (logStream) logStream.end(finish);
      else finish();
    });
  });
}
