/**
 * `pgfsm explain <namespace>/<name>`: reads the live PostgresCluster and its children through the same
 * ports and observation as the operator, then prints what the machine would do with them (src/operator/explain).
 * Read-only: it never writes, and it only ever sees Secrets as key names.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ClusterKey } from '../core/ports.ts';
import { defaultSettings, type Settings } from '../domain/observation.ts';
import { duration, envOption, wholeNumber } from './arguments.ts';

export interface ExplainOptions {
  kubeconfig?: string;
  context?: string;
  output: 'text' | 'json';
  events: number;
  progressDeadline: number;
  clusterDomain: string;
}

/** A failure the user can act on: printed as one line, exit code 1. */
export class ExplainError extends Error {}

export function parseTarget(value: string): ClusterKey {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(value);
  if (!match?.[1] || !match[3]) throw new InvalidArgumentError('expected <namespace>/<name>, e.g. team-a/orders');
  return { namespace: match[1], name: match[3] };
}

/** The same variables as `pgfsm run`, so explain inside the operator's pod judges by its settings. */
const option = envOption;

const settingsOf = (options: ExplainOptions): Settings => ({
  ...defaultSettings,
  progressDeadlineMs: options.progressDeadline,
  clusterDomain: options.clusterDomain,
});

/** The Kubernetes client for the kubeconfig and context asked for; every failure says which file. */
async function connect(options: Pick<ExplainOptions, 'kubeconfig' | 'context'>) {
  const { KubeConfigError, loadKubeConfig } = await import('../kubernetes/index.ts');
  const file = options.kubeconfig ?? process.env.KUBECONFIG ?? '~/.kube/config';
  const fromFile = options.kubeconfig ? { kubeconfig: options.kubeconfig } : {};
  try {
    return loadKubeConfig({ ...fromFile, ...(options.context ? { context: options.context } : {}) });
  } catch (error) {
    if (!(error instanceof KubeConfigError)) {
      // client-node reports a file that is not a kubeconfig as a TypeError deep inside its parser.
      const why = error instanceof TypeError ? 'not a kubeconfig file' : (error as Error).message;
      throw new ExplainError(`cannot load kubeconfig ${file}: ${why}`);
    }
    // An unknown context leaves no server, which the loader reports as "nothing configured": say why.
    const contexts = options.context ? contextsIn(() => loadKubeConfig(fromFile)) : undefined;
    if (contexts && options.context && !contexts.includes(options.context)) {
      throw new ExplainError(`context ${options.context} not found in ${file} (has: ${contexts.join(', ') || 'none'})`);
    }
    throw new ExplainError(error.message);
  }
}

const contextsIn = (load: () => { getContexts(): Array<{ name: string }> }) => {
  try {
    return load()
      .getContexts()
      .map((c) => c.name);
  } catch {
    return undefined;
  }
};

/** Names the likely cause of the port errors people meet first: RBAC. */
function clearly(error: unknown): Error {
  if (error instanceof ExplainError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const forbidden = (error as { errorClass?: string }).errorClass === 'forbidden';
  return new ExplainError(forbidden ? `${message} (the kubeconfig's user lacks permission for it)` : message);
}

/**
 * Reads the cluster's world the way the operator does (`observeCluster` over the Kubernetes ports)
 * and renders the explanation. Events are best effort: without them the explanation still stands.
 */
export async function explainCluster(key: ClusterKey, options: ExplainOptions): Promise<string> {
  // Imported here so that other pgfsm commands start without loading the Kubernetes client.
  const [{ kubernetesPorts }, { listEventsRegarding }, { observeCluster }, { explain, renderJson, renderText }] =
    await Promise.all([
      import('../kubernetes/index.ts'),
      import('../kubernetes/event-reader.ts'),
      import('../core/observe.ts'),
      import('../explain/index.ts'),
    ]);
  const kc = await connect(options);
  try {
    const ports = kubernetesPorts(kc);
    const cluster = await ports.clusters.get(key);
    const server = kc.getCurrentCluster()?.server ?? 'the API server';
    if (!cluster) throw new ExplainError(`PostgresCluster ${key.namespace}/${key.name} not found at ${server}`);
    const regarding = { ...key, ...(cluster.metadata.uid ? { uid: cluster.metadata.uid } : {}) };
    const [observation, events] = await Promise.all([
      observeCluster(ports, cluster),
      options.events > 0
        ? listEventsRegarding(kc, regarding, options.events).then(
            (items) => ({ items, error: undefined }),
            (error: unknown) => ({ items: [], error: error instanceof Error ? error.message : String(error) }),
          )
        : { items: [], error: undefined },
    ]);
    const explanation = explain({
      observation,
      settings: settingsOf(options),
      now: Date.now(),
      events: events.items,
      ...(events.error ? { eventsError: events.error } : {}),
    });
    return options.output === 'json' ? renderJson(explanation) : renderText(explanation);
  } catch (error) {
    throw clearly(error);
  }
}

export function registerExplain(program: Command): Command {
  return program
    .command('explain')
    .description('explain where a PostgresCluster is in its lifecycle, what blocks it, and what to do about it')
    .argument('<namespace/name>', 'the PostgresCluster', parseTarget)
    .addOption(
      option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config)', 'PGFSM_KUBECONFIG'),
    )
    .addOption(option('--context <name>', 'kubeconfig context to use', 'PGFSM_CONTEXT'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(
      new Option('--events <n>', 'how many of the latest events to show').argParser(wholeNumber(0)).default(10),
    )
    .addOption(
      option('--progress-deadline <duration>', 'the operator’s progress deadline', 'PGFSM_PROGRESS_DEADLINE')
        .argParser(duration)
        .default(defaultSettings.progressDeadlineMs, '15m'),
    )
    .addOption(
      option('--cluster-domain <domain>', 'the operator’s DNS domain of endpoints', 'PGFSM_CLUSTER_DOMAIN').default(
        defaultSettings.clusterDomain,
      ),
    )
    .action(async (key: ClusterKey, options: ExplainOptions) => {
      try {
        process.stdout.write(await explainCluster(key, options));
      } catch (error) {
        console.error(`pgfsm explain: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 1;
      }
    });
}
