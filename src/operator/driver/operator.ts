/**
 * The running operator: caches, controller, leader election and the probe/metrics server, started and
 * stopped in the right order. Everything that talks to Kubernetes comes in through interfaces (watch
 * sources, leadership, ports), so this module runs unchanged against fakes.
 */
import type { DatabasePorts } from '../core/database/ports.ts';
import type { Ports } from '../core/ports.ts';
import type { Settings } from '../domain/observation.ts';
import { cacheReadingPorts } from './cache-reads.ts';
import { ClassProtection } from './class-protection.ts';
import { Controller } from './controller.ts';
import { fencedDatabasePorts, fencedPorts } from './fenced-ports.ts';
import type { Logger } from './logger.ts';
import { OperatorMetrics } from './metrics.ts';
import { type ProcessPasses, processPasses } from './passes.ts';
import { type ProbeServer, sourceChecks, startServer } from './server.ts';
import { allSources, type Leadership, type WatchSources } from './sources.ts';

export interface OperatorOptions {
  sources: WatchSources;
  ports: Ports;
  /** The ports of PostgresDatabase passes; without them PostgresDatabases are not reconciled. */
  databasePorts?: DatabasePorts;
  settings: Settings;
  leadership: Leadership;
  workers: number;
  /** Listen address of /healthz, /readyz and /metrics, e.g. `:8080`. */
  metricsAddress: string;
  logger: Logger;
  metrics?: OperatorMetrics;
  resyncPeriodMs?: number;
  /** After this long without complete caches, say which ones are missing (keeps waiting). */
  syncWarningMs?: number;
}

export interface RunningOperator {
  readonly controller: Controller;
  readonly metrics: OperatorMetrics;
  readonly server: ProbeServer;
  /** The passes' memory and the Events being sent after their pass. */
  readonly passes: ProcessPasses;
  /** Graceful stop: no new work, in-flight passes finish, lease released, caches and server closed. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves true once every cache is synced, false if `cancelled()` turns true first. */
async function waitForSync(
  sources: WatchSources,
  cancelled: () => boolean,
  log: Logger,
  warnAfterMs: number,
): Promise<boolean> {
  const started = Date.now();
  let warned = false;
  for (;;) {
    if (cancelled()) return false;
    const missing = allSources(sources).filter((s) => !s.synced);
    if (missing.length === 0) return true;
    if (!warned && Date.now() - started > warnAfterMs) {
      warned = true;
      log.warn({ resources: missing.map((s) => s.resource) }, 'caches not synced yet; workers wait for them');
    }
    await sleep(100);
  }
}

export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const { sources, logger: log, leadership } = options;
  const metrics = options.metrics ?? new OperatorMetrics();
  metrics.observeSources(sources.clusters, allSources(sources));
  // A pass reads its world from the caches the watches fill (cache-reads.ts); writes go to the API.
  // Every write first checks that this replica still holds the lease, by its own clock (fenced-ports.ts).
  // The database's writes go through the same reads, so the cluster's pass knows them at once (cache-reads.ts).
  const fencedDatabases =
    options.databasePorts && fencedDatabasePorts(options.databasePorts, options.ports, leadership);
  const { ports, databasePorts } = cacheReadingPorts(fencedPorts(options.ports, leadership), sources, fencedDatabases);
  // What a pass could not announce and the Events it handed over to be sent: in this process's memory.
  const passes = processPasses(ports, options.settings, databasePorts ? { databasePorts } : {});
  // The finalizer of each class in use (class-protection.ts), on keys of its own in the same queue.
  const classes = new ClassProtection({ sources, ports, logger: log, settings: options.settings });
  const controller = new Controller({
    sources,
    reconcile: passes.pass,
    workers: options.workers,
    logger: log,
    metrics,
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    pendingKeys: () => passes.unsentKeys(),
    ...(passes.databasePass ? { reconcileDatabase: passes.databasePass } : {}),
    reconcileClass: (name) => classes.pass(name),
  });
  passes.attach(controller);
  controller.watch();
  for (const source of allSources(sources)) source.start();
  const server = await startServer({
    address: options.metricsAddress,
    registry: metrics.registry,
    readiness: sourceChecks(allSources(sources)),
  });
  log.info({ address: options.metricsAddress, port: server.port }, 'serving /healthz, /readyz and /metrics');

  let stopping = false;
  // Counts leadership changes, so a wait for sync started by an earlier term cannot start workers.
  let term = 0;
  leadership.start({
    onStartedLeading: (continued) => {
      const mine = ++term;
      // Another replica led since this one last did: what this one could not say then would now come after
      // what that one said (core/announcements.ts).
      if (!continued) passes.forgetUnsent();
      metrics.setLeader(true);
      log.info({ identity: leadership.identity }, 'started leading');
      void waitForSync(sources, () => stopping || term !== mine, log, options.syncWarningMs ?? 120_000).then(
        (synced) => {
          if (synced) controller.startWorkers();
        },
      );
    },
    onStoppedLeading: () => {
      term++;
      metrics.setLeader(false);
      log.info({ identity: leadership.identity }, 'stopped leading');
      void controller.stopWorkers();
    },
  });

  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      stopping = true;
      log.info('shutting down: finishing reconciles in flight');
      await controller.shutDown();
      // The Events the last passes handed over (bounded: stopOnSignals exits after its grace period anyway).
      await passes.delivery.idle();
      // Only now: a lease released while passes still write would let another replica race them.
      await leadership.stop();
      await Promise.all(allSources(sources).map((s) => s.stop()));
      await server.close();
      log.info('stopped');
    })();
    return stopped;
  };
  return { controller, metrics, server, passes, stop };
}

/**
 * SIGTERM/SIGINT stop the operator gracefully; past `graceMs`, or on a second signal, the process exits
 * at once (Kubernetes sends SIGKILL after terminationGracePeriodSeconds anyway).
 */
export function stopOnSignals(operator: Pick<RunningOperator, 'stop'>, log: Logger, graceMs = 25_000): void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    received = true;
    log.info({ signal }, 'signal received');
    const timer = setTimeout(() => {
      log.error({ graceMs }, 'graceful shutdown took too long: exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    operator.stop().then(
      () => {
        clearTimeout(timer);
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/**
 * The process's last resort for an error nothing else handled: an 'error' event without a listener (an
 * uncaught exception) or a rejected promise nobody awaited. Without it, Node ends the process on either.
 *
 * `survivable` errors (`pgfsm run` passes the broken or timed-out connections to the API server) are logged
 * and the process keeps running. Such an error only cut short the emit or the promise that carried it, and
 * nothing was waiting on either (else it would have been handled there): at worst a watch stops delivering,
 * which its informer notices and relists. A crash would cost far more: every cache listed again,
 * a Lease to win again, and after a few crashes in a row Kubernetes' CrashLoopBackOff holds the Pod down for
 * minutes, the very moments the network is flaky (issue 28: 17 crashes in 280 s under injected faults).
 * Anything else is a bug whose damage nobody can bound: it is logged and the process exits non-zero, so
 * that Kubernetes restarts the Pod from a clean state.
 */
export function handleStrayErrors(
  log: Logger,
  survivable: (error: unknown) => boolean,
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  const onStray = (origin: 'uncaughtException' | 'unhandledRejection') => (error: unknown) => {
    if (survivable(error)) {
      log.warn({ err: error, origin }, 'stray network error: carrying on');
      return;
    }
    log.fatal({ err: error, origin }, 'unhandled error: exiting');
    exit(1);
  };
  process.on('uncaughtException', onStray('uncaughtException'));
  process.on('unhandledRejection', onStray('unhandledRejection'));
}
