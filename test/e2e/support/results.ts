/**
 * What the e2e files saw, for the one summary line the global setup prints: each file appends a record per
 * cluster it made (test files run in worker processes, so a file is the channel).
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { nodeBaseDir } from '../../../src/tools/node/layout.ts';

export interface ClusterResult {
  cluster: string;
  ready: boolean;
  /** A query answered through PgBouncer (the pooler's Service), checked with `SHOW pool_mode` over the same route. */
  queriedThroughPooler?: boolean;
  /** `SHOW server_version` */
  serverVersion?: string;
}

const resultsFile = () => join(nodeBaseDir(), 'e2e-results.jsonl');
const linesFile = () => join(nodeBaseDir(), 'e2e-lines.txt');

export function clearResults(): void {
  rmSync(resultsFile(), { force: true });
  rmSync(linesFile(), { force: true });
}

/** A suite's own one-line summary (e.g. `second team: …`), printed after the node's summary line. */
export function recordLine(line: string): void {
  mkdirSync(dirname(linesFile()), { recursive: true });
  appendFileSync(linesFile(), `${line.replaceAll('\n', ' ')}\n`);
}

export function readLines(): string[] {
  try {
    return readFileSync(linesFile(), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

export function recordResult(result: ClusterResult): void {
  mkdirSync(dirname(resultsFile()), { recursive: true });
  appendFileSync(resultsFile(), `${JSON.stringify(result)}\n`);
}

export function readResults(): ClusterResult[] {
  try {
    return readFileSync(resultsFile(), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ClusterResult);
  } catch {
    return [];
  }
}

/**
 * `18.6 on 5 clusters, 17.12 on ledger/books and ledger/books (adopted)`: each version queried, with its clusters
 * (named when there are one or two), and how many clusters no test asked.
 */
export function versionsSaid(results: ClusterResult[]): string {
  const byCluster = new Map<string, string>();
  for (const r of results) if (r.serverVersion) byCluster.set(r.cluster, r.serverVersion);
  if (byCluster.size === 0) return 'not queried';
  const byVersion = new Map<string, string[]>();
  for (const [cluster, version] of byCluster) byVersion.set(version, [...(byVersion.get(version) ?? []), cluster]);
  const said = [...byVersion]
    .sort(([a], [b]) => b.localeCompare(a, 'en', { numeric: true }))
    .map(([version, clusters]) =>
      clusters.length <= 2 ? `${version} on ${clusters.join(' and ')}` : `${version} on ${clusters.length} clusters`,
    );
  const unasked = new Set(results.map((r) => r.cluster).filter((c) => !byCluster.has(c))).size;
  return `${said.join(', ')}${unasked > 0 ? ` (${unasked} not queried)` : ''}`;
}

export function summaryLine(
  world: {
    binaries: { versions: { kubelet: string; cnpg: string } };
    images: { pgfsm: { ref: string; digest?: string } };
  },
  results: ClusterResult[],
): string {
  // A cluster may be recorded more than once (Ready first, then what was queried): its last word counts.
  const clusters = new Map(results.map((r) => [r.cluster, r]));
  const ready = [...clusters.values()].filter((r) => r.ready).length;
  const pooled = results.some((r) => r.queriedThroughPooler === true);
  const image = world.images.pgfsm.digest
    ? `${world.images.pgfsm.ref}@${world.images.pgfsm.digest}`
    : world.images.pgfsm.ref;
  return (
    `real node: Kubernetes ${world.binaries.versions.kubelet} (kubelet), ` +
    `CloudNativePG ${world.binaries.versions.cnpg}, PostgreSQL ${versionsSaid(results)}, pgfsm image ${image}; ` +
    `${ready}/${clusters.size} clusters Ready; queried through the pooler: ${pooled ? 'yes' : 'no'}`
  );
}
