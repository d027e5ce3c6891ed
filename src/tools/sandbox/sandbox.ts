/**
 * `npm start`: pgfsm end to end on a laptop, with nothing installed but Node and Go. A local control plane
 * (or, only when asked and confirmed, the current kubeconfig context), our CRDs and RBAC, CloudNativePG's real
 * CRDs and admission webhooks with its controller simulated, the real operator (`pgfsm run`) as a process, the
 * examples applied (clusters and a PostgresDatabase on each), and their progress printed until they are Ready.
 * With CNPG simulated there is no PostgreSQL: the databases' grants are recorded, not run (recorded-grants.ts).
 * This module only composes: everything that talks to Kubernetes lives in src/operator/kubernetes/.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { PostgresCluster, PostgresDatabase } from '../../operator/api/schema.ts';
import type { Logger } from '../../operator/driver/logger.ts';
import { Informer } from '../../operator/kubernetes/informer.ts';
import { RESOURCES } from '../../operator/kubernetes/resources.ts';
import { connectCurrentContext, NotConfirmed, startLocalCluster, type Target } from './cluster.ts';
import { commandHandler, readCommands } from './commands.ts';
import { applyExamples, EXAMPLES_NAMESPACE, readExamples, withoutDatabases } from './examples.ts';
import { hints, simulatedConnections } from './hints.ts';
import { fileLogger, LEASE, startSandboxOperator } from './operator.ts';
import { createOutput, type Output, took } from './output.ts';
import { type ExampleKeys, Progress } from './progress.ts';
import { connectCommands, startRealNodeTarget } from './real-node.ts';
import { printReady, reportTimeout } from './report.ts';
import { SANDBOX_DELAYS, type SandboxSimulator, startSimulator } from './simulator.ts';
import { decideTarget } from './target.ts';
import { Teardown } from './teardown.ts';

export interface SandboxOptions {
  examplesDir: string;
  /** Exit 0 once every example is Ready (non-zero past `timeoutMs`) instead of staying up. */
  exitWhenReady: boolean;
  /** How long the examples may take to become Ready, once applied. */
  timeoutMs: number;
  useCurrentContext: boolean;
  context?: string;
  yes: boolean;
  metricsPort: number;
  /** The real node (src/tools/node): real CloudNativePG, PostgreSQL and PgBouncer, pgfsm's image as a Deployment. */
  real: boolean;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export async function runSandbox(options: SandboxOptions): Promise<never> {
  const out = createOutput();
  const { style } = out;
  const teardown = new Teardown();
  const started = Date.now();
  let stopping = false;
  let up = false;
  let firstSignalAt = 0;
  let closeCommands: (() => void) | undefined;

  const finish = async (code: number, why: string): Promise<never> => {
    if (!stopping) {
      stopping = true;
      closeCommands?.();
      out.line();
      out.step(`stopping (${why})`);
      const failed = await teardown.run(
        (done) => out.detail(done),
        (what, error) => out.warn(`${what}: ${message(error)}`),
      );
      out.line(
        failed.length > 0
          ? style.yellow('Sandbox stopped, with the errors above.')
          : 'Sandbox stopped; nothing left running.',
      );
      process.exit(failed.length > 0 && code === 0 ? 1 : code);
    }
    // A second caller (a signal during teardown) waits for the first one's exit.
    return new Promise<never>(() => {});
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (!stopping) {
      firstSignalAt = Date.now();
      void finish(up ? 0 : 130, signal);
      return;
    }
    // npm forwards the terminal's Ctrl-C to us, which the terminal already sent: one press, two signals.
    if (Date.now() - firstSignalAt < 1_000) return;
    out.warn(`${signal} again: killing everything now`);
    // The exit hooks kill the control plane's processes and remove the temp directories synchronously.
    process.exit(130);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);

  try {
    out.line(`${style.bold('pgfsm sandbox')}  the pgfsm operator end to end: the examples, from nothing to Ready`);
    out.line();
    // Read first: a broken examples directory fails before anything is started.
    const read = readExamples(options.examplesDir);
    if (options.real && options.useCurrentContext)
      throw new Error('--real and --use-current-context exclude each other');
    const decision = decideTarget({
      useCurrentContext: options.useCurrentContext,
      yes: options.yes,
      interactive: process.stdin.isTTY === true,
    });
    const realNode = options.real ? await startRealNodeTarget(out, teardown) : undefined;
    const target: Target =
      realNode ??
      (decision === 'local'
        ? await startLocalCluster(out, teardown)
        : await connectCurrentContext(out, teardown, decision, options.context));
    // A database's grants connect to its cluster's `-rw` Service, which only Pods reach: an operator on this
    // machine against the current context could not make them. Simulated, they are recorded; on the node, the
    // operator is a Pod.
    const grantsReachable = target.simulated || target.operatorInCluster === true;
    if (!grantsReachable && read.databases.length > 0) {
      out.detail(
        `not applying the PostgresDatabases (${read.databases.join(', ')}): their grants connect to each cluster's ` +
          '-rw Service, which the operator, on this machine, cannot reach',
      );
    }
    const examples = grantsReachable ? read : withoutDatabases(read);
    const { clusters, databases } = examples;
    const awaited: ExampleKeys = { clusters, databases };
    const dir = mkdtempSync(join(tmpdir(), 'pgfsm-sandbox-'));
    teardown.addDirectory(dir);
    const logFile = join(dir, 'operator.log');
    const sandboxLogFile = join(dir, 'sandbox.log');
    const log = fileLogger(sandboxLogFile);

    // Switchover notes go in the progress timeline, once there is one.
    let progress: Progress | undefined;
    const note = (text: string) => (progress ? progress.note(text) : out.detail(text));
    const simulator = target.simulated ? await startSimulatorStep(out, teardown, target, log, note) : undefined;

    let metricsUrl = '';
    let operatorLog = logFile;
    if (target.operatorInCluster) {
      out.step(`the pgfsm operator runs in the node: ${target.operatorIdentity}`);
      metricsUrl =
        '(on each pgfsm Pod, port 8080: npm run node -- kubectl get --raw /api/v1/namespaces/pgfsm-system/services/pgfsm-metrics:8080/proxy/metrics)';
      operatorLog = 'npm run node -- kubectl logs -n pgfsm-system deploy/pgfsm';
    } else {
      out.step('starting the pgfsm operator (pgfsm run, as its own process)');
      const operator = await startSandboxOperator({
        connection: target.operatorConnection,
        logFile,
        preferredPort: options.metricsPort,
        recordGrants: target.simulated,
      });
      teardown.add(`operator stopped; lease ${LEASE.namespace}/${LEASE.name} released`, () => operator.stop());
      metricsUrl = operator.metricsUrl;
      void operator.process.exited.then(({ code, signal }) => {
        if (stopping) return;
        out.warn(`the operator exited on its own (code ${code}, signal ${signal}); its log: ${logFile}`);
        void finish(1, 'the operator exited');
      });
      out.detail(`pgfsm run (pid ${operator.process.pid}), identity ${operator.identity}, ${target.operatorIdentity}`);
      out.detail(`lease ${LEASE.namespace}/${LEASE.name}, metrics ${metricsUrl}`);
      out.detail(`log ${logFile}`);
      if (target.simulated && databases.length > 0)
        out.detail("PostgreSQL is simulated: the PostgresDatabases' grants are recorded in that log, not run");
    }

    const width = Math.max(...[...clusters, ...databases].map((k) => k.length));
    progress = await watchProgress(target.admin, out, teardown, log, width);

    out.step(`applying ${relative(process.cwd(), options.examplesDir) || '.'}/`);
    await applyExamples(target.admin, examples, out, () => {
      if (!options.exitWhenReady) out.line(style.dim('  (type h and Enter for commands; Ctrl-C stops and cleans up)'));
      out.line();
      progress?.watch();
    });
    up = true;
    if (!options.exitWhenReady) {
      const onCommand = commandHandler(out, progress, simulator, () => void finish(0, 'quit'));
      closeCommands = readCommands(onCommand, EXAMPLES_NAMESPACE).close;
    }

    const ready = progress.untilReady(awaited).then(() => true);
    const timedOut = new Promise<false>((resolve) => setTimeout(() => resolve(false), options.timeoutMs).unref());
    if (!(await Promise.race([ready, timedOut]))) {
      if (options.exitWhenReady) {
        reportTimeout(out, progress, awaited, options.timeoutMs, [logFile, sandboxLogFile]);
        return await finish(1, 'timed out');
      }
      out.warn(`not all examples are Ready after ${took(options.timeoutMs)}; still running (t shows the tables)`);
      await ready;
    }
    printReady(out, progress, awaited, started);
    const readyDatabases = databases.map((key) => progress?.database(key));
    if (realNode) {
      for (const line of await connectCommands(realNode.node, clusters, readyDatabases, style)) out.line(line);
    } else if (simulator) {
      const connections = simulatedConnections(readyDatabases, target.kubeconfigPath, style);
      if (connections.length > 0) out.line();
      for (const line of connections) out.line(line);
    }
    if (options.exitWhenReady) return await finish(0, 'all examples are Ready');
    const context = {
      ...(target.kubeconfigPath ? { kubeconfig: target.kubeconfigPath } : {}),
      namespace: EXAMPLES_NAMESPACE,
      metricsUrl,
      operatorLog,
      simulated: simulator !== undefined,
    };
    for (const line of hints(context, style)) out.line(line);
    out.line();
    // Stay up: the operator, simulator and watches keep the process alive until a signal or `q`.
    return await new Promise<never>(() => {});
  } catch (error) {
    if (error instanceof NotConfirmed) {
      out.line(error.message);
      process.exit(error.exitCode);
    }
    if (!stopping) out.line(style.red(`\nsandbox: ${message(error)}`));
    return await finish(1, 'error');
  }
}

