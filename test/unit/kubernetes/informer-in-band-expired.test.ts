/**
 * An in-band 410 over the pooled keep-alive connections (src/operator/kubernetes/informer.ts, connection.ts).
 * The API server's watch cache answers a watch from a resourceVersion it no longer holds with HTTP 200, one
 * ERROR event carrying a 410 Status, and the end of the response. When all of it arrives in one read (behind
 * a proxy that buffers short answers, always), the informer aborted the watch before the response's 'end'
 * and the process died of an 'error' event nobody listened to (issue 28). Against a local server that
 * writes exactly that answer in one write, and the real informer on withKeepAlive's agents.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { connectionPoolOf, withKeepAlive } from '../../../src/operator/kubernetes/connection.ts';
import { Informer } from '../../../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../../../src/operator/kubernetes/resources.ts';
import { localKubeConfig } from './support/local-kubeconfig.ts';

const EXPIRIES = 5;

const configMap = (name: string, resourceVersion: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace: 'db', name, resourceVersion },
});

const expiredEvent = `${JSON.stringify({
  type: 'ERROR',
  object: {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: 'too old resource version: 1 (7)',
    reason: 'Expired',
    code: 410,
  },
})}\n`;

/** The first EXPIRIES watches are answered as the watch cache does; the next one delivers `after`. */
let watches = 0;
let connections = 0;
const listed = [configMap('listed', '7')];
const open = new Set<ServerResponse>();
const uncaught: unknown[] = [];
const record = (error: unknown) => uncaught.push(error);

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const watch = new URL(req.url ?? '/', 'http://x').searchParams.get('watch') === 'true';
  if (!watch) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: listed }),
    );
    return;
  }
  watches++;
  // Node corks the socket in end(): the head, the one chunk and the last chunk leave in one write.
  res.writeHead(200, { 'content-type': 'application/json' });
  if (watches <= EXPIRIES) {
    res.end(expiredEvent);
    return;
  }
  open.add(res);
  res.write(`${JSON.stringify({ type: 'ADDED', object: configMap('after', '9') })}\n`);
});
server.on('connection', () => connections++);

let informer: Informer<KubeObject>;
let kc: KubeConfig;

beforeAll(async () => {
  process.on('uncaughtException', record);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  kc = localKubeConfig(server);
  withKeepAlive(kc);
});

afterAll(async () => {
  await informer?.stop();
  for (const res of open) res.end();
  connectionPoolOf(kc)?.destroy();
  await new Promise((resolve) => server.close(resolve));
  process.off('uncaughtException', record);
});

it('relists on each in-band 410 that arrives whole, keeps its connections, and then delivers events', async () => {
  const added: string[] = [];
  informer = new Informer<KubeObject>(kc, {
    resource: RESOURCES.configMaps,
    namespace: 'db',
    backoffBaseMs: 10,
    backoffMaxMs: 50,
  });
  informer.on((event) => {
    if (event.type === 'add') added.push(event.object.metadata.name);
  });
  informer.start();

  await expect.poll(() => added, { timeout: 5_000 }).toContain('after');
  expect(informer.stats.expired).toBe(EXPIRIES);
  // One list to start, one per 410; none of them a failure, and nothing left unhandled.
  expect(informer.stats.lists).toBe(EXPIRIES + 1);
  expect(informer.stats.failures).toBe(0);
  expect(uncaught).toEqual([]);
  expect(added).toEqual(['listed', 'after']);
  // Each answered watch left its connection to the next: one for the lists, one for the watches.
  expect(connections).toBe(2);
});
