/**
 * `npm start -- --real`: the sandbox on the real node (src/tools/node) instead of a control plane with CNPG
 * simulated. CloudNativePG's real operator runs PostgreSQL and PgBouncer in Pods, pgfsm runs as the Deployment
 * `kubectl apply -k` installs (its own image, two replicas), and the examples come up on real databases. At the
 * end it prints psql commands that work as printed: per cluster one as its superuser, per PostgresDatabase one as
 * the application, given nothing but its Secret's `uri`. The password is read from the Secret by the command
 * itself, never shown.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import type { PostgresDatabase } from '../../operator/api/schema.ts';
import { ensureNodeBinaries } from '../control-plane/build.ts';
import { silentLog } from '../control-plane/log.ts';
import { startRealNode, stopRealNode } from '../node/index.ts';
import { PGFSM_DEPLOYMENT, PGFSM_NAMESPACE } from '../node/install.ts';
import { NETNS_PATH } from '../node/layout.ts';
import { attachNode, nodeIsUp, type RealNode } from '../node/node.ts';
import type { Target } from './cluster.ts';
import { ownerSecretOf, uriCommand } from './hints.ts';
import type { Output, Style } from './output.ts';
import { keyOf } from './progress.ts';
import type { Teardown } from './teardown.ts';

/**
 * The real node: the one `npm run node -- start` left running, with pgfsm installed, is used as it is (and left
 * running); otherwise one is started for the sandbox and stopped with it.
 */
export async function startRealNodeTarget(out: Output, teardown: Teardown): Promise<Target & { node: RealNode }> {
  let node = await runningNode();
  if (node) {
    out.step(`using the real node that runs in ${NETNS_PATH} already (npm run node -- stop ends it)`);
  } else {
    out.step(
      `starting a real node in ${NETNS_PATH} (kubelet, containerd, CloudNativePG's operator, pgfsm's image; ` +
        'the first time builds them: minutes)',
    );
    const world = await startRealNode({ log: (line) => out.detail(line) });
    teardown.add('real node stopped: no process, mount, namespace or cgroup left', () => stopRealNode(world));
    node = world.node;
  }
  const attached = node;
  teardown.add('', () => attached.detach());
  // For kubectl on this machine while the sandbox runs: the API server through the sandbox's gateway port.
  const kubeconfigPath = join(node.dirs.run, 'sandbox.kubeconfig');
  writeFileSync(kubeconfigPath, node.kubeConfig.exportConfig(), { mode: 0o600 });
  return {
    kubeconfigPath,
    admin: node.kubeConfig,
    operatorConnection: [],
    operatorIdentity: `the ${PGFSM_DEPLOYMENT} Deployment in ${PGFSM_NAMESPACE} (two replicas, one leading)`,
    simulated: false,
    operatorInCluster: true,
    node,
  };
}

/** A node that is up with pgfsm rolled out, or undefined. */
async function runningNode(): Promise<RealNode | undefined> {
  if (!nodeIsUp()) return undefined;
  const binaries = await ensureNodeBinaries({ log: silentLog });
  const node = await attachNode({ programs: binaries });
  try {
    const apps = node.kubeConfig.makeApiClient(AppsV1Api);
    const pgfsm = await apps.readNamespacedDeployment({ name: PGFSM_DEPLOYMENT, namespace: PGFSM_NAMESPACE });
    if ((pgfsm.status?.availableReplicas ?? 0) > 0) return node;
  } catch {
    // not answering, or pgfsm not installed: start afresh
  }
  await node.detach();
  return undefined;
}

/** The kubectl of `npm run node`: in the node's network namespace, with its admin kubeconfig. */
const NODE_KUBECTL = 'npm run -s node -- kubectl';

/**
 * How to reach the examples from this machine, through the node's network namespace: a psql line per cluster as
 * its superuser, then one per PostgresDatabase as its application. Each is run once, exactly as printed.
 */
