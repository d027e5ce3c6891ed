/**
 * Aborting a request over the pooled keep-alive agent (abortOnSignal, src/operator/kubernetes/connection.ts):
 * before its answer and while the answer still arrives the request is cut and fails with the signal's reason;
 * once the answer came whole nothing is cut, nothing is left unhandled, and the connection is used again.
 */
import { getEventListeners } from 'node:events';
import { type ClientRequest, createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { abortOnSignal, connectionPoolOf, withKeepAlive } from '../../../src/operator/kubernetes/connection.ts';

let connections = 0;
const held = new Set<ServerResponse>();
const uncaught: unknown[] = [];
const record = (error: unknown) => uncaught.push(error);

/** /whole: a short answer in one write; /partial: the head and part of the body; /silent: nothing. */
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  if (req.url === '/silent') {
    held.add(res);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  if (req.url === '/partial') {
    held.add(res);
    res.write('{"type":"ADDED"}\n');
    return;
  }
  res.end('{"type":"ERROR","object":{"code":410}}\n');
});
server.on('connection', () => connections++);

let kc: KubeConfig;
let url: string;

beforeAll(async () => {
  process.on('uncaughtException', record);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'f', server: url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'f', cluster: 'f', user: 'u' }],
    currentContext: 'f',
  });
  withKeepAlive(kc);
});

afterAll(async () => {
  for (const res of held) res.destroy();
  connectionPoolOf(kc)?.destroy();
  await new Promise((resolve) => server.close(resolve));
  process.off('uncaughtException', record);
});

/** A GET over the pool, tied to `signal`; settles with what became of it. */
async function send(path: string, signal: AbortSignal, onLine?: () => void) {
  const options: { agent?: unknown } = {};
  await kc.applyToHTTPSOptions(options);
  let req: ClientRequest | undefined;
  const outcome = await new Promise<{ error?: unknown; body?: string }>((resolve) => {
    req = request(`${url}${path}`, { agent: options.agent as never }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        onLine?.();
      });
      res.on('end', () => resolve({ body }));
      res.on('error', (error) => resolve({ error }));
      res.on('close', () => resolve({ body }));
    });
    req.on('error', (error) => resolve({ error }));
    abortOnSignal(req, signal);
    req.end();
  });
  // Let any error the abort left behind surface.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { ...outcome, req };
}

it('lets an answer that came whole end, and reuses its connection', async () => {
  connections = 0;
  for (let i = 0; i < 3; i++) {
    const abort = new AbortController();
    // As the informer does: the event read off the answer makes it abort.
    const { error, body } = await send('/whole', abort.signal, () => abort.abort());
    expect(error).toBeUndefined();
    expect(body).toContain('410');
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  }
  expect(connections).toBe(1);
  expect(uncaught).toEqual([]);
});

it('cuts a request still waiting for its answer, with the signal’s reason', async () => {
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 50);
  const { error } = await send('/silent', abort.signal);
  expect((error as Error).name).toBe('AbortError');
  expect(uncaught).toEqual([]);
});

it('cuts an answer still arriving', async () => {
  const abort = new AbortController();
  const { error, req } = await send('/partial', abort.signal, () => abort.abort());
  expect(req?.destroyed).toBe(true);
  expect((error as Error).name).toBe('AbortError');
  expect(uncaught).toEqual([]);
});

it('takes its listener off a signal that outlives the request', async () => {
  const abort = new AbortController();
  for (let i = 0; i < 3; i++) await send('/whole', abort.signal);
  expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
});

it('fails at once on a signal already aborted', async () => {
  const { error } = await send('/whole', AbortSignal.abort());
  expect((error as Error).name).toBe('AbortError');
});
