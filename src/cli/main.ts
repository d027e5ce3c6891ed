#!/usr/bin/env node
/** The pgfsm command line. */
import { Command } from 'commander';
import { registerExplain } from './explain.ts';
import { registerRun } from './run.ts';
import { registerSandbox } from './sandbox.ts';

const program = new Command()
  .name('pgfsm')
  .description('PostgresCluster lifecycle operator for CloudNativePG, driven by an XState statechart');

program
  .command('diagram')
  .description('render the lifecycle statechart into diagrams/ (Mermaid, DOT, SVG, state table)')
  .option('--out <dir>', 'output directory', 'diagrams')
  .option('--check', 'fail when the committed files differ from what the machine generates')
  .action(async (options: { out: string; check?: boolean }) => {
    const { writeDiagrams } = await import('../diagram/index.ts');
    const stale = await writeDiagrams(options.out, { check: options.check ?? false });
    if (options.check && stale.length > 0) {
      console.error(`stale: ${stale.join(', ')} — run: npm run diagram`);
      process.exitCode = 1;
    }
  });

program
  .command('simulate')
  .description('run the examples through their lifecycle on the in-memory API and CNPG simulator')
  .option('--examples <dir>', 'directory of example manifests', 'examples')
  .action(async (options: { examples: string }) => {
    const { runDemo } = await import('../sim/demo.ts');
    await runDemo({ examplesDir: options.examples, print: (line) => console.log(line) });
  });

registerRun(program);
registerSandbox(program);
registerExplain(program);

await program.parseAsync(process.argv);
