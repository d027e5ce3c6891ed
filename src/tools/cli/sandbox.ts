/**
 * `pgfsm sandbox` (what `npm start` runs) and `pgfsm sandbox switchover`. Modules are imported inside
 * the actions, so that other commands start without loading the client or the control plane.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { duration } from '../../operator/cli/arguments.ts';
import { packageFile } from '../package-files.ts';

interface SandboxCliOptions {
  exitWhenReady?: boolean;
  timeout: number;
  examples: string;
  useCurrentContext?: boolean;
  context?: string;
  yes?: boolean;
  metricsPort: number;
  real?: boolean;
}

const port = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('must be a port number');
  return n;
};

const EXAMPLES = packageFile('examples');

export function registerSandbox(program: Command): Command {
  const sandbox = program
    .command('sandbox')
    .description(
      'a local control plane, the pgfsm CRDs and RBAC, CNPG simulated and the operator as a `pgfsm run` process; applies ' +
        'examples/ and shows their progress (what npm start runs)',
    )
    .addOption(
      new Option('--exit-when-ready', 'exit 0 once every example is Ready (non-zero on timeout), tearing down').env(
        'PGFSM_SANDBOX_EXIT_WHEN_READY',
      ),
    )
    .addOption(
      new Option('--timeout <duration>', 'how long the examples may take to become Ready once applied')
        .argParser(duration)
        .default(5 * 60_000, '5m'),
    )
    .addOption(new Option('--examples <dir>', 'directory of manifests to apply').default(EXAMPLES, 'examples/'))
    .option(
      '--real',
      'on a real single node in a network namespace of this machine (root): real CloudNativePG, PostgreSQL and ' +
        "PgBouncer, pgfsm's own image; prints a psql command that connects",
    )
    .option('--use-current-context', 'run against the cluster of your kubeconfig instead (asks first)')
    .option('--context <name>', 'with --use-current-context: this kubeconfig context instead of the current one')
    .option('--yes', 'with --use-current-context: do not ask (needed when stdin is not a terminal)')
    .addOption(
      new Option('--metrics-port <port>', 'port of /metrics on 127.0.0.1 (another is picked when taken)')
        .argParser(port)
        .default(8080),
    )
    .action(async (options: SandboxCliOptions) => {
      if ((options.context || options.yes) && !options.useCurrentContext) {
        sandbox.error('--context and --yes only apply with --use-current-context');
      }
      const { runSandbox } = await import('../sandbox/sandbox.ts');
      await runSandbox({
        examplesDir: options.examples,
        exitWhenReady: options.exitWhenReady === true,
        timeoutMs: options.timeout,
        useCurrentContext: options.useCurrentContext === true,
        ...(options.context ? { context: options.context } : {}),
        yes: options.yes === true,
        metricsPort: options.metricsPort,
        real: options.real === true,
      });
    });

  sandbox
    .command('switchover <cluster>')
    .description(
      "ask the running sandbox's simulated CNPG to switch over a cluster's primary (namespace/name, or a name " +
        'in team-a); uses --kubeconfig, else $KUBECONFIG: export the one the sandbox prints',
    )
    .option('--kubeconfig <path>', 'kubeconfig of the sandbox')
    .action(async (cluster: string, options: { kubeconfig?: string }) => {
      const { requestSwitchover } = await import('../sandbox/request.ts');
      try {
        console.log(await requestSwitchover(cluster, options.kubeconfig));
      } catch (error) {
        console.error(`pgfsm sandbox switchover: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 1;
      }
    });
  return sandbox;
}
