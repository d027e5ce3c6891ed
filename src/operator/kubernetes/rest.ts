/**
 * The ports' requests to the API server: JSON over node:http(s), authenticated by client-node's KubeConfig.
 *
 * Why not client-node's generated API clients: they wrap every request in node-fetch's streams and header
 * objects, a middleware promise chain and a typed ObjectSerializer that walks every field of the body and of
 * the answer, none of which the ports need: they send plain JSON and project the answer themselves
 * (objects.ts), or drop it unread (`ignoreAnswer`). Measured on the real API server at 300 clusters (issue 10,
 * the same machine, one run after the other): 36.1 ms of operator CPU per cluster to Ready through the
 * generated clients, 30.2 ms through this. On one request alone Node's own HTTPS client is the floor
 * (bench/request-cost.ts prints it beside both). undici (7.30, the last line for Node 20) is not cheaper: an
 * Event create through its Pool cost 439 µs of CPU alone and 236 µs with 16 in flight, bare node:https 371–455
 * and 223–273 µs in the same run; it would be one more dependency and a second TLS setup beside client-node's
 * for nothing. HTTP/2 (node:http2, one session per API server, as client-go does) was tried too and not kept:
 * on one request in isolation with 16 in flight it cost a fifth to a third less CPU, but in the 300-cluster
 * run the operator's CPU per cluster stayed where it was (two runs each way, one after the other: operator ÷
 * simulator CPU 0.99 and 0.94 over HTTP/1.1, 0.97 and 0.98 over HTTP/2), and fencing at the moment a request
 * leaves (fence.ts) would have needed a new seam.
 *
 * What stays client-node's: the KubeConfig and all of authentication. Every request asks
 * `kc.applySecurityAuthentication` for its headers and agent, exactly as the generated clients do, so the
 * library's answer (reused for a second, authentication.ts; dropped on a 401) carries the current token,
 * the agent is the pooled keep-alive one (connection.ts), and writes are fenced by leadership (fence.ts),
 * all through the seam those modules already wrap.
 *
 * A response outside 2xx is an {@link ApiError} carrying the code, the raw body and the headers; errors.ts
 * turns it into a PortError (keeping the Status reason and message, never the body). A failure on the way
 * is Node's own error with its `code` (ECONNRESET…), which errors.ts classes the same way; so is a server
 * that stays silent past the deadline ({@link REQUEST_SILENCE_MS}): ETIMEDOUT, a transient timeout.
 */
import { type Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { type HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { forgetAuthentication } from './authentication.ts';
import { readBody } from './body.ts';

/** The API server answered outside 2xx. The message never includes the body (it may quote a Secret). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    /** The raw response body: usually a `Status` object as JSON text. */
    readonly body: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(`HTTP ${code}`);
    this.name = 'ApiError';
  }
}

/** The Content-Types of the writes the ports make. */
export const CONTENT = {
  json: 'application/json',
  mergePatch: 'application/merge-patch+json',
  /** Server-side apply; a JSON body is valid YAML. */
  apply: 'application/apply-patch+yaml',
} as const;

export interface RestRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path below the server's URL, e.g. from `resourcePath` (resources.ts). */
  path: string;
  query?: Record<string, string | boolean | undefined>;
  body?: unknown;
  /** Default {@link CONTENT.json} when there is a body. */
  contentType?: string;
  /**
   * The caller needs nothing from a 2xx answer: its body is read off the connection and dropped unparsed.
   * Most writes are such (an Event, a child the pass does not read back), and the answer to a write is the
   * whole object as stored, managedFields included: parsing it would be work nothing uses. An answer outside
   * 2xx is still read, for the error.
   */
  ignoreAnswer?: boolean;
}

/**
 * How long a request may wait for the server's next byte before it is abandoned (ETIMEDOUT). Without a
 * deadline a server or proxy that took a request and never answered (frozen, or a half-open connection the
 * kernel has not noticed yet) held the pass, and its worker, for good. Above kube-apiserver's own request
 * timeout (60 s, `--request-timeout`), after which it answers 504 itself: that answer, which says what
 * happened, comes first from a server that is alive. Counted from the moment the request has a connection:
 * a request waiting for a free one in the pool waits on the requests ahead of it, each under its own deadline.
 */
export const REQUEST_SILENCE_MS = 70_000;

/** Where requests to one API server go: its origin, the path it may be served under, and Node's options for it. */
interface Target {
  origin: string;
  /** The server URL's own path (a proxy may serve the API under one), without the trailing slash. */
  prefix: string;
  options: ReturnType<typeof urlToHttpOptions>;
}

/**
 * The server URL parsed once, not per request: a request's URL was built, parsed and printed again by each
 * layer it passed (here, client-node's RequestContext, fence.ts, Node's request), about 2 % of the operator's
 * CPU at 300 clusters (issue 10). Kept for the last server only: a kubeconfig names one at a time.
 */
let lastTarget: { server: string; target: Target } | undefined;
function targetOf(server: string): Target {
  if (lastTarget?.server === server) return lastTarget.target;
  const url = new URL(server);
  const target = { origin: url.origin, prefix: url.pathname.replace(/\/+$/, ''), options: urlToHttpOptions(url) };
  lastTarget = { server, target };
  return target;
}

/** `?key=value&…` of the defined entries, encoded as URLSearchParams encodes them; empty when there are none. */
function queryOf(query: RestRequest['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

export class RestClient {
  constructor(
    private readonly kc: KubeConfig,
    private readonly silenceMs = REQUEST_SILENCE_MS,
  ) {}

  /**
   * Sends one request; answers the parsed JSON body (undefined when empty or ignored), or throws (see the
   * module).
   */
  async request<T = unknown>(req: RestRequest): Promise<T> {
    const server = this.kc.getCurrentCluster()?.server;
    if (!server) throw new Error('no current cluster in the kubeconfig');
    const target = targetOf(server);
    const path = `${target.prefix}${req.path}${queryOf(req.query)}`;
    const context = new RequestContext(`${target.origin}${path}`, req.method as HttpMethod);
    await this.kc.applySecurityAuthentication(context);
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: Record<string, string | number> = { ...context.getHeaders(), accept: CONTENT.json };
    if (payload !== undefined) {
      headers['content-type'] = req.contentType ?? CONTENT.json;
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const send = target.options.protocol === 'http:' ? httpRequest : httpsRequest;
    const agent = context.getAgent() as Agent | undefined;
    const options = { ...target.options, path, method: req.method, headers, ...(agent ? { agent } : {}) };
    const { code, text, answer } = await new Promise<{ code: number; text: string; answer: IncomingHttpHeaders }>(
      (resolve, reject) => {
        const sent = send(options, (res) => {
          const code = res.statusCode ?? 0;
          const keep = !req.ignoreAnswer || code < 200 || code > 299;
          readBody(res, keep).then((text) => resolve({ code, text, answer: res.headers }), reject);
        });
        sent.on('error', reject);
        sent.setTimeout(this.silenceMs, () =>
          sent.destroy(
            Object.assign(new Error(`${req.method} ${req.path}: no answer within ${this.silenceMs} ms`), {
              code: 'ETIMEDOUT',
            }),
          ),
        );
        sent.end(payload);
      },
    );
    if (code < 200 || code > 299) {
      // The credentials sent were refused: authenticate the next request afresh (authentication.ts).
      if (code === 401) forgetAuthentication(this.kc);
      throw new ApiError(code, text, answer);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}
