/**
 * Zero idle cost (issue 10), counted where the API server sees it: the operator talks to the real API
 * server through a counting proxy (src/tools/faults/api-proxy.ts, faults off). Once a fleet is Ready and
 * nothing changes, a resync — every cluster passed again, as the periodic safety net does — reads the
 * informers' caches and makes no request at all; a change to one cluster's CNPG status costs requests
 * for that cluster only. A new cluster's own followed writes come back from the real watches as echoes
 * (src/operator/driver/echoes.ts), which wake no pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionPoolOf, withKeepAlive } from '../../src/operator/kubernetes/connection.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import type { ApiProxy, ProxiedRequest } from '../../src/tools/faults/api-proxy.ts';
import {
  createClass,
  createCluster,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  sleep,
  untilState,
  type World,
} from './support/e2e.ts';
import { proxyTo, tokenOf } from './support/proxy.ts';

const CLUSTERS = 6;

let cp: ControlPlane;
let world: World;
let dir: string;
let proxy: ApiProxy;
let operatorKc: KubeConfig;
let operator: OperatorHandle | undefined;

/** Requests other than the watches' own (re)connections: what a pass asks of the API. */
const passRequests = (log: ProxiedRequest[]) => log.filter((r) => !/[?&]watch=(true|1)\b/.test(r.path));

/** Waits until the operator has nothing queued nor in flight, and the API has been quiet for a moment. */
async function settle(): Promise<void> {
  for (;;) {
    const before = proxy.requests;
    await operator?.controller.queue.whenIdle();
    await sleep(1_000);
    if (proxy.requests === before && operator?.controller.queue.idle) return;
  }
}

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-idle-'));
  const api = await proxyTo(cp, dir);
  proxy = api.proxy;
  operatorKc = withKeepAlive(api.kubeConfig(tokenOf(world.operatorKc)));
  // No leader election: the Lease renewals would be the only requests, and they are not a pass's.
  operator = await runOperator({ ...world, operatorKc }, { leaderElect: false });
});

afterAll(async () => {
  await operator?.stop();
  if (operatorKc) connectionPoolOf(operatorKc)?.destroy();
  proxy?.close();
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a Ready fleet', () => {
  it('costs no request when every cluster is passed again and nothing changed', async () => {
    const names = Array.from({ length: CLUSTERS }, (_, i) => `idle-${i}`);
    for (const name of names) await createCluster(world, name, { class: 'standard', instances: 1 });
    for (const name of names) await untilState(world, name, 'Ready', 120_000);
    await settle();
    const from = proxy.log.length;
    // The periodic resync, twice: every cached cluster goes through a whole pass again.
    for (let i = 0; i < 2; i++) {
      expect(operator?.controller.enqueueAll()).toBe(CLUSTERS);
      await operator?.controller.queue.whenIdle();
    }
    await sleep(1_000);
    const made = passRequests(proxy.log.slice(from)).map((r) => `${r.method} ${r.path}`);
    expect(made).toEqual([]);
  });

  it('asks the API about the one cluster whose world changed, and nothing about the others', async () => {
    await settle();
    const from = proxy.log.length;
    // CNPG reports a new primary of one cluster (a switchover), as its controller would.
    const name = 'idle-0';
    world.simulator.switchover(NS, name, 500);
    await sleep(3_000);
    await settle();
    const made = passRequests(proxy.log.slice(from));
    expect(made.length).toBeGreaterThan(0);
    const others = made.filter((r) => /idle-[1-9]/.test(r.path));
    expect(others.map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  it('takes a new cluster to Ready with its own followed writes recognised in the watch events, waking no pass', async () => {
    await settle();
    const echoes = async () =>
      (await operator?.metrics.registry.getSingleMetric('pgfsm_watch_echoes_total')?.get())?.values[0]?.value ?? 0;
    const before = await echoes();
    const name = 'echo-0';
    await createCluster(world, name, { class: 'standard', instances: 1 });
    await untilState(world, name, 'Ready', 120_000);
    await settle();
    // The finalizer, the superuser Secret and the ConfigMap, each followed by the pass that wrote it: the
    // real watch events showed those very versions (kind, name and resourceVersion as the answers said).
    expect((await echoes()) - before).toBe(3);
  });
});
