/**
 * One pooled keep-alive connection agent per API server, shared by every client the operator makes from a
 * KubeConfig (`makeApiClient(...)`, the informers' lists, the Lease, the events), and beside it one for the
 * informers' watches (ConnectionPool says why they are apart).
 *
 * Why this is hand-configured: client-node 1.4.0 builds a brand-new `https.Agent` (keep-alive off) for every
 * single request, in `applySecurityAuthentication` (the generated API clients) and in `applyToHTTPSOptions`
 * (our informer, client-node's Watch). Every request therefore opened a TCP connection and did a full TLS
 * handshake; measured against a real API server that was the operator's top CPU cost (issue 10: 45 s → 20 s of
 * CPU for 300 clusters once connections were reused). `makeApiClient` takes no agent and no configuration,
 * and `createAgent`, where the agents are built, is private (`reusePooledAgents` still spares it where it can).
 *
 * The seam: both methods are public (`applySecurityAuthentication` is the `SecurityAuthentication` interface
 * the generated clients call per request), and both finish by handing the request a fresh agent built from
 * the KubeConfig's TLS material. `withKeepAlive` wraps them on the instance: the library still does all the
 * authentication (tokens, exec plugins and refreshing tokens run per request and land in headers, untouched),
 * and we then swap its throw-away agent for the pooled one of that server with exactly the same TLS options
 * (CA, client certificate and key, skipTLSVerify → rejectUnauthorized, tls-server-name → servername…). If the
 * TLS material changes (a rotated CA file, an exec plugin returning a new client certificate), the next
 * request gets a new pooled agent and the old one drains: its idle sockets close on the idle timeout and its
 * busy ones (a watch) when their response ends. Proxied clusters (`proxy-url`) keep the library's own proxy
 * agent per request: those are subclasses we do not rebuild.
 */
import { type ClientRequest, Agent as HttpAgent, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import type { Cluster, KubeConfig, RequestContext } from '@kubernetes/client-node';

export interface KeepAliveOptions {
  /**
   * Concurrent requests per API server (watches not counted: they have their own agent, below). They carry
   * the reconcile passes (each worker's pass reads in parallel), the informers' lists, the Lease and the
   * events; at the default 2 workers fewer than 16 run at once. 64 leaves room for many more workers while
   * keeping a burst from opening hundreds of connections: beyond what the API server's priority and
   * fairness lets through at once, more connections only add handshakes and server-side goroutines, not
   * throughput. A request beyond the bound waits in the agent for a free connection; it never fails for it.
   */
  maxSockets?: number;
  /**
   * How long an idle pooled connection is kept. It must be below the API server's idle timeout (90 s in
   * kube-apiserver) and the idle timeouts of load balancers in front of it (often 60 s and up), so we never
   * write a request into a connection the other side is closing at that moment; and above the gaps between
   * requests of a steady operator (Lease renewals every 2 s), so those never reconnect.
   */
  idleTimeoutMs?: number;
}

export const KEEP_ALIVE_DEFAULTS: Required<KeepAliveOptions> = { maxSockets: 64, idleTimeoutMs: 30_000 };

/** The options of client-node's per-request agent that make up the TLS identity of a connection. */
const TLS_KEYS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
  'ciphers',
  'honorCipherOrder',
  'ecdhCurve',
  'clientCertEngine',
  'crl',
  'dhparam',
  'secureOptions',
  'secureProtocol',
  'sessionIdContext',
] as const satisfies ReadonlyArray<keyof HttpsAgentOptions>;

type TlsOptions = Partial<Pick<HttpsAgentOptions, (typeof TLS_KEYS)[number]>>;
type AnyAgent = HttpAgent | HttpsAgent;

interface Pooled {
  tls: TlsOptions | undefined;
  agent: AnyAgent;
  /** The watches' agent of the same server and TLS identity, made on the first watch. */
  watches?: AnyAgent;
}

/**
 * The pooled agents of one KubeConfig, one per API server URL; plus, beside each, one for watches.
 *
 * Watches get an agent of their own because each holds its connection for minutes: in the bounded agent,
 * as many watches as `maxSockets` (an install watching many namespaces has one informer per kind and
 * namespace) would take every connection and every other request would wait forever. The watches' agent
 * is not bounded (the operator's informers decide how many watches exist) and keeps connections alive too,
 * so the watch an informer starts when the server ended the previous one reuses its connection.
 */
