/**
 * `npm run bench:node` (and the last part of `npm run bench`): pgfsm's overhead on top of CloudNativePG on the
 * real node. Per repetition, one after the other on the same node:
 *   - pgfsm: a PostgresCluster (1 instance, the pooler on) created → the first `SELECT 1` answered through its
 *     rw pooler, with the superuser Secret pgfsm publishes;
 *   - CloudNativePG alone: the equivalent CNPG Cluster and rw Pooler created → the first `SELECT 1` answered
 *     through that Pooler, with the app Secret CNPG publishes.
 * The client knows the Service name from the start and tries every 250 ms as soon as the Secret exists, so the
 * clock stops at the first moment an application could have had an answer. The order alternates between
 * repetitions. Then the same for a point-in-time restore from one archive (restore.ts). Median of 3 (`--reps N`).
 * Writes its section of bench/results.md (`<!-- node:… -->`).
 * Needs root, like the e2e suite: it starts the node (src/tools/node) and stops it at the end.
 */
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { POSTGRES_REF as POSTGRES_IMAGE } from '../src/tools/node/images/recipes.ts';
import { startRealNode, stopRealNode } from '../src/tools/node/index.ts';
import type { RealNode } from '../src/tools/node/node.ts';
import { firstAnswer } from './first-answer.ts';
import { benchRestore, type RestoreBench } from './restore.ts';
import { writeSection } from './results-section.ts';
import { formatSpread, spread } from './stats.ts';

export interface NodeBenchOptions {
  reps: number;
  results: boolean;
}

export function parseNodeBenchArgs(argv: string[]): NodeBenchOptions {
  const at = argv.indexOf('--reps');
  const reps = at >= 0 ? Number(argv[at + 1]) : 3;
  if (!Number.isInteger(reps) || reps < 1) throw new Error('--reps needs a positive integer');
  return { reps, results: !argv.includes('--no-results') };
}

async function viaPgfsm(node: RealNode, rep: number): Promise<number> {
  const custom = node.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  const namespace = `bench-pgfsm-${rep}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const began = Date.now();
  await custom.createNamespacedCustomObject({
    group: 'pgfsm.io',
    version: 'v1alpha1',
    namespace,
    plural: 'postgresclusters',
    body: {
      apiVersion: 'pgfsm.io/v1alpha1',
      kind: 'PostgresCluster',
      metadata: { name: 'db', namespace },
      spec: { class: 'bench', connectionPoolerEnabled: true, clusterDeletionPolicy: 'Delete' },
    },
  });
  const seconds = await firstAnswer(
    node,
    `db-pooler-rw.${namespace}.svc.cluster.local`,
    { namespace, name: 'db-superuser' },
    began,
  );
  await core.deleteNamespace({ name: namespace });
  return seconds;
}

async function viaCnpg(node: RealNode, rep: number): Promise<number> {
  const custom = node.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  const namespace = `bench-cnpg-${rep}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const cnpg = { group: 'postgresql.cnpg.io', version: 'v1', namespace };
  const began = Date.now();
  await custom.createNamespacedCustomObject({
    ...cnpg,
    plural: 'clusters',
    body: {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'db', namespace },
      spec: { instances: 1, imageName: POSTGRES_IMAGE, storage: { size: '1Gi' } },
    },
  });
  await custom.createNamespacedCustomObject({
    ...cnpg,
    plural: 'poolers',
    body: {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Pooler',
      metadata: { name: 'db-pooler-rw', namespace },
      spec: { cluster: { name: 'db' }, instances: 1, type: 'rw', pgbouncer: { poolMode: 'transaction' } },
    },
  });
  const seconds = await firstAnswer(
    node,
    `db-pooler-rw.${namespace}.svc.cluster.local`,
    { namespace, name: 'db-app' },
    began,
  );
  await core.deleteNamespace({ name: namespace });
  return seconds;
}

