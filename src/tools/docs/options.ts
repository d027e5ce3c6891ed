/** The `pgfsm run` options, read from the command definition itself (src/operator/cli/run.ts). */
import { Command, type Option } from 'commander';
import { registerRun } from '../../operator/cli/run.ts';
import { code, table } from './markdown.ts';

export interface RunOption {
  flags: string;
  /** The environment variable that sets it. */
  env?: string;
  /** The default as the help shows it; undefined when there is none. */
  defaultValue?: string;
  description: string;
}

const defaultOf = (option: Option): string | undefined =>
  option.defaultValueDescription ?? (option.defaultValue === undefined ? undefined : String(option.defaultValue));

/** Every option of `pgfsm run`, in the order of its help. */
export function runOptions(): RunOption[] {
  const run = registerRun(new Command());
  return run.options
    .filter((o) => !o.hidden)
    .map((o) => ({
      flags: o.flags,
      ...(o.envVar ? { env: o.envVar } : {}),
      ...(defaultOf(o) !== undefined ? { defaultValue: defaultOf(o) } : {}),
      description: o.description,
    }));
}

export function optionsTable(options: readonly RunOption[] = runOptions()): string {
  return table(
    ['Flag', 'Environment variable', 'Default', 'Meaning'],
    options.map((o) => [
      code(o.flags),
      o.env ? code(o.env) : '',
      o.defaultValue !== undefined ? code(o.defaultValue) : '',
      o.description,
    ]),
  );
}