export async function connectCommands(
  node: RealNode,
  clusters: readonly string[],
  databases: ReadonlyArray<PostgresDatabase | undefined>,
  style: Style,
): Promise<string[]> {
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  // psql in the namespace uses this machine's resolver, which knows nothing of cluster.local: the Service's
  // ClusterIP is what it can reach.
  const clusterIp = async (namespace: string, service: string) =>
    (await core.readNamespacedService({ name: service, namespace })).spec?.clusterIP ?? '';
  const lines = [
    style.bold("Connect (psql runs inside the node's network namespace; the password comes from the Secret):"),
    '',
  ];
  for (const key of clusters) {
    const [namespace = '', cluster = ''] = key.split('/');
    const endpoints = (await core.readNamespacedConfigMap({ name: `${cluster}-endpoints`, namespace })).data ?? {};
    const host = endpoints.CLUSTER_POOLER_RW_ENDPOINT ?? endpoints.CLUSTER_RW_ENDPOINT ?? '';
    const service = host.split('.')[0] ?? '';
    const ip = await clusterIp(namespace, service);
    const secret = endpoints.SUPER_USER_SECRET_REF ?? `${cluster}-superuser`;
    const user = endpoints.SUPER_USER_NAME ?? 'postgres';
    const command = psqlCommand({ namespace, secret, user, ip, sql: 'SELECT version()' });
    // Run exactly as printed, once, so that what the reader copies is known to work.
    const answer = await runShell(command).then(
      (out) => /PostgreSQL [^\s,]+/.exec(out)?.[0] ?? out.trim().split('\n')[0],
      (error: Error) => `FAILED: ${error.message.split('\n')[0]}`,
    );
    lines.push(
      style.dim(`  # ${namespace}/${cluster} through ${service} (${host}); run once here, it answered: ${answer}`),
      `  ${command}`,
      '',
    );
  }
  const present = databases.filter((d): d is PostgresDatabase => d !== undefined);
  if (present.length === 0) return lines;
  lines.push(
    style.bold(
      "As the application, with nothing but its Secret's uri (user, password, host, port, database); PGHOSTADDR " +
        "gives psql the address of the host the uri names, the Service's ClusterIP:",
    ),
    '',
  );
  for (const database of present) {
    const { namespace } = database.metadata;
    const host = database.status?.endpoint?.host ?? '';
    const service = host.split('.')[0] ?? '';
    const ip = await clusterIp(namespace, service);
    const secret = ownerSecretOf(database);
    const command = uriPsqlCommand({ namespace, secret, ip, sql: 'SELECT current_user, current_database()' });
    const answer = await untilAnswered(command).then(
      (out) => {
        const row = resultRow(out);
        return row ? `connected as ${row[0]} to database ${row[1]}` : out.trim().split('\n')[0];
      },
      (error: Error) => `FAILED: ${error.message.split('\n')[0]}`,
    );
    lines.push(
      style.dim(
        `  # ${keyOf(database)}: database ${database.spec.name} as ${database.spec.owner}, Secret ${namespace}/${secret}, ` +
          `through ${service} (${host}); run once here, it answered: ${answer}`,
      ),
      `  ${command}`,
      '',
    );
  }
  return lines;
}

function runShell(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', command], { timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(stderr.trim() || error.message)) : resolve(stdout),
    );
  });
}

/**
 * The first connection as a role made moments ago, through a pooler or a Service that may still be catching up:
 * a few tries, a few seconds apart, before calling it failed (the command printed is the same either way).
 */
async function untilAnswered(command: string, tries = 5, pauseMs = 3_000): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runShell(command);
    } catch (error) {
      if (attempt >= tries) throw error;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

/** The cells of psql's one result row (aligned output: the line under the dashes). */
export function resultRow(output: string): string[] | undefined {
  const lines = output.split('\n');
  const rule = lines.findIndex((line) => /^-+(\+-+)*$/.test(line.trim()));
  const row = rule < 0 ? undefined : lines[rule + 1];
  return row?.split('|').map((cell) => cell.trim());
}

export function psqlCommand(o: { namespace: string; secret: string; user: string; ip: string; sql: string }): string {
  const password = `${NODE_KUBECTL} get secret -n ${o.namespace} ${o.secret} -o jsonpath='{.data.password}' | base64 -d`;
  return `PGPASSWORD="$(${password})" nsenter --net=${NETNS_PATH} psql -h ${o.ip} -U ${o.user} -d postgres -c '${o.sql}'`;
}

/**
 * psql given the Secret's `uri` alone. The uri names the host by its cluster.local name, which this machine's
 * resolver cannot look up; PGHOSTADDR, which libpq uses whenever the connection string has no `hostaddr`, gives
 * the address to connect to instead, and the uri supplies everything else.
 */
export function uriPsqlCommand(o: { namespace: string; secret: string; ip: string; sql: string }): string {
  return `PGHOSTADDR=${o.ip} nsenter --net=${NETNS_PATH} psql "$(${uriCommand(NODE_KUBECTL, o.namespace, o.secret)})" -c '${o.sql}'`;
}
