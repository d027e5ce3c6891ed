/**
 * `pgfsm run`: the operator against a real cluster. This is the composition root: it builds the
 * Kubernetes adapters (informers, lease, ports) and hands them, as interfaces, to the driver.
 * Every option can also come from an environment variable, as a Deployment would set it.
 */
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import type { Settings } from '../domain/observation.ts';
import { type BuildInfo, buildInfo } from '../driver/build-info.ts';
import type { Logger } from '../driver/logger.ts';
import type { Leadership } from '../driver/sources.ts';
import { parseNamespaceList } from '../kubernetes/multi-namespace.ts';
import { duration, envOption as option, wholeNumber } from './arguments.ts';

export interface RunOptions {
  kubeconfig?: string;
  context?: string;
  /** `a,b`, checked when parsed (namespaceList); absent or empty: all namespaces. */
  namespace?: string;
  workers: number;
  requeueDelay: number;
  progressDeadline: number;
  clusterDomain: string;
  metricsAddr: string;
  leaderElect: boolean;
  leaseNamespace?: string;
  leaseName: string;
  /** Lease timings in ms (client-go's names and defaults): see the high-availability docs. */
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  identity?: string;
  logLevel: string;
}

const bool = (value: string | boolean) => {
  if (value === true || value === 'true' || value === '1') return true;
  if (value === false || value === 'false' || value === '0') return false;
  throw new InvalidArgumentError('must be true or false');
};

/**
 * `--namespace a,b`: rejected at parse time with a message naming the bad entry, so that a typo stops
 * the process before it starts informers that would fail with 403 or watch the wrong namespace. The
 * value stays the string as given; watchedNamespaces turns it into the list.
 */
