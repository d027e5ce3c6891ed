/**
 * A TLS-terminating reverse proxy in front of the real API server, for tests and benchmarks that must see
 * what a client does from the server's side, and make the API misbehave as it does in production:
 * - it counts TLS handshakes and requests, and keeps a log of each request (verb, path, what happened);
 * - while faults are on, it answers a share of the requests itself with 409, 429 (with Retry-After),
 *   500 or 503, or resets the connection before forwarding, or forwards and then resets instead of
 *   answering (the write happened, its response is lost), and it cuts watches mid-stream;
 * - during an outage, it answers every request to the paths it names with 503 (the Lease's, say);
 * - with a watch lag, it holds each watch event back a random while, in order, as a busy API server does;
 * - opt-in (expireWatchesInBand), it answers a share of the watches with an in-band 410 (issue 28).
 *
 * Hand-written because it must sit between one client and the API server and decide per request, which
 * no library here does; it is small, and it never rewrites a body.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { seededRandom } from '../simulation/virtual-timers.ts';

export type Fault = '409' | '429' | '500' | '503' | 'reset-before' | 'reset-after';

export const FAULTS: readonly Fault[] = ['409', '429', '500', '503', 'reset-before', 'reset-after'];

export interface ProxiedRequest {
  method: string;
  path: string;
  /** The status the client got, or the fault injected instead. */
  outcome: number | Fault | 'watch-cut' | 'in-band-410';
  at: number;
}

export interface ApiProxyOptions {
  /** The API server's URL and the CA that signed its serving certificate. */
  target: string;
  targetCa: Buffer;
  /** The proxy's own serving certificate and key (its clients trust their CA). */
  serving: { cert: Buffer; key: Buffer };
  /** A random source in [0, 1) for the faults; seeded in tests that must replay. */
  random?: () => number;
  /** Each watch event reaches the client up to `maxMs` late; the same `seed` gives each watch the same lags. */
  watchLag?: { maxMs: number; seed: number };
}

/** Hop-by-hop headers a proxy must not forward. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

const withoutHopByHop = (headers: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

/** A Kubernetes `Status` body, as the API server would answer. */
function statusBody(code: number): string {
  const reasons: Record<number, string> = {
    409: 'Conflict',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
  };
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: reasons[code],
    message: `injected fault: ${reasons[code]}`,
    code,
  });
}

/**
 * What the API server's watch cache sends on a watch from a resourceVersion it no longer holds, before it
 * ends the response: the 410 comes in the body of an HTTP 200, not as the status.
 */
const EXPIRED_EVENT = `${JSON.stringify({
  type: 'ERROR',
  object: {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'injected fault: too old resource version',
    reason: 'Expired',
    code: 410,
  },
})}\n`;

const isWatch = (url: string) => /[?&]watch=(true|1)\b/.test(url);

export class ApiProxy {
  handshakes = 0;
  requests = 0;
  readonly log: ProxiedRequest[] = [];
  url = '';
  /** Watch events the lag held back. */
  laggedEvents = 0;
  /** Share of requests (not watches) answered with a fault while `faulty`. */
  private faultRate = 0;
  /** Requests whose path matches are all answered 503 (an outage of one resource), whatever the rate. */
  private outage: RegExp | undefined;
  private watchCutMs: [number, number] = [1000, 8000];
  /** Share of watches answered with an in-band 410 (expireWatchesInBand), faults on or off. */
  private inBandExpiryRate = 0;
  /** The next watch is answered with an in-band 410 whatever the rate (see expireWatchesInBand). */
  private inBandFirst = false;
  /** Watches answered with an in-band 410 so far. */
  inBandExpired = 0;
  private readonly server: Server;
  private readonly upstream: Agent;
  private readonly random: () => number;
  private readonly sockets = new Set<Socket>();
  private readonly watchLag: { maxMs: number; seed: number } | undefined;
  /** Watches opened so far per resource, so that a watch's lags do not depend on when the others opened. */
  private readonly watchesOpened = new Map<string, number>();
  /** The connections that carry a watch now, with its log entry (a watch holds its connection to itself). */
  private readonly openWatches = new Map<Socket, ProxiedRequest>();
  readonly injected: Record<Fault | 'watch-cut', number> = {
    '409': 0,
    '429': 0,
    '500': 0,
    '503': 0,
    'reset-before': 0,
    'reset-after': 0,
    'watch-cut': 0,
  };

