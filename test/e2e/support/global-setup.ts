/**
 * One real node for the whole e2e project: built the first time (binaries, images), started, CloudNativePG and
 * pgfsm installed as their users install them; stopped at the end, and proven to leave nothing behind. Each test
 * file attaches to it (support/node.ts) and works in a namespace of its own. The summary line the issue asks for
 * is printed here, from what the test files recorded (support/results.ts).
 */
import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { startRealNode, stopRealNode } from '../../../src/tools/node/index.ts';
import { nodeDirs } from '../../../src/tools/node/layout.ts';
import { prefetchLogPath } from '../../../src/tools/node/prefetch.ts';
import { isClean, leftovers } from '../../../src/tools/node/teardown.ts';
import { clearResults, readLines, readResults, summaryLine } from './results.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    realNode: { kubectl: string; pgfsmImage: string; postgresImage: string; versions: Record<string, string> };
  }
}

export default async function setup(project: TestProject) {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'The e2e suite runs a real Kubernetes node (network namespaces, mounts, cgroups) and needs root. ' +
        'Run `npm run test:e2e` as root (CI does); nothing is skipped.',
    );
  }
  const log = (line: string) => process.stderr.write(`[real node] ${line}\n`);
  clearResults();
  if (existsSync(prefetchLogPath())) {
    log(
      `the node's images and binaries may come from a background prefetch (npm test starts one); its log: ${prefetchLogPath()}`,
    );
  }
  const world = await startRealNode({ log });
  await world.node.detach();
  project.provide('realNode', {
    kubectl: world.binaries.kubectl,
    pgfsmImage: world.images.pgfsm.ref,
    postgresImage: world.images.postgres.ref,
    versions: { ...world.binaries.versions },
  });
  log(
    `ready: ${Object.entries(world.timings)
      .map(([k, s]) => `${k} ${s.toFixed(1)}s`)
      .join(', ')}`,
  );
  return async () => {
    const results = readResults();
    process.stdout.write(`\n${summaryLine(world, results)}\n`);
    for (const line of readLines()) process.stdout.write(`${line}\n`);
    if (process.env.PGFSM_NODE_KEEP === '1') {
      log('PGFSM_NODE_KEEP=1: the node keeps running (npm run node -- stop ends it)');
      return;
    }
    await stopRealNode(world);
    const left = await leftovers(nodeDirs(), []);
    if (!isClean(left)) {
      // vitest 4 only logs an error thrown by a global teardown and still exits 0 (tried): fail the run instead.
      process.stderr.write(`\nFAIL: the node's teardown left something behind: ${JSON.stringify(left)}\n`);
      process.exitCode = 1;
      return;
    }
    log('teardown: no process, mount, network namespace, kubepods cgroup or KUBE iptables chain left');
  };
}
