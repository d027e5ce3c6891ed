/**
 * The fault proxy's watch lag (src/tools/faults/api-proxy.ts): each watch event reaches the client a random
 * while late, never before the event ahead of it, whatever way the chunks cut the stream's lines; and once
 * the stream ends or the client leaves, no timer is left behind and nothing more is written.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPki, type Pki } from '../../../src/tools/control-plane/certs.ts';
import { ApiProxy, LaggedWatch } from '../../../src/tools/faults/api-proxy.ts';

const event = (type: string, name: string) => `${JSON.stringify({ type, object: { metadata: { name } } })}\n`;

/** The lags the stream draws, in order, as fractions of its maximum. */
const drawing = (fractions: number[]) => {
  const left = [...fractions];
  return () => left.shift() ?? 0;
};

describe('a lagged watch stream', () => {
  let out: Writable;
  /** Each write the client got, and when (on the fake clock). */
  let received: Array<{ line: string; at: number }>;

  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000 });
    received = [];
    out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        received.push({ line: chunk.toString().trimEnd(), at: Date.now() });
        done();
      },
    });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('releases each event at the later of its own lag and the release of the one before', async () => {
    let counted = 0;
    const lagged = new LaggedWatch(out, 100, drawing([0.5, 0.2, 0.9, 0.1, 0.0]), () => counted++);
    lagged.push(event('ADDED', 'a') + event('ADDED', 'b')); // at 1000: a due 1050, b 1020 → held to 1050
    await vi.advanceTimersByTimeAsync(10);
    lagged.push(event('MODIFIED', 'a')); // at 1010: due 1100
    await vi.advanceTimersByTimeAsync(60);
    lagged.push(event('MODIFIED', 'b')); // at 1070: due 1080 → held to 1100
    await vi.advanceTimersByTimeAsync(50);
    lagged.push(event('DELETED', 'a')); // at 1120: no lag at all

    expect(received).toEqual([
      { line: event('ADDED', 'a').trimEnd(), at: 1_050 },
      { line: event('ADDED', 'b').trimEnd(), at: 1_050 },
      { line: event('MODIFIED', 'a').trimEnd(), at: 1_100 },
      { line: event('MODIFIED', 'b').trimEnd(), at: 1_100 },
      { line: event('DELETED', 'a').trimEnd(), at: 1_120 },
    ]);
    expect(counted).toBe(5);
  });

  it('cuts the stream into events by lines, however the chunks split or join them; bookmarks and errors lag too', async () => {
    const lagged = new LaggedWatch(out, 200, drawing([0.25, 0.25, 0.25, 0.25]));
    const stream = event('ADDED', 'a') + event('BOOKMARK', '') + event('ERROR', 'gone') + event('ADDED', 'z');
    // A chunk ends inside an event, another holds the end of one and all of the next two.
    const cuts = [7, 40, stream.length - 3];
    let from = 0;
    for (const to of [...cuts, stream.length]) {
      lagged.push(stream.slice(from, to));
      from = to;
    }
    await vi.advanceTimersByTimeAsync(49);
    expect(received).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(received.map((r) => r.line)).toEqual(stream.trimEnd().split('\n'));
    expect(received.every((r) => r.at === 1_050)).toBe(true);
  });

  it('ends after the last held event once the upstream ended, and leaves no timer running', async () => {
    const lagged = new LaggedWatch(out, 100, drawing([0.3, 0.6]));
    lagged.push(`${event('ADDED', 'a')}${event('ADDED', 'b')}{"type":"ADDED",`);
    // Not a line: whatever the upstream left unfinished goes last, with the end.
    lagged.push('"object":{}}');
    lagged.end();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(30);
    expect(received.map((r) => r.at)).toEqual([1_030]);
    expect(out.writableEnded).toBe(false);
    await vi.advanceTimersByTimeAsync(30);
    expect(received.map((r) => `${r.at} ${r.line}`)).toEqual([
      `1030 ${event('ADDED', 'a').trimEnd()}`,
      `1060 ${event('ADDED', 'b').trimEnd()}`,
      '1060 {"type":"ADDED","object":{}}',
    ]);
    expect(out.writableEnded).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drops what it holds when the client goes away, and writes nothing after', async () => {
    const lagged = new LaggedWatch(out, 100, drawing([0.5, 0.5]));
    lagged.push(event('ADDED', 'a') + event('ADDED', 'b'));
    expect(vi.getTimerCount()).toBe(1);
    out.destroy();
    await once(out, 'close');
    expect(vi.getTimerCount()).toBe(0);
    lagged.push(event('ADDED', 'c'));
    lagged.end();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(received).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('the proxy with a watch lag', () => {
  const MAX_LAG_MS = 150;
  let dir: string;
  let pki: Pki;
  let upstream: Server;
  let proxy: ApiProxy;
  /** When the upstream sent each event of the current watch, by its line. */
  const sentAt = new Map<string, number>();
  let upstreamClosed: Promise<unknown>;

  /** The events a watch sends, in chunks a few ms apart that split and join them, and split a character too. */
  const STREAM = Array.from({ length: 12 }, (_, i) => event(i % 5 === 4 ? 'BOOKMARK' : 'MODIFIED', `ç-${i}`));
  const BYTES = Buffer.from(STREAM.join(''));
  const CHUNKS = [BYTES.subarray(0, BYTES.indexOf('ç') + 1), ...chunked(BYTES.subarray(BYTES.indexOf('ç') + 1), 97)];

  function chunked(bytes: Buffer, size: number): Buffer[] {
    return Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pgfsm-watch-lag-'));
    pki = await createPki(join(dir, 'pki'));
    upstream = createHttpsServer(
      { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
      (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        if (!/watch=(1|true)/.test(req.url ?? '')) {
          res.end('{"kind":"ConfigMapList","items":[]}');
          return;
        }
        upstreamClosed = once(res, 'close');
        const stays = req.url?.includes('stay') === true;
        let sent = Buffer.alloc(0);
        const next = (i: number) => {
          if (res.destroyed) return;
          const chunk = CHUNKS[i];
          if (chunk === undefined) {
            if (!stays) res.end();
            return;
          }
          res.write(chunk);
          sent = Buffer.concat([sent, chunk]);
          for (const line of sent.toString().split('\n').slice(0, -1))
            if (!sentAt.has(line)) sentAt.set(line, Date.now());
          setTimeout(() => next(i + 1), 5);
        };
        next(0);
      },
    );
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });

  beforeEach(async () => {
    sentAt.clear();
    proxy = new ApiProxy({
      target: `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      targetCa: readFileSync(pki.caCert),
      serving: { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
      watchLag: { maxMs: MAX_LAG_MS, seed: 7 },
    });
    await proxy.listen();
  });

  afterEach(() => proxy.close());

  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(`${proxy.url}${path}`, { ca: readFileSync(pki.caCert), agent: false }, resolve);
      req.on('error', reject);
      req.end();
    });

  it('delivers every event of a watch in order, each late by no more than the maximum, and counts them', async () => {
    const answer = await get('/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=5');
    const received: Array<{ line: string; lag: number }> = [];
    let partial = '';
    answer.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) received.push({ line, lag: Date.now() - (sentAt.get(line) ?? Number.NaN) });
    });
    await once(answer, 'end');

    expect(received.map((r) => r.line)).toEqual(STREAM.map((e) => e.trimEnd()));
    for (const { lag } of received) {
      expect(lag).toBeGreaterThanOrEqual(0);
      // A loaded machine's timers and sockets may add a little of their own.
      expect(lag).toBeLessThanOrEqual(MAX_LAG_MS + 100);
    }
    expect(Math.max(...received.map((r) => r.lag))).toBeGreaterThan(MAX_LAG_MS / 4);
    expect(proxy.laggedEvents).toBe(STREAM.length);
  });

  it('leaves a list alone, and lets go of the upstream watch of a client that left', async () => {
    const list = await get('/api/v1/namespaces/ns/configmaps');
    list.resume();
    await once(list, 'end');
    expect(proxy.laggedEvents).toBe(0);

    const answer = await get('/api/v1/namespaces/ns/configmaps?watch=true&stay');
    await once(answer, 'data');
    answer.destroy();
    // The events still held back are dropped with it (its timer is cleared: the fake-clock tests above).
    await upstreamClosed;
    expect(proxy.laggedEvents).toBeGreaterThan(0);
  });
});