export class ConnectionPool {
  private readonly byServer = new Map<string, Pooled>();
  private readonly options: Required<KeepAliveOptions>;

  constructor(options: KeepAliveOptions = {}) {
    this.options = { ...KEEP_ALIVE_DEFAULTS, ...options };
  }

  /**
   * The pooled agent to use instead of `made`, the agent client-node just built for a request to `server`;
   * `made` itself when it is not a plain http(s) agent (a proxy agent).
   */
  agentFor<A extends AnyAgent | undefined>(server: string | undefined, made: A): A | AnyAgent {
    if (!server || !made) return made;
    const current = this.byServer.get(server);
    // Already the pooled one: client-node's factory was handed it (reusePooledAgents).
    if (made === current?.agent) return made;
    const prototype = Object.getPrototypeOf(made);
    const secure = prototype === HttpsAgent.prototype;
    if (!secure && prototype !== HttpAgent.prototype) return made;
    const tls = secure ? tlsOptionsOf((made as HttpsAgent).options) : undefined;
    if (current && sameTls(current.tls, tls)) return current.agent;
    const agent = this.make(tls, secure, this.options.maxSockets);
    this.byServer.set(server, { tls, agent });
    return agent;
  }

  /**
   * The pooled TLS agent of `server` when its TLS identity is that of `options` (what client-node is about to
   * build a request's agent from), so that none need be built; undefined when there is none yet, it is a
   * plain http one, or the identity changed (then the agent client-node builds goes through `agentFor`).
   */
  pooledFor(server: string | undefined, options: HttpsAgentOptions): AnyAgent | undefined {
    const current = server === undefined ? undefined : this.byServer.get(server);
    if (!current || !(current.agent instanceof HttpsAgent)) return undefined;
    return sameTls(current.tls, tlsOptionsOf(options)) ? current.agent : undefined;
  }

  /**
   * The watches' agent beside `agent`, a pooled agent `agentFor` returned (same server, same TLS options);
   * `agent` itself when it is not one of this pool's (a proxy agent, or one of an older TLS identity).
   */
  watchAgentFor<A extends AnyAgent | undefined>(agent: A): A | AnyAgent {
    const pooled = [...this.byServer.values()].find((p) => p.agent === agent);
    if (!pooled) return agent;
    pooled.watches ??= this.make(pooled.tls, pooled.agent instanceof HttpsAgent, Number.POSITIVE_INFINITY);
    return pooled.watches;
  }

  /** The pooled agents, for tests and shutdown. */
  agents(): AnyAgent[] {
    return [...this.byServer.values()].flatMap((p) => (p.watches ? [p.agent, p.watches] : [p.agent]));
  }

  /** Closes every pooled connection, busy ones included. */
  destroy(): void {
    for (const agent of this.agents()) agent.destroy();
    this.byServer.clear();
  }

  private make(tls: TlsOptions | undefined, secure: boolean, maxSockets: number): AnyAgent {
    const options = {
      keepAlive: true,
      maxSockets,
      maxFreeSockets: Math.min(maxSockets, this.options.maxSockets),
      // Node applies `timeout` to pooled sockets: an idle one is closed when it fires. A busy one (a quiet
      // watch) only gets a 'timeout' event nobody acts on, so long watches are not cut.
      timeout: this.options.idleTimeoutMs,
      // Reuse the most recently used connection: after a burst, the surplus sits idle and times out, so the
      // pool shrinks back to what the steady load needs.
      scheduling: 'lifo' as const,
    };
    return secure ? new HttpsAgent({ ...tls, ...options }) : new HttpAgent(options);
  }
}

const pools = new WeakMap<KubeConfig, ConnectionPool>();

/**
 * Makes every request of `kc` (and of every client made from it, before or after this call) go through one
 * pooled keep-alive agent per API server. Idempotent; returns `kc`.
 */
