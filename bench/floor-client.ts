/**
 * The floor under "operator CPU per cluster to Ready" (issue 10): a client that makes the operator's API
 * traffic and does nothing else. api-server.bench.ts runs it as two processes of its own beside one more
 * repetition of the fleet (`--floor SIZES`):
 *
 * - `watch`: during the fleet's run to Ready, opens the watches `pgfsm run` opens (the same kinds, all
 *   namespaces, metadata only where the operator asks for metadata only: watch-sources.ts) and parses every
 *   event, keeping nothing. The events it receives are the operator's own, as they happen.
 * - `replay`: afterwards, sends the writes the operator sent to Ready, with their bodies as the API server's
 *   audit log recorded them, each at the same offset from the start as the operator sent it, and drops every
 *   answer unread. Before the timed replay, the first of them go once as dry runs (`dryRun=All`: the same
 *   request and answer, nothing stored), 64 at a time: the replay is then timed on compiled code and warm
 *   connections, as the operator's requests are, and not on V8's first interpretation of Node's HTTP client
 *   or on handshakes.
 *
 * Only Node's own HTTPS client, one keep-alive agent, JSON.parse and JSON.stringify: no client-node, no cache,
 * no decision. What these two processes spend per cluster is what any Node client pays to make that traffic;
 * `pgfsm run`'s CPU above it is what pgfsm's own work costs. The bench compiles this file with esbuild and
 * runs it as plain JavaScript, as the image runs the operator.
 *
 *   node floor-client.mjs <config.json>     (FloorConfig; the report is one JSON line on stdout)
 */
import { readFileSync } from 'node:fs';
import { Agent, type RequestOptions, request } from 'node:https';
import type { Socket } from 'node:net';
import { pathToFileURL } from 'node:url';

export interface FloorWatch {
  /** The collection's path, e.g. `/apis/apps/v1/deployments`. */
  path: string;
  metadataOnly: boolean;
  /** The operator's label selector on this kind, if it has one. */
  labelSelector?: string;
}

export interface FloorRequest {
  /** ms after the first request. */
  at: number;
  method: 'POST' | 'PATCH' | 'PUT';
  /** Path and query, as the operator sent it. */
  uri: string;
  contentType: string;
  /** Serialised when it is sent, as the operator serialises its bodies. */
  body: unknown;
}

/** Who the client is: a bearer token (the operator's), or a client certificate (the bench's admin). */
export type FloorAuth = { ca: string } & ({ token: string } | { cert: string; key: string });

export type FloorConfig = { server: string; auth: FloorAuth } & (
  | { mode: 'watch'; watches: FloorWatch[] }
  | { mode: 'replay'; requests: FloorRequest[] }
);

/** What `replay` prints: its CPU from the first request sent to the last answer, and the answers' codes. */
export interface ReplayReport {
  cpuMs: number;
  wallMs: number;
  codes: Record<string, number>;
  /** Connections opened while timed, each a TLS handshake, beyond the ones the dry runs opened. */
  connections: number;
}

/** What `watch` prints when it is stopped (SIGTERM): the events it parsed. */
export interface WatchReport {
  events: number;
  bytes: number;
  /** Watches the server ended before the client was stopped (it asks for an hour): events it did not see. */
  ended: number;
}

/** Kept alive, and at most this many connections, as the operator's pool (connection.ts). */
const MAX_SOCKETS = 64;

/** Metadata only, as the operator asks for it: a list's items and a watch's objects each have their own type. */
const partial = (as: string) => `application/json;as=${as};g=meta.k8s.io;v=v1`;

function main(config: FloorConfig): void {
  const { auth } = config;
  const agent = new Agent({
    keepAlive: true,
    maxSockets: MAX_SOCKETS,
    ca: auth.ca,
    ...('cert' in auth ? { cert: auth.cert, key: auth.key } : {}),
  });
  const authorization = 'token' in auth ? { authorization: `Bearer ${auth.token}` } : {};
  const options = (method: string, headers: Record<string, string | number>): RequestOptions => ({
    method,
    agent,
    headers: { ...authorization, ...headers },
  });
  if (config.mode === 'watch') watchAll(config.server, config.watches, options);
  else replay(config.server, config.requests, options, agent);
}

type Options = (method: string, headers: Record<string, string | number>) => RequestOptions;

