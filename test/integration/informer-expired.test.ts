/**
 * 410 Gone on a real API server. A watch resumed from a resourceVersion that etcd has compacted away is
 * answered with 410 Expired; the informer must relist (not give up, not back off as if the server were
 * down) and keep its cache right. A production cluster sees this after a long disconnection; this
 * control plane provokes it in seconds: no watch cache (so watches reach etcd) and a compaction every
 * second, while the informer's watch ends every ~2 s and resumes from the list's resourceVersion.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigMap } from '../../src/operator/domain/objects.ts';
import { Informer } from '../../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../../src/operator/kubernetes/resources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';

let controlPlane: ControlPlane | undefined;
let informer: Informer<ConfigMap> | undefined;

beforeAll(async () => {
  controlPlane = await startControlPlane({
    controllerManager: false,
    apiServerArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'],
  });
});

afterAll(async () => {
  await informer?.stop();
  await controlPlane?.stop();
});

const poll = { timeout: 30_000, interval: 100 };

describe('Informer and a compacted resourceVersion', () => {
  it('relists on 410 Gone and keeps watching', async () => {
    if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
    const core = controlPlane.kubeConfig.makeApiClient(CoreV1Api);
    const ns = 'expired';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'listed' } } });

    // silentAfterMs 3 s makes the server end each watch after about 2 s; with no event in this
    // namespace the informer resumes from the list's resourceVersion, which compaction removes.
    informer = new Informer<ConfigMap>(controlPlane.kubeConfig, {
      resource: RESOURCES.configMaps,
      namespace: ns,
      silentAfterMs: 3_000,
      backoffBaseMs: 100,
      backoffMaxMs: 400,
    });
    informer.start();
    await expect.poll(() => informer?.synced, poll).toBe(true);
    await expect.poll(() => informer?.stats.expired, poll).toBeGreaterThanOrEqual(1);

    // It relisted, counted no failure, and still sees what happens next.
    await expect.poll(() => informer?.stats.lists, poll).toBeGreaterThanOrEqual(2);
    expect(informer.stats.failures).toBe(0);
    expect(informer.get(ns, 'listed')?.metadata.name).toBe('listed');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after' } } });
    await expect.poll(() => informer?.get(ns, 'after')?.metadata.name, poll).toBe('after');
    expect(informer.fresh()).toBe(true);
  });
});