function restoreSection(restore: RestoreBench, reps: number): string[] {
  const pgfsm = spread(restore.pgfsm);
  const cnpg = spread(restore.cnpg);
  const seconds = (v: number) => `${v.toFixed(1)} s`;
  return [
    '',
    '### Point-in-time restore: apply → first query that sees the rows',
    '',
    `- the source: a pgfsm cluster of a class with a backup policy, ${restore.rows} rows written after its base backup and their WAL archived; Barman Cloud Plugin ${restore.stack.binaries.versions.barmanCloudPlugin} (barman-cli-cloud ${restore.stack.barmanVersion}), versitygw ${restore.stack.binaries.versions.versitygw} in the node's namespace`,
    '- each restore: one instance from the same archive to its latest point, archiving again under a server name of its own; the client asks `SELECT count(*) FROM t` through the rw Service every 250 ms with the new superuser Secret until it sees every row',
    `- cells: median (min–max) of ${reps}`,
    '',
    '| what | apply → first query holding the rows |',
    '|---|---|',
    `| PostgresCluster with \`restore\` (pgfsm → CloudNativePG) | ${formatSpread(pgfsm, seconds)} |`,
    `| ObjectStores + CNPG Cluster with \`bootstrap.recovery\`, by hand | ${formatSpread(cnpg, seconds)} |`,
    `| pgfsm's overhead (difference of the medians) | ${seconds(pgfsm.median - cnpg.median)} |`,
  ];
}

export async function runRealNodeBench(options: NodeBenchOptions, command: string): Promise<void> {
  const log = (line: string) => process.stderr.write(`[bench node] ${line}\n`);
  const load = loadavg();
  const world = await startRealNode({ log });
  const pgfsmTimes: number[] = [];
  const cnpgTimes: number[] = [];
  let restore: RestoreBench | undefined;
  try {
    const custom = world.node.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      plural: 'postgresclusterclasses',
      body: {
        apiVersion: 'pgfsm.io/v1alpha1',
        kind: 'PostgresClusterClass',
        metadata: { name: 'bench' },
        spec: {
          provisioner: 'postgresql.cnpg.io',
          config: { instances: 1, storage: '1Gi', postgresVersion: '18' },
          cnpg: { connectionPooler: { instances: 1, mode: 'transaction' } },
        },
      },
    });
    for (let rep = 1; rep <= options.reps; rep++) {
      const order = rep % 2 === 1 ? (['pgfsm', 'cnpg'] as const) : (['cnpg', 'pgfsm'] as const);
      for (const which of order) {
        const seconds = which === 'pgfsm' ? await viaPgfsm(world.node, rep) : await viaCnpg(world.node, rep);
        (which === 'pgfsm' ? pgfsmTimes : cnpgTimes).push(seconds);
        log(`rep ${rep}: ${which} ${seconds.toFixed(1)}s to the first query through the pooler`);
      }
    }
    restore = await benchRestore(world.node, options.reps, log);
  } finally {
    await stopRealNode(world);
  }
  const pgfsm = spread(pgfsmTimes);
  const cnpg = spread(cnpgTimes);
  const overhead = pgfsm.median - cnpg.median;
  const seconds = (v: number) => `${v.toFixed(1)} s`;
  const body = [
    '## pgfsm on the real node: apply → first query through the pooler',
    '',
    `Written by the last run of \`${command}\` on ${new Date().toISOString()}.`,
    '',
    `- machine: ${cpus().length} cores (\`os.cpus().length\`), ${cpus()[0]?.model.trim() ?? 'unknown CPU'}; Node ${process.version}; load average at the start ${load.map((l) => l.toFixed(1)).join(' / ')}`,
    `- node: kubelet ${world.binaries.versions.kubelet}, containerd from Debian, CloudNativePG ${world.binaries.versions.cnpg} (its operator as a Deployment), PostgreSQL 18 (and 17) and PgBouncer images built from Debian; pgfsm's image ${world.images.pgfsm.ref}, two replicas`,
    '- each: one instance, 1 Gi, one rw PgBouncer Pod in transaction mode; a client that knows the Service name tries `SELECT 1` every 250 ms from the create on; the two kinds alternate in order',
    `- cells: median (min–max) of ${options.reps}`,
    '',
    '| what | apply → first query through the pooler |',
    '|---|---|',
    `| PostgresCluster (pgfsm → CloudNativePG) | ${formatSpread(pgfsm, seconds)} |`,
    `| CNPG Cluster + Pooler applied directly | ${formatSpread(cnpg, seconds)} |`,
    `| pgfsm's overhead (difference of the medians; goal ≤ 2 s) | ${seconds(overhead)} |`,
    ...(restore ? restoreSection(restore, options.reps) : []),
  ].join('\n');
  process.stdout.write(`\n${body}\n`);
  if (options.results) {
    writeSection(join(dirname(fileURLToPath(import.meta.url)), 'results.md'), 'node', body);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = process.argv.slice(2);
  await runRealNodeBench(parseNodeBenchArgs(argv), `npm run bench:node${argv.length ? ` -- ${argv.join(' ')}` : ''}`);
}