function watchAll(server: string, watches: FloorWatch[], options: Options): void {
  const report: WatchReport = { events: 0, bytes: 0, ended: 0 };
  let open = 0;
  for (const watch of watches) {
    const accept = (as: string) => ({ accept: watch.metadataOnly ? partial(as) : 'application/json' });
    const selector = watch.labelSelector ? `labelSelector=${encodeURIComponent(watch.labelSelector)}` : '';
    const list = `${server}${watch.path}${selector ? `?${selector}` : ''}`;
    // A list for the version to watch from, as an informer starts; then the watch, read line by line.
    request(list, options('GET', accept('PartialObjectMetadataList')), (res) => {
      if (res.statusCode !== 200) throw new Error(`GET ${watch.path}: HTTP ${res.statusCode}`);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        const version = (JSON.parse(text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
        const query = `watch=true&allowWatchBookmarks=true&resourceVersion=${version}&timeoutSeconds=3600${selector ? `&${selector}` : ''}`;
        request(`${server}${watch.path}?${query}`, options('GET', accept('PartialObjectMetadata')), (stream) => {
          if (stream.statusCode !== 200) throw new Error(`watch ${watch.path}: HTTP ${stream.statusCode}`);
          if (++open === watches.length) console.log('watching');
          let pending = '';
          stream.on('end', () => report.ended++);
          stream.setEncoding('utf8');
          stream.on('data', (chunk: string) => {
            report.bytes += chunk.length;
            pending += chunk;
            let end = pending.indexOf('\n');
            while (end >= 0) {
              JSON.parse(pending.slice(0, end));
              report.events++;
              pending = pending.slice(end + 1);
              end = pending.indexOf('\n');
            }
          });
        }).end();
      });
    }).end();
  }
  process.on('SIGTERM', () => {
    console.log(JSON.stringify(report));
    process.exit(0);
  });
}

/** Dry runs sent before the replay is timed: V8 compiles the request path before it counts. */
const WARM_UP = 200;

function replay(server: string, requests: FloorRequest[], options: Options, agent: Agent): void {
  const codes: Record<string, number> = {};
  let connections = 0;
  // Connections are told apart by their socket, not by `reusedSocket`: Node sets that only on a request that
  // found the socket idle in the pool, so a request that waited for a busy one (the pool at its bound) reads
  // false although nothing new was opened. Counted so, 300 clusters' replay "opened" 742–952 connections over
  // a pool of 64.
  const seen = new WeakSet<Socket>();
  const send = (r: FloorRequest, uri: string, answered: (code: string) => void) => {
    const body = JSON.stringify(r.body);
    const headers = {
      'content-type': r.contentType,
      'content-length': Buffer.byteLength(body),
      accept: 'application/json',
    };
    const sent = request(`${server}${uri}`, options(r.method, headers), (res) => {
      res.on('end', () => answered(String(res.statusCode)));
      res.resume();
    });
    sent.on('socket', (socket) => {
      if (seen.has(socket)) return;
      seen.add(socket);
      connections++;
    });
    sent.on('error', (error) => answered(error.message));
    sent.end(body);
  };
  const timed = () => {
    const start = process.cpuUsage();
    const startedAt = performance.now();
    connections = 0;
    let answered = 0;
    const count = (code: string) => {
      codes[code] = (codes[code] ?? 0) + 1;
      if (++answered < requests.length) return;
      const cpu = process.cpuUsage(start);
      const report: ReplayReport = {
        cpuMs: (cpu.user + cpu.system) / 1000,
        wallMs: performance.now() - startedAt,
        codes,
        connections,
      };
      console.log(JSON.stringify(report));
      agent.destroy();
    };
    // Each at its offset from the first, as the operator sent it: the same pace, so as many in flight at once.
    for (const r of requests) {
      setTimeout(() => send(r, r.uri, count), Math.max(0, r.at - (performance.now() - startedAt)));
    }
  };
  // The dry runs go MAX_SOCKETS at a time, so that they also open the pool's connections: the timed replay then
  // pays a handshake only beyond them, and the floor leaves out the handshakes the operator's warm pool made.
  const warmUps = requests.slice(0, WARM_UP);
  let next = 0;
  let chains = Math.min(MAX_SOCKETS, warmUps.length);
  const warmUp = () => {
    const r = warmUps[next++];
    if (r) send(r, `${r.uri}${r.uri.includes('?') ? '&' : '?'}dryRun=All`, warmUp);
    else if (--chains === 0) timed();
  };
  if (requests.length === 0)
    console.log(JSON.stringify({ cpuMs: 0, wallMs: 0, codes, connections } satisfies ReplayReport));
  else for (let i = chains; i > 0; i--) warmUp();
}

// Only as a program: the bench imports this module's types.
const configPath = process.argv[2];
if (configPath && import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(JSON.parse(readFileSync(configPath, 'utf8')) as FloorConfig);
}
