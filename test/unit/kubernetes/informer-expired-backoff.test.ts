/**
 * A server (or a proxy) that answers every watch with a 410 is not sent a list in a tight loop: the first 410
 * relists at once, each one after a relist whose watch delivered nothing waits as a failure does
 * (src/operator/kubernetes/informer.ts, `expired`). Without the wait it was about a thousand lists in 2 s.
 */
import { createServer } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { connectionPoolOf, withKeepAlive } from '../../../src/operator/kubernetes/connection.ts';
import { Informer } from '../../../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../../../src/operator/kubernetes/resources.ts';
import { localKubeConfig } from './support/local-kubeconfig.ts';

const expired = `${JSON.stringify({
  type: 'ERROR',
  object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 },
})}\n`;

let lists = 0;
const server = createServer((req, res) => {
  const watch = new URL(req.url ?? '/', 'http://x').searchParams.get('watch') === 'true';
  res.writeHead(200, { 'content-type': 'application/json' });
  if (watch) {
    res.end(expired);
    return;
  }
  lists++;
  res.end(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [] }));
});

let informer: Informer<KubeObject>;
let kc: KubeConfig;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  kc = localKubeConfig(server);
  withKeepAlive(kc);
});

afterAll(async () => {
  await informer?.stop();
  connectionPoolOf(kc)?.destroy();
  await new Promise((resolve) => server.close(resolve));
});

it('backs off when every watch is answered with a 410', async () => {
  informer = new Informer<KubeObject>(kc, {
    resource: RESOURCES.configMaps,
    namespace: 'db',
    backoffBaseMs: 100,
    backoffMaxMs: 400,
  });
  informer.start();
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  // 0, 100, 200, 400, 400, … ms apart (±jitter): a handful of lists, not hundreds.
  expect(lists).toBeGreaterThanOrEqual(3);
  expect(lists).toBeLessThanOrEqual(10);
  expect(informer.stats.failures).toBe(0);
});