async function startSimulatorStep(
  out: Output,
  teardown: Teardown,
  target: Target,
  log: Logger,
  note: (text: string) => void,
): Promise<SandboxSimulator> {
  const d = SANDBOX_DELAYS;
  out.step(
    `starting the CNPG simulator (primary ${d.primaryMs / 1000} s, each replica ${d.replicaMs / 1000} s, ` +
      `poolers ${d.poolerMs / 1000} s)`,
  );
  const simulator = await startSimulator(
    target.admin,
    log,
    (namespace, name) => note(`CNPG switches over the primary of ${namespace}/${name}`),
    target.cnpgControllerNamespace ? [target.cnpgControllerNamespace] : [],
  );
  teardown.add('CNPG simulator stopped', () => simulator.stop());
  return simulator;
}

/** A watch of every PostgresCluster and PostgresDatabase, as anyone with kubectl would see them. */
async function watchProgress(
  kc: KubeConfig,
  out: Output,
  teardown: Teardown,
  log: Logger,
  width: number,
): Promise<Progress> {
  const clusters = new Informer<PostgresCluster>(kc, { resource: RESOURCES.clusters, log });
  const databases = new Informer<PostgresDatabase>(kc, { resource: RESOURCES.databases, log });
  for (const informer of [clusters, databases]) {
    informer.start();
    teardown.add('', () => informer.stop());
  }
  const deadline = Date.now() + 30_000;
  while (!clusters.synced || !databases.synced) {
    if (Date.now() > deadline)
      throw new Error('could not list PostgresClusters and PostgresDatabases (are the CRDs installed?)');
    await new Promise((r) => setTimeout(r, 50));
  }
  const progress = new Progress({ clusters, databases }, out, width);
  teardown.add('', () => progress.stop());
  return progress;
}