export function withKeepAlive(kc: KubeConfig, options: KeepAliveOptions = {}): KubeConfig {
  if (pools.has(kc)) return kc;
  const pool = new ConnectionPool(options);
  pools.set(kc, pool);
  const server = () => kc.getCurrentCluster()?.server;
  reusePooledAgents(kc, pool);
  const authenticate = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (context: RequestContext) => {
    await authenticate(context);
    const agent = pool.agentFor(server(), context.getAgent());
    if (agent) context.setAgent(agent);
  };
  // Also reached through applyToFetchOptions (client-node's Watch) and by our informer.
  const toHttpsOptions = kc.applyToHTTPSOptions.bind(kc);
  kc.applyToHTTPSOptions = async (opts) => {
    await toHttpsOptions(opts);
    opts.agent = pool.agentFor(server(), opts.agent);
  };
  return kc;
}

/**
 * client-node builds a request's agent in its private `createAgent(cluster, options)`, which both wrapped methods
 * end with, only for us to swap it for the pooled one: where the pool already holds a TLS agent of that server
 * with the same TLS options, it is handed back from there instead and none is built. Building an `https.Agent`
 * and comparing its options took about 2 % of the operator's CPU at 300 clusters (issue 10). Proxies, plain
 * http and a changed identity still go to the library's own method; and if a client-node release renames it,
 * nothing breaks: the swap in the wrappers alone then does the pooling, as before.
 */
function reusePooledAgents(kc: KubeConfig, pool: ConnectionPool): void {
  type CreateAgent = (cluster: Cluster | null, options: HttpsAgentOptions) => unknown;
  const library = kc as unknown as { createAgent?: CreateAgent };
  const create = library.createAgent;
  if (typeof create !== 'function') return;
  library.createAgent = (cluster, options) =>
    (!cluster?.proxyUrl && pool.pooledFor(cluster?.server, options)) || create.call(kc, cluster, options);
}

/**
 * Aborts `request` when `signal` aborts, as Node's own `signal` option of a request does, except once its
 * response has arrived whole: that one is left to end (and drained if nobody reads it), so its connection goes
 * back to the pool.
 *
 * Why not Node's option: it destroys the socket with an AbortError even then. A short answer that arrived in
 * one read, such as a watch's in-band 410 (HTTP 200, one ERROR event, the end), is complete before its reader
 * sees the event that makes the informer abort; the response's 'end', still to come, hands the kept-alive
 * socket back to the agent and takes the request's 'error' listener off it, and the AbortError the socket
 * emits a tick later has no listener left: the process dies (issue 28; Node 20 flags the gap in
 * `responseKeepAlive`). A response still arriving is cut, as before: its socket is not given back until it
 * ends, so the request's listener is still there to take the error. The request must be read (given a
 * response callback): the listener added here would otherwise keep Node from draining an unread answer.
 */
export function abortOnSignal(request: ClientRequest, signal: AbortSignal): void {
  let response: IncomingMessage | undefined;
  request.once('response', (res: IncomingMessage) => {
    response = res;
  });
  const abort = () => {
    if (response?.complete) response.resume();
    else request.destroy(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
  };
  if (signal.aborted) {
    abort();
    return;
  }
  signal.addEventListener('abort', abort, { once: true });
  // One controller outlives many requests (an informer's watches): each takes its listener off as it ends.
  request.once('close', () => signal.removeEventListener('abort', abort));
}

/** The pool `withKeepAlive` installed on `kc`, if any. */
export function connectionPoolOf(kc: KubeConfig): ConnectionPool | undefined {
  return pools.get(kc);
}

/** The TLS identity in an agent's options (undefined ones left out, as an agent built from them has them). */
function tlsOptionsOf(options: HttpsAgentOptions): TlsOptions {
  const tls: Record<string, unknown> = {};
  for (const key of TLS_KEYS) {
    const value = options[key];
    if (value !== undefined) tls[key] = value;
  }
  return tls as TlsOptions;
}

function sameTls(a: TlsOptions | undefined, b: TlsOptions | undefined): boolean {
  if (!a || !b) return a === b;
  return TLS_KEYS.every((key) => sameValue(a[key], b[key]));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  return a === b;
}
