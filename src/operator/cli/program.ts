/** The operator's command line: `run` and `explain`, all that the image ships. */
import { Command } from 'commander';
import { registerExplain } from './explain.ts';
import { registerRun } from './run.ts';

export function operatorProgram(): Command {
  const program = new Command()
    .name('pgfsm')
    .description(
      'PostgresCluster and PostgresDatabase lifecycle operator for CloudNativePG, each driven by an XState statechart',
    );
  registerRun(program);
  registerExplain(program);
  return program;
}
