#!/usr/bin/env node
/**
 * The development command line (`npm run pgfsm`, `npm start`): the operator's own commands plus the
 * tools — sandbox, simulate, diagram. Never shipped: the image runs src/operator/cli/main.ts.
 */
import { operatorProgram } from '../../operator/cli/program.ts';
import { registerSandbox } from './sandbox.ts';

const program = operatorProgram();

program
  .command('diagram')
  .description('render both lifecycle statecharts into diagrams/ (Mermaid, DOT, SVG, state table)')
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
    const { runDemo } = await import('../simulation/demo.ts');
    await runDemo({ examplesDir: options.examples, print: (line) => console.log(line) });
  });

registerSandbox(program);

await program.parseAsync(process.argv);
