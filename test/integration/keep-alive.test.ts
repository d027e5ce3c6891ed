/**
 * Connections, counted where the server sees them: the operator (leader election on, the real ports and
 * informers, the ServiceAccount of deploy/rbac) talks to the real API server through a loopback TLS proxy
 * that terminates TLS, so it counts every TLS handshake the operator makes and every HTTP request it sends.
 * With the pooled keep-alive agent of src/operator/kubernetes/connection.ts, taking ten clusters to Ready
 * costs hundreds of requests over a handful of connections: one per watch, plus the few that carried the
 * requests running at once at the busiest moment (start-up, when every informer lists). Before it, every
 * request was a handshake. And a pool at its bound still sends, through the leadership fence, every write that
 * waited for one of its connections.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allSources } from '../../src/operator/driver/sources.ts';
import { connectionPoolOf, withKeepAlive } from '../../src/operator/kubernetes/connection.ts';
import { fenceWrites } from '../../src/operator/kubernetes/fence.ts';
import { RestClient } from '../../src/operator/kubernetes/rest.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import type { ApiProxy } from '../../src/tools/faults/api-proxy.ts';
import {
  createClass,
  createCluster,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  untilState,
  type World,
} from './support/e2e.ts';
import { proxyTo } from './support/proxy.ts';

const CLUSTERS = 10;

let cp: ControlPlane;
let world: World;
let dir: string;
let proxy: ApiProxy;
/** A kubeconfig for the proxy with a token. */
let viaProxy: (token: string) => KubeConfig;
let operatorKc: KubeConfig;
let operator: OperatorHandle | undefined;

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-keep-alive-'));
  const api = await proxyTo(cp, dir);
  proxy = api.proxy;
  viaProxy = api.kubeConfig;
  const token = await cp.tokenFor({ namespace: 'pgfsm-system', name: 'pgfsm' });
  operatorKc = withKeepAlive(viaProxy(token));
  // The proxy counts honestly: without the pool, each request is a handshake of its own.
  const plain = viaProxy(token).makeApiClient(CoreV1Api);
  for (let i = 0; i < 3; i++) await plain.listNamespacedConfigMap({ namespace: NS });
  expect(proxy.handshakes).toBe(3);
  expect(proxy.requests).toBe(3);
  proxy.handshakes = 0;
  proxy.requests = 0;
});

afterAll(async () => {
  await operator?.stop();
  if (operatorKc) connectionPoolOf(operatorKc)?.destroy();
  proxy?.close();
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('connections to the API server', () => {
  it('takes ten clusters to Ready over a handful of kept connections', async () => {
    const informers = allSources(createWatchSources(operatorKc)).length;
    operator = await runOperator({ ...world, operatorKc }, { leaderElect: true });
    const names = Array.from({ length: CLUSTERS }, (_, i) => `keep-${i}`);
    for (const name of names) await createCluster(world, name, { class: 'standard', instances: 1 });
    for (const name of names) await untilState(world, name, 'Ready', 120_000);
    const { handshakes, requests } = proxy;
    console.log(
      `${CLUSTERS} clusters to Ready: ${requests} requests over ${handshakes} TLS connections (${informers} informers)`,
    );
    expect(requests).toBeGreaterThanOrEqual(100);
    // One connection per watch, plus as many as requests ever ran at once, at start-up: every informer's
    // first list together with the Lease and the first passes (measured: 7 + 8). It does not grow with the
    // work; without the pool it would be one connection per request.
    expect(handshakes).toBeLessThanOrEqual(2 * informers + 4);
    // The connections besides the watches' carry ten requests each at least (with PostgresDatabases the operator
    // watches nine kinds, so the watches alone are about half the connections ten clusters open).
    expect(requests).toBeGreaterThanOrEqual(10 * (handshakes - informers));
  });

  it('makes no new connection for steady work on warm connections', async () => {
    const before = proxy.handshakes;
    const requestsBefore = proxy.requests;
    // Five more clusters, one after another: their passes reuse the pooled connections, already open.
    for (let i = 0; i < 5; i++) {
      await createCluster(world, `more-${i}`, { class: 'standard', instances: 1 });
      await untilState(world, `more-${i}`, 'Ready', 60_000);
    }
    console.log(
      `5 more clusters: ${proxy.requests - requestsBefore} requests, ${proxy.handshakes - before} new connections`,
    );
    expect(proxy.requests - requestsBefore).toBeGreaterThanOrEqual(50);
    expect(proxy.handshakes - before).toBeLessThanOrEqual(2);
  });

  it('sends every write that waited for a connection of a full pool, leadership fenced', async () => {
    // A pool of 2 connections for 30 writes at once: 28 wait, each handed a connection as one frees. Before
    // the fence asked the socket itself (fence.ts), every one of them was held for a TLS handshake that had
    // come long before, and none left.
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    fenceWrites(withKeepAlive(kc, { maxSockets: 2 }), { identity: 'full-pool', isLeader: () => true });
    const rest = new RestClient(kc);
    const names = Array.from({ length: 30 }, (_, i) => `full-pool-${i}`);
    const writes = Promise.all(
      names.map((name) =>
        rest.request({
          method: 'POST',
          path: `/api/v1/namespaces/${NS}/configmaps`,
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS } },
          ignoreAnswer: true,
        }),
      ),
    ).then(() => 'all sent');
    const deadline = new Promise((resolve) => setTimeout(() => resolve('still waiting after 30 s'), 30_000));
    try {
      expect(await Promise.race([writes, deadline])).toBe('all sent');
      const stored = await world.core.listNamespacedConfigMap({ namespace: NS });
      expect(stored.items.map((c) => c.metadata?.name).filter((n) => n?.startsWith('full-pool-'))).toHaveLength(30);
    } finally {
      connectionPoolOf(kc)?.destroy();
    }
  });
});