  constructor(options: ApiProxyOptions) {
    this.random = options.random ?? Math.random;
    this.watchLag = options.watchLag;
    this.upstream = new Agent({ keepAlive: true, ca: options.targetCa });
    this.server = createServer({ ...options.serving, keepAliveTimeout: 90_000 }, (req, res) => {
      this.requests++;
      const method = req.method ?? 'GET';
      const url = req.url ?? '/';
      const entry: ProxiedRequest = { method, path: url, outcome: 0, at: Date.now() };
      this.log.push(entry);
      const watch = isWatch(url);
      const down = this.outage?.test(url) === true;
      if (watch && !down && this.inBandExpiryRate > 0 && (this.inBandFirst || this.random() < this.inBandExpiryRate)) {
        this.inBandFirst = false;
        this.answerExpired(res, entry);
        return;
      }
      const fault = down
        ? '503'
        : !watch && this.faultRate > 0 && this.random() < this.faultRate
          ? this.pickFault()
          : undefined;
      if (fault) this.injected[fault]++;
      if (fault === 'reset-before') {
        entry.outcome = fault;
        req.socket.destroy();
        return;
      }
      if (fault && fault !== 'reset-after') {
        entry.outcome = fault;
        res.writeHead(Number(fault), {
          'content-type': 'application/json',
          ...(fault === '429' ? { 'retry-after': '1' } : {}),
        });
        res.end(statusBody(Number(fault)));
        return;
      }
      const forward = request(
        `${options.target}${url}`,
        { method, headers: withoutHopByHop(req.headers), agent: this.upstream },
        (answer) => {
          if (fault === 'reset-after') {
            // The server did the work; the client never hears of it.
            entry.outcome = fault;
            answer.resume();
            answer.on('end', () => req.socket.destroy());
            return;
          }
          entry.outcome = answer.statusCode ?? 502;
          res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
          if (watch && answer.statusCode === 200 && this.watchLag) this.lagEvents(url, answer, res, this.watchLag);
          else answer.pipe(res);
          answer.on('error', () => res.destroy());
          if (watch) this.openWatches.set(req.socket, entry);
          if (watch && this.faultRate > 0) this.cutLater(req.socket, entry);
        },
      );
      forward.on('error', () => res.destroy());
      // The client gave up (an informer aborting its watch): so does the request upstream.
      res.on('close', () => {
        if (!res.writableFinished) forward.destroy();
        if (this.openWatches.get(req.socket) === entry) this.openWatches.delete(req.socket);
      });
      req.pipe(forward);
    });
    this.server.on('secureConnection', (socket: Socket) => {
      this.handshakes++;
      this.sockets.add(socket);
      socket.on('close', () => {
        this.sockets.delete(socket);
        this.openWatches.delete(socket);
      });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Faults on: `rate` of the requests fail, and every open watch is cut after a while. */
  startFaults(rate: number, watchCutMs: [number, number] = this.watchCutMs): void {
    const wasOff = this.faultRate === 0;
    this.faultRate = rate;
    this.watchCutMs = watchCutMs;
    // The watches opened before the faults are cut too: an operator's informers watch for minutes, and
    // without this none of its watches would end (nor meet an in-band 410 when opened again) in the window.
    if (wasOff && rate > 0) {
      for (const [socket, entry] of this.openWatches) if (!socket.destroyed) this.cutLater(socket, entry);
    }
  }

  stopFaults(): void {
    this.faultRate = 0;
  }

  /** Every request whose path matches `paths` is answered 503 until `endOutage`, e.g. the Lease's. */
  startOutage(paths: RegExp): void {
    this.outage = paths;
  }

  endOutage(): void {
    this.outage = undefined;
  }

  /**
   * From now on `rate` of the watches (0: none) are answered by the proxy itself as the watch cache answers
   * an expired resourceVersion: HTTP 200, one ERROR event with a 410 Expired Status, and the end, all in one
   * write, so the client reads the answer whole, as it does behind a proxy that buffers short answers. The
   * first watch after it is turned on always is, so that a run with few new watches still meets one.
   */
  expireWatchesInBand(rate: number): void {
    this.inBandExpiryRate = rate;
    this.inBandFirst = rate > 0;
  }

  get injectedTotal(): number {
    return Object.values(this.injected).reduce((a, b) => a + b, 0);
  }

  close(): void {
    this.server.closeAllConnections();
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    this.upstream.destroy();
  }

  private answerExpired(res: ServerResponse, entry: ProxiedRequest): void {
    this.inBandExpired++;
    entry.outcome = 'in-band-410';
    res.writeHead(200, { 'content-type': 'application/json' });
    // end() corks the socket: the head, the chunk and the last chunk go out as one write (one TLS record).
    res.end(EXPIRED_EVENT);
  }

  private pickFault(): Fault {
    return FAULTS[Math.floor(this.random() * FAULTS.length)] ?? '500';
  }

  private cutLater(socket: Socket, entry: ProxiedRequest): void {
    const [min, max] = this.watchCutMs;
    const timer = setTimeout(
      () => {
        if (this.faultRate === 0 || socket.destroyed) return;
        this.injected['watch-cut']++;
        entry.outcome = 'watch-cut';
        socket.destroy();
      },
      min + this.random() * (max - min),
    );
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  }

  private lagEvents(
    url: string,
    answer: IncomingMessage,
    res: ServerResponse,
    lag: { maxMs: number; seed: number },
  ): void {
    const resource = url.split('?')[0] ?? url;
    const opened = (this.watchesOpened.get(resource) ?? 0) + 1;
    this.watchesOpened.set(resource, opened);
    const seed = createHash('sha256').update(`${lag.seed} ${resource} ${opened}`).digest().readUInt32LE(0);
    const events = new LaggedWatch(res, lag.maxMs, seededRandom(seed), () => this.laggedEvents++);
    // Decoded as text, so that a character split across two chunks is not split in two.
    answer.setEncoding('utf8');
    answer.on('data', (text: string) => events.push(text));
    answer.on('end', () => events.end());
  }
}

/**
 * One watch stream on its way to the client, each event (a line of JSON, wherever the chunks split or join
 * them) held back by a random lag of up to `maxMs`, but never past the event before it: a watch falls
 * behind, it never reorders.
 */
export class LaggedWatch {
  private partial = '';
  private readonly queue: Array<{ line: string; at: number }> = [];
  private lastAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private upstreamEnded = false;

  constructor(
    private readonly out: Writable,
    private readonly maxMs: number,
    private readonly random: () => number,
    private readonly onEvent: () => void = () => {},
  ) {
    // The client went away, or the watch was cut: what is still held back goes nowhere.
    out.once('close', () => this.cancel());
  }

  /** More of the stream: its whole lines are queued, a trailing partial one waits for the rest. */
  push(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    const now = Date.now();
    for (const line of lines) {
      this.lastAt = Math.max(this.lastAt, now + this.random() * this.maxMs);
      this.queue.push({ line: `${line}\n`, at: this.lastAt });
      this.onEvent();
    }
    if (!this.timer) this.release();
  }

  /** The upstream ended: the client still gets each held event at its time, then the end. */
  end(): void {
    if (this.partial) this.queue.push({ line: this.partial, at: this.lastAt });
    this.partial = '';
    this.upstreamEnded = true;
    if (!this.timer) this.release();
  }

  private readonly release = (): void => {
    this.timer = undefined;
    if (this.out.destroyed || this.out.writableEnded) return;
    const now = Date.now();
    for (let head = this.queue[0]; head && head.at <= now; head = this.queue[0]) {
      this.queue.shift();
      this.out.write(head.line);
    }
    const next = this.queue[0];
    if (next) this.timer = setTimeout(this.release, next.at - now);
    else if (this.upstreamEnded) this.out.end();
  };

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.partial = '';
  }
}
