/**
 * A status edited by hand is seen at once (issue 28), against a real API server: two replicas of the operator
 * share the Lease (the standby watches everything the leader writes, as in a hand-over), both through a counting
 * proxy (src/tools/faults/api-proxy.ts, faults off) with the ServiceAccount token of deploy/rbac. A status
 * written over an idle Ready cluster wakes it; the leader's pass writes the status back, once; the echo of that
 * write wakes no pass of its own, and the standby, which sees that write as someone else's, writes nothing.
 * Until issue 28 a status-only update woke nothing, and a hand-written status stood until the periodic resync.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresClusterStatus } from '../../src/operator/api/schema.ts';
import { connectionPoolOf, withKeepAlive } from '../../src/operator/kubernetes/connection.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import type { ApiProxy, ProxiedRequest } from '../../src/tools/faults/api-proxy.ts';
import {
  createClass,
  createCluster,
  GROUP,
  getCluster,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  sleep,
  stateOf,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';
import { proxyTo, tokenOf } from './support/proxy.ts';

const NAME = 'by-hand';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let cp: ControlPlane;
let world: World;
let dir: string;
let proxy: ApiProxy;
let operatorKc: KubeConfig;
const operators: OperatorHandle[] = [];

/** What a pass asks of the API: neither the watches nor the Lease renewals of the two replicas. */
const passRequests = (log: ProxiedRequest[]) =>
  log.filter((r) => !/[?&]watch=(true|1)\b/.test(r.path) && !r.path.includes('/leases'));

const leader = () => {
  const leading = operators.find((o) => o.controller.leading);
  if (!leading) throw new Error('no replica leads');
  return leading;
};

/** Passes the leader ran so far, whatever their result. */
async function passesOfLeader(): Promise<number> {
  const metric = await leader().metrics.registry.getSingleMetric('controller_runtime_reconcile_total')?.get();
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

/** Waits until the leader has nothing queued nor in flight and the passes have asked nothing for a second. */
async function settle(): Promise<void> {
  for (;;) {
    await leader().controller.queue.whenIdle();
    const before = passRequests(proxy.log).length;
    await sleep(1_000);
    if (passRequests(proxy.log).length === before && leader().controller.queue.idle) return;
  }
}

/** As `kubectl patch postgrescluster <name> --subresource=status --type=merge -p <status>` would. */
const writeStatusByHand = (status: Partial<PostgresClusterStatus>) =>
  world.custom.patchNamespacedCustomObjectStatus(
    { ...GROUP, namespace: NS, plural: 'postgresclusters', name: NAME, body: { status } },
    mergePatch,
  );

const withoutSince = (status: PostgresClusterStatus | undefined) => status && { ...status, stateSince: undefined };

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-status-repair-'));
  const api = await proxyTo(cp, dir);
  proxy = api.proxy;
  operatorKc = withKeepAlive(api.kubeConfig(tokenOf(world.operatorKc)));
  for (const identity of ['repair-a', 'repair-b']) {
    operators.push(await runOperator({ ...world, operatorKc }, { identity, leaderElect: true }));
  }
  await waitFor('a leader', async () => operators.some((o) => o.controller.leading) || undefined);
  await createCluster(world, NAME, { class: 'standard', instances: 1 });
  await untilState(world, NAME, 'Ready', 120_000);
});

afterAll(async () => {
  for (const operator of operators) await operator.stop();
  if (operatorKc) connectionPoolOf(operatorKc)?.destroy();
  proxy?.close();
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a status edited by hand', () => {
  it('on an idle Ready cluster is repaired within 2 s, by one pass and one status write', async () => {
    await settle();
    const ready = (await getCluster(world, NAME))?.status;
    expect(ready?.state).toBe('Ready');
    const from = proxy.log.length;
    const passes = await passesOfLeader();

    const started = Date.now();
    await writeStatusByHand({ state: 'Maintenance', phase: 'Failed' });
    await waitFor('the status written back', async () => ((await stateOf(world, NAME)) === 'Ready' ? true : undefined));
    const took = Date.now() - started;
    console.log(`a status written by hand was repaired in ${took} ms`);
    expect(took).toBeLessThan(2_000);
    // Ready since now: the state written by hand did not fit the world, so it is recomputed from it.
    expect(withoutSince((await getCluster(world, NAME))?.status)).toEqual(withoutSince(ready));

    await settle();
    const statusWrites = passRequests(proxy.log.slice(from)).filter(
      (r) => r.method === 'PATCH' && r.path.endsWith(`/postgresclusters/${NAME}/status`),
    );
    // One write of either replica: the leader's repair, whose echo woke neither.
    expect(statusWrites.map((r) => `${r.method} ${r.path} ${String(r.outcome)}`)).toHaveLength(1);
    expect(await passesOfLeader()).toBe(passes + 1);
  });

  it('no pass for labels or annotations edited on the cluster: a pass never reads them there', async () => {
    await settle();
    const passes = await passesOfLeader();
    const from = proxy.log.length;
    await world.custom.patchNamespacedCustomObject(
      {
        ...GROUP,
        namespace: NS,
        plural: 'postgresclusters',
        name: NAME,
        body: { metadata: { labels: { team: 'a' }, annotations: { note: 'edited by hand' } } },
      },
      mergePatch,
    );
    await sleep(1_000);
    await settle();
    expect(await passesOfLeader()).toBe(passes);
    expect(passRequests(proxy.log.slice(from)).map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });
});
