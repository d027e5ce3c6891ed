/**
 * In-band 410s from the real API server, handed over whole (issue 28). With its watch cache on, the API server
 * answers a watch from a resourceVersion it no longer holds with HTTP 200, one ERROR event carrying a 410
 * Status, and the end of the response. Behind a proxy that buffers short answers the client reads all of it
 * at once; the informer then aborted a watch whose answer was already complete, and the process died of an
 * unhandled 'error' on the kept-alive socket. Here the fault proxy (src/tools/faults/api-proxy.ts) answers
 * a share of the watches so, in one write, to an informer on a KubeConfig loaded as `pgfsm run` loads it
 * (pooled keep-alive connections, connection.ts). It must relist on each, keep delivering every change,
 * count no failure, leave nothing unhandled, and keep its connections.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigMap } from '../../src/operator/domain/objects.ts';
import { connectionPoolOf } from '../../src/operator/kubernetes/connection.ts';
import { Informer } from '../../src/operator/kubernetes/informer.ts';
import { loadKubeConfig } from '../../src/operator/kubernetes/kubeconfig.ts';
import { RESOURCES } from '../../src/operator/kubernetes/resources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { type ProxiedApi, proxyTo } from './support/proxy.ts';

const NS = 'in-band';
const EXPIRIES = 10;

let cp: ControlPlane | undefined;
let api: ProxiedApi | undefined;
let dir: string | undefined;
let informer: Informer<ConfigMap> | undefined;
let kubeconfig = '';
const unhandled: unknown[] = [];
const record = (error: unknown) => unhandled.push(error);

beforeAll(async () => {
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  cp = await startControlPlane({ controllerManager: false, cnpg: false });
  const core = cp.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'watcher' } } });
  // A Role of its own: the built-in `view` is filled in by kube-controller-manager, which does not run here.
  const rbac = cp.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: 'watcher' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: NS,
    body: {
      metadata: { name: 'watcher' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'watcher' },
      subjects: [{ kind: 'ServiceAccount', name: 'watcher', namespace: NS }],
    },
  });
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-in-band-'));
  api = await proxyTo(cp, dir);
  kubeconfig = api.kubeConfigFile(await cp.tokenFor({ namespace: NS, name: 'watcher' }), 'watcher');
});

afterAll(async () => {
  await informer?.stop();
  api?.proxy.close();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  process.off('uncaughtException', record);
  process.off('unhandledRejection', record);
});

const poll = { timeout: 60_000, interval: 100 };

describe('Informer and in-band 410s read whole', () => {
  it('relists on each, keeps delivering changes over its kept connections, and leaves nothing unhandled', async () => {
    if (!cp || !api) throw new Error('the control plane did not start (see the beforeAll error)');
    const { proxy } = api;
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const kc = loadKubeConfig({ kubeconfig });
    const added = new Set<string>();
    proxy.expireWatchesInBand(0.7);
    // silentAfterMs 3 s: the server ends each watch it serves after about 2 s, so watches come often.
    informer = new Informer<ConfigMap>(kc, {
      resource: RESOURCES.configMaps,
      namespace: NS,
      silentAfterMs: 3_000,
      backoffBaseMs: 100,
      backoffMaxMs: 400,
      log: { debug: () => {}, warn: (fields, message) => console.warn(message, fields) },
    });
    informer.on((event) => {
      if (event.type === 'add') added.add(event.object.metadata.name);
    });
    informer.start();
    await expect.poll(() => informer?.synced, poll).toBe(true);

    // Changes keep coming while the watches are being expired; each must reach the cache.
    for (let i = 0; informer.stats.expired < EXPIRIES; i++) {
      const name = `during-${i}`;
      await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name } } });
      await expect.poll(() => added.has(name), poll).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(proxy.inBandExpired).toBeGreaterThanOrEqual(EXPIRIES);
    expect(informer.stats.lists).toBeGreaterThanOrEqual(EXPIRIES);
    expect(informer.stats.failures).toBe(0);
    expect(unhandled).toEqual([]);

    // The expiries stop: the next change comes by the watch, without another list.
    proxy.expireWatchesInBand(0);
    const watching = informer.stats.watches;
    await expect.poll(() => informer?.stats.watches, poll).toBeGreaterThan(watching);
    // An expiry the proxy had already sent is relisted by now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lists = informer.stats.lists;
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'after' } } });
    await expect.poll(() => informer?.get(NS, 'after')?.metadata.name, poll).toBe('after');
    expect(informer.stats.lists).toBe(lists);
    expect(informer.fresh()).toBe(true);
    expect(unhandled).toEqual([]);

    // Every answered watch left its connection to the next one: a handful of handshakes for dozens of watches.
    const watches = proxy.log.filter((r) => r.path.includes('watch=true')).length;
    expect(watches).toBeGreaterThan(EXPIRIES);
    expect(proxy.handshakes).toBeLessThanOrEqual(4);
    console.log(
      `in-band 410s: ${proxy.inBandExpired} sent, ${informer.stats.expired} relisted on; ` +
        `${watches} watches, ${informer.stats.lists} lists over ${proxy.handshakes} connections`,
    );
    connectionPoolOf(kc)?.destroy();
  });
});
