/**
 * The Kubernetes event sink against a local HTTP server standing in for the events API: a create that
 * fails on the way is tried again within the pass, under the same name; a refusal is not; what still
 * fails is thrown, for the pass to report as not sent.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { normal } from '../../src/operator/domain/effects.ts';
import { KubernetesEventSink } from '../../src/operator/kubernetes/events.ts';

type Answer = 'created' | 'reset' | 'landedThenReset' | 500 | 503 | 403 | 409;

interface Received {
  method: string;
  url: string;
  name: string;
}

let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** An events API that answers the n-th request with `answers[n]` (then `created`), recording each. */
async function eventsApi(answers: Answer[]) {
  const received: Received[] = [];
  const created = new Set<string>();
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const name = (JSON.parse(body || '{}') as { metadata?: { name?: string } }).metadata?.name ?? '';
      received.push({ method: req.method ?? '', url: req.url ?? '', name });
      const answer = answers[received.length - 1] ?? 'created';
      if (answer === 'reset' || answer === 'landedThenReset') {
        if (answer === 'landedThenReset') created.add(name);
        req.socket.destroy();
        return;
      }
      const status = (code: number, reason: string) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, code }));
      };
      if (answer !== 'created') return status(answer, answer === 403 ? 'Forbidden' : 'InternalError');
      if (created.has(name)) return status(409, 'AlreadyExists');
      created.add(name);
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'local', cluster: 'local', user: 'nobody' }],
    currentContext: 'local',
  });
  const sink = new KubernetesEventSink(kc, { clock: { now: () => 1_000 }, retryDelaysMs: [1, 1] });
  return { sink, received, created };
}

const orders: PostgresCluster = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name: 'orders', uid: 'uid-1' },
  spec: { class: 'standard' },
};
const ready = normal('Ready', 'BecomeReady', 'Cluster is up and running');

describe('KubernetesEventSink retries', () => {
  it('creates the Event on a later attempt, under the same name, after a 500 and a reset', async () => {
    const api = await eventsApi([500, 'reset']);
    await api.sink.emit(orders, ready);
    expect(api.received).toHaveLength(3);
    expect(new Set(api.received.map((r) => r.name)).size).toBe(1);
    expect(api.created.size).toBe(1);
  });

  it('takes a conflict after a lost answer for the Event that attempt created, not a second one', async () => {
    const api = await eventsApi(['landedThenReset']);
    await api.sink.emit(orders, ready);
    expect(api.received).toHaveLength(2);
    expect(api.created.size).toBe(1);
  });

  it('sends again under the name of an attempt that may have landed, so that one is not made twice', async () => {
    const api = await eventsApi(['landedThenReset', 503, 503]);
    await expect(api.sink.emit(orders, ready)).rejects.toMatchObject({ name: 'PortError' });
    // The next pass sends it again: "already exists" now means the lost attempt created it.
    await api.sink.emit(orders, ready);
    expect(api.created.size).toBe(1);
    expect(new Set(api.received.map((r) => r.name)).size).toBe(1);
  });

  it('gives up after three attempts and throws, for the pass to report the event as not sent', async () => {
    const api = await eventsApi([503, 503, 503]);
    await expect(api.sink.emit(orders, ready)).rejects.toMatchObject({ name: 'PortError' });
    expect(api.received).toHaveLength(3);
    expect(api.created.size).toBe(0);
  });

  it('does not retry a refusal on the merits (403)', async () => {
    const api = await eventsApi([403]);
    await expect(api.sink.emit(orders, ready)).rejects.toMatchObject({ errorClass: 'forbidden' });
    expect(api.received).toHaveLength(1);
  });

  it('after a lost answer, takes only "already exists" for its own Event, not any 409 (a proxy may make one up)', async () => {
    const api = await eventsApi(['reset', 409]);
    await expect(api.sink.emit(orders, ready)).rejects.toMatchObject({ errorClass: 'conflict' });
    expect(api.received).toHaveLength(2);
  });

  it('takes a conflict for its own Event only after an attempt whose answer was lost', async () => {
    const first = await eventsApi([409]);
    await expect(first.sink.emit(orders, ready)).rejects.toMatchObject({ errorClass: 'conflict' });
    expect(first.received).toHaveLength(1);
  });
});
