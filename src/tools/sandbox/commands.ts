/**
 * The sandbox's command channel on stdin: a line per command, so it works the same typed on a terminal
 * and written by a test through a pipe. Read in line mode (not raw), so Ctrl-C stays a signal.
 */
import { createInterface } from 'node:readline';
import type { Output } from './output.ts';
import { databaseSummary, type Progress, summary } from './progress.ts';
import type { SandboxSimulator } from './simulator.ts';

export type Command =
  | { kind: 'switchover'; namespace: string; name: string }
  | { kind: 'status' }
  | { kind: 'help' }
  | { kind: 'quit' }
  | { kind: 'none' }
  | { kind: 'unknown'; text: string };

export const COMMAND_HELP = [
  's <cluster>   CNPG switches over the primary of <cluster> (e.g. s orders, s team-a/orders)',
  't             the status tables (clusters, databases)',
  'h             this help',
  'q             stop the sandbox and clean up (as Ctrl-C)',
];

export function parseCommand(line: string, defaultNamespace: string): Command {
  const [verb = '', arg, ...rest] = line.trim().split(/\s+/);
  if (verb === '') return { kind: 'none' };
  const only = (command: Command): Command => (arg === undefined ? command : { kind: 'unknown', text: line.trim() });
  switch (verb.toLowerCase()) {
    case 's':
    case 'switchover': {
      if (arg === undefined || rest.length > 0) return { kind: 'unknown', text: line.trim() };
      const [namespace, name] = arg.includes('/') ? arg.split('/', 2) : [defaultNamespace, arg];
      return namespace && name ? { kind: 'switchover', namespace, name } : { kind: 'unknown', text: line.trim() };
    }
    case 't':
    case 'status':
      return only({ kind: 'status' });
    case 'h':
    case 'help':
    case '?':
      return only({ kind: 'help' });
    case 'q':
    case 'quit':
    case 'exit':
      return only({ kind: 'quit' });
    default:
      return { kind: 'unknown', text: line.trim() };
  }
}

/** Reads commands until `close()` or the end of stdin (which is not a reason to stop the sandbox). */
export function readCommands(
  onCommand: (command: Command) => void,
  defaultNamespace: string,
  input: NodeJS.ReadableStream = process.stdin,
): { close(): void } {
  const rl = createInterface({ input, terminal: false });
  rl.on('line', (line) => onCommand(parseCommand(line, defaultNamespace)));
  return { close: () => rl.close() };
}

/** What each command does in a running sandbox. */
export function commandHandler(
  out: Output,
  progress: Progress,
  simulator: SandboxSimulator | undefined,
  quit: () => void,
): (command: Command) => void {
  return (command) => {
    switch (command.kind) {
      case 'switchover':
        if (!simulator) out.warn('no simulated CNPG here: a switchover is up to the real CloudNativePG');
        else if (!simulator.switchover(command.namespace, command.name))
          out.warn(`no CNPG Cluster ${command.namespace}/${command.name}`);
        return;
      case 'status': {
        for (const row of summary(progress.clusters(), out)) out.line(`  ${row}`);
        const databases = progress.databases();
        if (databases.length > 0) {
          out.line();
          for (const row of databaseSummary(databases, out)) out.line(`  ${row}`);
        }
        return;
      }
      case 'help':
        for (const line of COMMAND_HELP) out.line(`  ${line}`);
        return;
      case 'quit':
        quit();
        return;
      case 'unknown':
        out.warn(`unknown command "${command.text}" (h for help)`);
        return;
      case 'none':
        return;
    }
  };
}
