/** The operator's command line: `run` and `explain`, all that the image ships. */
import { Command } from 'commander';
import { buildInfo } from '../driver/build-info.ts';
import { registerExplain } from './explain.ts';
import { registerRun } from './run.ts';

export function operatorProgram(): Command {
  const program = new Command()
    .name('pgfsm')
    .description(
      'PostgresCluster and PostgresDatabase lifecycle operator for CloudNativePG, each driven by an XState statechart',
    )
    // pgfsm's package.json version, the one the image is tagged with.
    .version(buildInfo().version, '-V, --version', 'print the version of pgfsm');
  registerRun(program);
  registerExplain(program);
  return program;
}
