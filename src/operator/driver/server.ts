/**
 * The probe and metrics endpoint. Readiness means "this replica's caches are complete and its watches are
 * alive", never "this replica leads": a standby that could never turn Ready would block every rollout
 * while the old pod keeps the lease. Leadership is a metric (pgfsm_leader) instead.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { ObjectSource } from './sources.ts';

export interface ReadinessCheck {
  name: string;
  ok: boolean;
  detail?: string;
}

/** One check per watched resource: synced after its first list, and its watch fresh. */
export function sourceChecks(sources: readonly ObjectSource[]): () => ReadinessCheck[] {
  return () =>
    sources.map((s) => {
      if (!s.synced) return { name: s.resource, ok: false, detail: 'not synced' };
      if (!s.fresh()) return { name: s.resource, ok: false, detail: 'watch stale' };
      return { name: s.resource, ok: true };
    });
}

export interface ServerOptions {
  /** `host:port`, `:port` (all interfaces) or a port number; port 0 picks a free one. */
  address: string;
  registry: Registry;
  readiness: () => ReadinessCheck[];
}

export interface ProbeServer {
  readonly server: Server;
  /** The bound port (useful with port 0). */
  readonly port: number;
  close(): Promise<void>;
}

export function parseAddress(address: string): { host: string | undefined; port: number } {
  const at = address.lastIndexOf(':');
  const host = at > 0 ? address.slice(0, at).replace(/^\[(.*)\]$/, '$1') : undefined;
  const port = Number(at >= 0 ? address.slice(at + 1) : address);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid listen address: ${address}`);
  return { host, port };
}

async function handle(options: ServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://probe').pathname;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  if (path === '/healthz' || path === '/livez') {
    // Answering at all proves the event loop runs; nothing else belongs in liveness.
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  if (path === '/readyz') {
    const checks = options.readiness();
    const ok = checks.every((c) => c.ok);
    const body = checks.map((c) => `[${c.ok ? '+' : '-'}]${c.name} ${c.ok ? 'ok' : c.detail}`).join('\n');
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${body}\n${ok ? 'ok' : 'not ready'}\n`);
    return;
  }
  if (path === '/metrics') {
    const text = await options.registry.metrics();
    res.writeHead(200, { 'content-type': options.registry.contentType }).end(text);
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
}

export async function startServer(options: ServerOptions): Promise<ProbeServer> {
  const server = createServer((req, res) => {
    handle(options, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`${error instanceof Error ? error.message : String(error)}\n`);
    });
  });
  const { host, port } = parseAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive scrapers would otherwise hold the close open.
        server.closeAllConnections();
      }),
  };
}