const namespaceList = (value: string): string => {
  try {
    parseNamespaceList(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
};

/** The namespaces to watch; undefined for all. */
export const watchedNamespaces = (options: Pick<RunOptions, 'namespace'>): string[] | undefined =>
  parseNamespaceList(options.namespace);

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The lease lives with the operator: explicit, else the pod's own namespace, else the first watched one. */
export function leaseNamespaceOf(options: Pick<RunOptions, 'leaseNamespace' | 'namespace'>): string {
  if (options.leaseNamespace) return options.leaseNamespace;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  } catch {
    return watchedNamespaces(options)?.[0] ?? 'default';
  }
}

export const settingsOf = (options: RunOptions): Settings => ({
  clusterDomain: options.clusterDomain,
  requeueDelayMs: options.requeueDelay,
  progressDeadlineMs: options.progressDeadline,
});

/**
 * The fields of `pgfsm run`'s first log line ("starting pgfsm"): what runs (pgfsm's, Node's and XState's
 * versions, as `pgfsm_build_info` exports them) and against what.
 */
export function startingFields(
  options: RunOptions,
  at: { server: string | undefined; identity: string; leaseNamespace: string },
  build: BuildInfo = buildInfo(),
): Record<string, unknown> {
  return {
    version: build.version,
    nodeVersion: build.nodeVersion,
    xstate: build.xstate,
    server: at.server,
    namespace: watchedNamespaces(options)?.join(',') ?? '(all)',
    workers: options.workers,
    identity: at.identity,
    leaderElect: options.leaderElect,
    lease: options.leaderElect ? `${at.leaseNamespace}/${options.leaseName}` : undefined,
  };
}

/**
 * Installs `pgfsm run`'s last resort for errors nothing handled (handleStrayErrors says why): the process
 * carries on after a failure of the connection to the API server, the failures errors.ts calls transient (a
 * reset, refused or aborted connection, a timeout), and exits on anything else.
 */
export async function installLastResort(log: Logger): Promise<void> {
  const [{ handleStrayErrors }, { toPortError }, { isTransient }] = await Promise.all([
    import('../driver/operator.ts'),
    import('../kubernetes/errors.ts'),
    import('../core/errors.ts'),
  ]);
  handleStrayErrors(log, (error) => isTransient(toPortError(error, { what: 'stray' }).errorClass));
}

/**
 * Builds the adapters and starts the operator; resolves once it runs (signals stop it). Everything is
 * imported here, not at the top, so that other pgfsm commands start without loading the client.
 */
export async function runOperator(options: RunOptions): Promise<void> {
  const [
    { loadKubeConfig, kubernetesPorts, kubernetesDatabasePorts },
    { defaultIdentity, LeaseElector },
    { createWatchSources },
    { fenceWrites },
  ] = await Promise.all([
    import('../kubernetes/index.ts'),
    import('../kubernetes/leader.ts'),
    import('../kubernetes/watch-sources.ts'),
    import('../kubernetes/fence.ts'),
  ]);
  const [{ createLogger }, { startOperator, stopOnSignals }, { SoleLeader }] = await Promise.all([
    import('../driver/logger.ts'),
    import('../driver/operator.ts'),
    import('../driver/sources.ts'),
  ]);
  const log = createLogger({ level: options.logLevel });
  await installLastResort(log);
  const kc = loadKubeConfig({
    ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
    ...(options.context ? { context: options.context } : {}),
  });
  const identity = options.identity ?? defaultIdentity();
  const leaseNamespace = leaseNamespaceOf(options);
  const namespaces = watchedNamespaces(options);
  log.info(
    startingFields(options, { server: kc.getCurrentCluster()?.server, identity, leaseNamespace }),
    'starting pgfsm',
  );
  const leadership: Leadership = options.leaderElect
    ? new LeaseElector(kc, {
        namespace: leaseNamespace,
        name: options.leaseName,
        identity,
        leaseDurationMs: options.leaseDuration,
        renewDeadlineMs: options.renewDeadline,
        retryPeriodMs: options.retryPeriod,
        log,
      })
    : new SoleLeader(identity);
  // Each write request asks the Lease right before it leaves, even one that follows a read (fence.ts).
  if (options.leaderElect) fenceWrites(kc, leadership);
  // Events name this replica, so that two replicas' events are told apart.
  const ports = kubernetesPorts(kc, { reportingInstance: identity, ...(namespaces ? { namespaces } : {}) });
  const operator = await startOperator({
    sources: createWatchSources(kc, { ...(namespaces ? { namespaces } : {}), log }),
    ports,
    // PostgresDatabases: their grants connect to each cluster's `-rw` Service, as a Pod in the cluster can.
    databasePorts: kubernetesDatabasePorts(kc, ports),
    settings: settingsOf(options),
    leadership,
    workers: options.workers,
    metricsAddress: options.metricsAddr,
    logger: log,
  });
  stopOnSignals(operator, log);
}

export function registerRun(program: Command): Command {
  return program
    .command('run')
    .description('run the operator against the Kubernetes cluster of the current kubeconfig or service account')
    .addOption(
      option(
        '--kubeconfig <path>',
        'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)',
        'PGFSM_KUBECONFIG',
      ),
    )
    .addOption(option('--context <name>', 'kubeconfig context to use', 'PGFSM_CONTEXT'))
    .addOption(
      option(
        '--namespace <names>',
        'watch only these namespaces, comma-separated: a,b (default: all)',
        'PGFSM_NAMESPACE',
      ).argParser(namespaceList),
    )
    .addOption(option('--workers <n>', 'concurrent reconciles', 'PGFSM_WORKERS').argParser(wholeNumber(1)).default(2))
    .addOption(
      option('--requeue-delay <duration>', 'wait before looking again at a waiting cluster', 'PGFSM_REQUEUE_DELAY')
        .argParser(duration)
        .default(15_000, '15s'),
    )
    .addOption(
      option('--progress-deadline <duration>', 'how long a step may wait before Stalled', 'PGFSM_PROGRESS_DEADLINE')
        .argParser(duration)
        .default(15 * 60_000, '15m'),
    )
    .addOption(
      option('--cluster-domain <domain>', 'DNS domain of published endpoints', 'PGFSM_CLUSTER_DOMAIN').default(
        'cluster.local',
      ),
    )
    .addOption(
      option('--metrics-addr <address>', 'listen address of /metrics, /healthz, /readyz', 'PGFSM_METRICS_ADDR').default(
        ':8080',
      ),
    )
    .addOption(
      option('--leader-elect [enabled]', 'elect a leader through a Lease (true|false)', 'PGFSM_LEADER_ELECT')
        .argParser(bool)
        .default(true),
    )
    .addOption(
      option(
        '--lease-namespace <name>',
        'namespace of the Lease (default: the pod namespace, else the first --namespace, else default)',
        'PGFSM_LEASE_NAMESPACE',
      ),
    )
    .addOption(option('--lease-name <name>', 'name of the Lease', 'PGFSM_LEASE_NAME').default('pgfsm-leader'))
    .addOption(
      option('--lease-duration <duration>', 'how long a standby waits on an unrenewed Lease', 'PGFSM_LEASE_DURATION')
        .argParser(duration)
        .default(15_000, '15s'),
    )
    .addOption(
      option(
        '--renew-deadline <duration>',
        'the leader stops writing when it has not renewed for this long (below --lease-duration)',
        'PGFSM_RENEW_DEADLINE',
      )
        .argParser(duration)
        .default(10_000, '10s'),
    )
    .addOption(
      option('--retry-period <duration>', 'how often the Lease is renewed or tried', 'PGFSM_RETRY_PERIOD')
        .argParser(duration)
        .default(2_000, '2s'),
    )
    .addOption(
      option('--identity <id>', 'this replica in the Lease and in Events (default: hostname-pid)', 'PGFSM_IDENTITY'),
    )
    .addOption(option('--log-level <level>', 'trace, debug, info, warn or error', 'PGFSM_LOG_LEVEL').default('info'))
    .action(async (options: RunOptions) => {
      try {
        await runOperator(options);
      } catch (error) {
        // E.g. no kubeconfig, or the metrics port taken. Exit at once: started informers would keep
        // a half-started process alive.
        console.error(`pgfsm run: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      }
    });
}
