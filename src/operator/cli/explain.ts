/**
 * `pgfsm explain <namespace>/<name>` (a PostgresCluster) and `pgfsm explain postgresdatabase <name> -n <namespace>`
 * (or `pgdb`): reads the live resource and its world through the same ports and observation as the operator,
 * then prints what its machine would do with them (src/operator/explain). Read-only: it never writes, and it
 * only ever sees Secrets as key names.
 */

import type { KubeConfig } from '@kubernetes/client-node';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ClusterKey } from '../core/ports.ts';
import { defaultSettings, type Settings } from '../domain/observation.ts';
import type { DatabaseExplanation, ExplainEvent, Explanation } from '../explain/types.ts';
import { duration, envOption, wholeNumber } from './arguments.ts';

export interface ExplainOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  output: 'text' | 'json';
  events: number;
  progressDeadline: number;
  clusterDomain: string;
}

/** A failure the user can act on: printed as one line, exit code 1. */
export class ExplainError extends Error {}

export type ExplainKind = 'PostgresCluster' | 'PostgresDatabase';

/** What to explain; no namespace means the kubeconfig context's (as kubectl has it), else `default`. */
export interface ExplainTarget {
  kind: ExplainKind;
  namespace?: string;
  name: string;
}

/** The names kubectl knows each kind by (the CRDs' plural, singular and short names), lower case. */
const KINDS: Readonly<Record<string, ExplainKind>> = {
  postgrescluster: 'PostgresCluster',
  postgresclusters: 'PostgresCluster',
  'postgresclusters.pgfsm.io': 'PostgresCluster',
  pgc: 'PostgresCluster',
  postgresdatabase: 'PostgresDatabase',
  postgresdatabases: 'PostgresDatabase',
  'postgresdatabases.pgfsm.io': 'PostgresDatabase',
  pgdb: 'PostgresDatabase',
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const OBJECT_NAME = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

export function parseTarget(value: string): ClusterKey {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(value);
  if (!match?.[1] || !match[3]) throw new InvalidArgumentError('expected <namespace>/<name>, e.g. team-a/orders');
  return { namespace: match[1], name: match[3] };
}

const USAGE =
  'expected <namespace>/<name> (a PostgresCluster), or a kind and a name: ' +
  'postgrescluster|pgc|postgresdatabase|pgdb <name> [-n <namespace>], e.g. pgdb orders-app -n team-a';

/**
 * The target from the words given: `team-a/orders` (a PostgresCluster, as ever), `<kind> <name>`,
 * `<kind>/<name>` or `<kind> <namespace>/<name>`, with `-n` for the namespace.
 */
export function resolveTarget(first: string, second: string | undefined, namespace?: string): ExplainTarget {
  if (namespace !== undefined && !DNS_LABEL.test(namespace)) {
    throw new InvalidArgumentError(`-n ${namespace}: not a namespace name`);
  }
  const [head = '', ...rest] = first.split('/');
  const kind = KINDS[head.toLowerCase()];
  if (!kind) {
    if (second !== undefined) throw new InvalidArgumentError(`unknown kind ${head}: ${USAGE}`);
    // `<namespace>/<name>`: a PostgresCluster, exactly as before kinds were known here.
    if (!first.includes('/')) throw new InvalidArgumentError(USAGE);
    const key = parseTarget(first);
    if (namespace !== undefined && namespace !== key.namespace) {
      throw new InvalidArgumentError(`${first} names namespace ${key.namespace}, -n says ${namespace}`);
    }
    return { kind: 'PostgresCluster', ...key };
  }
  // The name after the kind: `<kind>/<name>` or `<kind> <name>`, never both.
  const inline = rest.length > 0 ? rest.join('/') : undefined;
  const word = inline ?? second;
  if (!word || (inline !== undefined && second !== undefined)) {
    throw new InvalidArgumentError(`${head} needs one name: ${USAGE}`);
  }
  const [ns, name, more] = word.includes('/') ? word.split('/') : [undefined, word];
  if (more !== undefined || !name || !OBJECT_NAME.test(name) || (ns !== undefined && !DNS_LABEL.test(ns))) {
    throw new InvalidArgumentError(`${word}: not a ${kind} name: ${USAGE}`);
  }
  if (ns !== undefined && namespace !== undefined && ns !== namespace) {
    throw new InvalidArgumentError(`${word} names namespace ${ns}, -n says ${namespace}`);
  }
  const inNamespace = ns ?? namespace;
  return { kind, ...(inNamespace !== undefined ? { namespace: inNamespace } : {}), name };
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

/** Best effort: without the events the explanation still stands, and says why they are missing. */
function readEvents(
  read: () => Promise<ExplainEvent[]>,
  limit: number,
): Promise<{ items: ExplainEvent[]; error?: string }> {
  if (limit <= 0) return Promise.resolve({ items: [] });
  return read().then(
    (items) => ({ items }),
    (error: unknown) => ({ items: [], error: error instanceof Error ? error.message : String(error) }),
  );
}

/** What explaining one object needs: how to read it and its world, and how to explain what was read. */
interface Subject<O, W> {
  kind: 'PostgresCluster' | 'PostgresDatabase';
  read(): Promise<O | undefined>;
  observe(object: O): Promise<W>;
  explain(input: {
    observation: W;
    settings: Settings;
    now: number;
    events: ExplainEvent[];
    eventsError?: string;
  }): Explanation | DatabaseExplanation;
}

/**
 * The object, or a clear "not found"; then its world and its Events read together (Events are best effort:
 * without them the explanation still stands), explained and rendered. Both kinds are explained this way.
 */
async function explainSubject<O extends { metadata: { uid?: string } }, W>(
  kc: KubeConfig,
  key: ClusterKey,
  options: ExplainOptions,
  subject: Subject<O, W>,
): Promise<string> {
  const [{ listEventsRegarding }, { renderJson, renderText }] = await Promise.all([
    import('../kubernetes/event-reader.ts'),
    import('../explain/index.ts'),
  ]);
  const object = await subject.read();
  const server = kc.getCurrentCluster()?.server ?? 'the API server';
  if (!object) throw new ExplainError(`${subject.kind} ${key.namespace}/${key.name} not found at ${server}`);
  const regarding = { kind: subject.kind, ...key, ...(object.metadata.uid ? { uid: object.metadata.uid } : {}) };
  const [observation, events] = await Promise.all([
    subject.observe(object),
    readEvents(() => listEventsRegarding(kc, regarding, options.events), options.events),
  ]);
  const explanation = subject.explain({
    observation,
    settings: settingsOf(options),
    now: Date.now(),
    events: events.items,
    ...(events.error ? { eventsError: events.error } : {}),
  });
  return options.output === 'json' ? renderJson(explanation) : renderText(explanation);
}

/** Reads the cluster's world the way the operator does (`observeCluster` over the Kubernetes ports). */
export async function explainCluster(key: ClusterKey, options: ExplainOptions): Promise<string> {
  // Imported here so that other pgfsm commands start without loading the Kubernetes client.
  const [{ kubernetesPorts }, { observeCluster }, { explain }] = await Promise.all([
    import('../kubernetes/index.ts'),
    import('../core/observe.ts'),
    import('../explain/index.ts'),
  ]);
  const kc = await connect(options);
  try {
    const ports = kubernetesPorts(kc);
    return await explainSubject(kc, key, options, {
      kind: 'PostgresCluster',
      read: () => ports.clusters.get(key),
      observe: (cluster) => observeCluster(ports, cluster),
      explain,
    });
  } catch (error) {
    throw clearly(error);
  }
}

/**
 * Reads a PostgresDatabase's world the way the operator does (`observeDatabase` over the Kubernetes ports:
 * the PostgresCluster it names, its endpoints, CNPG's roles, the CNPG Database, the connection Secrets as key
 * names and the values that are no secret). Nothing is granted, applied or written.
 */
export async function explainPostgresDatabase(key: ClusterKey, options: ExplainOptions): Promise<string> {
  const [{ kubernetesDatabasePorts, kubernetesPorts }, { observeDatabase }, { explainDatabase }] = await Promise.all([
    import('../kubernetes/index.ts'),
    import('../core/database/observe.ts'),
    import('../explain/index.ts'),
  ]);
  const kc = await connect(options);
  try {
    // The grants over SQL are the one port that would open a connection: explain has none to give it.
    const privileges = {
      grant: async () => {
        throw new ExplainError('explain never grants');
      },
      // Asked only while a deletion under Delete waits for its roles to be dropped. explain does not connect to
      // PostgreSQL (nor can it, from outside the cluster): it shows them as still there, the operator's view
      // until it has read them gone.
      existingRoles: async (_cluster: ClusterKey, roles: string[]) => roles,
      // Nor does it look into PostgreSQL for the database: it judges by what CNPG reports, and says so.
      inspect: async () => {
        throw new ExplainError('explain does not connect to PostgreSQL');
      },
    };
    const ports = kubernetesDatabasePorts(kc, kubernetesPorts(kc), { privileges });
    return await explainSubject(kc, key, options, {
      kind: 'PostgresDatabase',
      read: () => ports.databases.get(key),
      observe: (database) => observeDatabase(ports, database),
      explain: explainDatabase,
    });
  } catch (error) {
    throw clearly(error);
  }
}

/** The namespace of the kubeconfig's current context, as kubectl takes it when none is given. */
async function contextNamespace(options: ExplainOptions): Promise<string> {
  const kc = await connect(options);
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/** Explains the target and returns the rendering; throws an ExplainError the user can act on. */
export async function explainTarget(target: ExplainTarget, options: ExplainOptions): Promise<string> {
  const key = { namespace: target.namespace ?? (await contextNamespace(options)), name: target.name };
  return target.kind === 'PostgresDatabase' ? explainPostgresDatabase(key, options) : explainCluster(key, options);
}

/** What the command does with a target it parsed: explain and print (tests pass their own). */
export type ExplainRun = (target: ExplainTarget, options: ExplainOptions) => Promise<void>;

const explainAndPrint: ExplainRun = async (target, options) => {
  try {
    process.stdout.write(await explainTarget(target, options));
  } catch (error) {
    console.error(`pgfsm explain: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
};

export function registerExplain(program: Command, run: ExplainRun = explainAndPrint): Command {
  return program
    .command('explain')
    .description(
      'explain where a PostgresCluster or a PostgresDatabase is in its lifecycle, what blocks it, and what to do about it',
    )
    .usage('[options] <namespace>/<name> | <kind> <name> [-n <namespace>]')
    .argument(
      '<target>',
      'the PostgresCluster as <namespace>/<name>, or a kind: postgrescluster (pgc), postgresdatabase (pgdb)',
    )
    .argument('[name]', 'the name, after a kind')
    .addOption(new Option('-n, --namespace <namespace>', "the namespace (default: the kubeconfig context's)"))
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
    .action(async (first: string, name: string | undefined, options: ExplainOptions, command: Command) => {
      let target: ExplainTarget;
      try {
        target = resolveTarget(first, name, options.namespace);
      } catch (error) {
        if (!(error instanceof InvalidArgumentError)) throw error;
        // A usage error, as commander reports its own: `error: …`, exit code 1.
        return command.error(`error: ${error.message}`, { exitCode: 1, code: 'commander.invalidArgument' });
      }
      await run(target, options);
    });
}
