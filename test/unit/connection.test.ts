/**
 * The pooled keep-alive agent (src/operator/kubernetes/connection.ts) against a local TLS server that plays a
 * tiny API server: it demands a client certificate signed by the test CA, serves its own certificate from that
 * CA, and counts TLS handshakes and requests. So each test shows both that the TLS settings of the KubeConfig
 * survive the swap of agents (or the handshake would fail) and how many connections the requests cost.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import {
  createServer as createHttpServer,
  Agent as HttpAgent,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  KubeConfig,
  RequestContext,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/operator/domain/objects.ts';
import {
  ConnectionPool,
  connectionPoolOf,
  KEEP_ALIVE_DEFAULTS,
  withKeepAlive,
} from '../../src/operator/kubernetes/connection.ts';
import { Informer } from '../../src/operator/kubernetes/informer.ts';
import { loadKubeConfig } from '../../src/operator/kubernetes/kubeconfig.ts';
import { createPki, type Pki } from '../../src/tools/control-plane/certs.ts';

const b64 = (file: string) => readFileSync(file).toString('base64');

/** Enough items that the body is sent in several chunks (Transfer-Encoding: chunked). */
const namespaceList = JSON.stringify({
  kind: 'NamespaceList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '7' },
  items: Array.from({ length: 60 }, (_, i) => ({ metadata: { name: `ns-${i}`, resourceVersion: '7' } })),
});

interface Seen {
  handshakes: number;
  requests: number;
  /** Authorization header and client certificate subject of each request. */
  auth: string[];
  clientCn: string[];
}

/** Routes of the fake API server. */
function handle(req: IncomingMessage, res: ServerResponse, seen: Seen): void {
  seen.requests++;
  seen.auth.push(req.headers.authorization ?? '');
  const socket = req.socket as TLSSocket;
  if (typeof socket.getPeerCertificate === 'function')
    seen.clientCn.push(String(socket.getPeerCertificate().subject?.CN));
  const url = new URL(req.url ?? '/', 'https://x');
  res.setHeader('content-type', 'application/json');
  if (url.pathname === '/api/v1/namespaces' && url.searchParams.get('watch') === 'true') {
    // A watch that stays quiet longer than the pool's idle timeout, then reports one more event.
    res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '8' } } })}\n`);
    const quietMs = Number(url.searchParams.get('quietMs') ?? '0');
    if (quietMs > 0) {
      setTimeout(() => {
        res.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'late', resourceVersion: '9' } } })}\n`);
      }, quietMs);
    }
    return;
  }
  if (url.pathname === '/api/v1/namespaces') {
    // Two writes, a turn of the event loop apart: a chunked body, as the API server sends large lists.
    const half = Math.floor(namespaceList.length / 2);
    res.write(namespaceList.slice(0, half));
    setImmediate(() => res.end(namespaceList.slice(half)));
    return;
  }
  if (url.pathname.startsWith('/apis/pgfsm.io/v1alpha1/postgresclusterclasses')) {
    res.end(JSON.stringify({ apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresClusterClassList', items: [] }));
    return;
  }
  res.statusCode = 404;
  res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 404, message: 'not found' }));
}

let dir: string;
let pki: Pki;
const kcs: KubeConfig[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-connection-'));
  pki = await createPki(join(dir, 'pki'));
});

afterEach(() => {
  for (const kc of kcs.splice(0)) connectionPoolOf(kc)?.destroy();
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function tlsServer(options: { requireClientCert: boolean }) {
  const seen: Seen = { handshakes: 0, requests: 0, auth: [], clientCn: [] };
  const server = createHttpsServer(
    {
      cert: readFileSync(pki.serverCert),
      key: readFileSync(pki.serverKey),
      ca: readFileSync(pki.caCert),
      requestCert: options.requireClientCert,
      rejectUnauthorized: options.requireClientCert,
      // Longer than any test: only the client closes idle connections here.
      keepAliveTimeout: 60_000,
    },
    (req, res) => handle(req, res, seen),
  );
  server.on('secureConnection', () => seen.handshakes++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    server,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function kubeConfig(cluster: Record<string, unknown>, user: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', skipTLSVerify: false, ...cluster }],
    users: [{ name: 'test', ...user }],
    contexts: [{ name: 'test', cluster: 'test', user: 'test' }],
    currentContext: 'test',
  });
  kcs.push(kc);
  return kc;
}

const certUser = () => ({ certData: b64(pki.adminCert), keyData: b64(pki.adminKey) });

async function agentOfRequest(kc: KubeConfig): Promise<unknown> {
  const context = new RequestContext(`${kc.getCurrentCluster()?.server}/api/v1/namespaces`, HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  return context.getAgent();
}

describe('withKeepAlive', () => {
  it('gives every API client of one KubeConfig the same agent, with the KubeConfig’s TLS options', async () => {
    const kc = withKeepAlive(kubeConfig({ server: 'https://127.0.0.1:1', caData: b64(pki.caCert) }, certUser()));
    const first = await agentOfRequest(kc);
    const second = await agentOfRequest(kc);
    const informerOptions: { agent?: unknown } = {};
    await kc.applyToHTTPSOptions(informerOptions);
    expect(first).toBeInstanceOf(HttpsAgent);
    expect(second).toBe(first);
    expect(informerOptions.agent).toBe(first);
    expect(connectionPoolOf(kc)?.agents()).toEqual([first]);
    const { options } = first as HttpsAgent;
    expect(options).toMatchObject({
      keepAlive: true,
      maxSockets: KEEP_ALIVE_DEFAULTS.maxSockets,
      timeout: KEEP_ALIVE_DEFAULTS.idleTimeoutMs,
    });
    expect(Buffer.from(options.ca as Buffer).equals(readFileSync(pki.caCert))).toBe(true);
    expect(Buffer.from(options.cert as Buffer).equals(readFileSync(pki.adminCert))).toBe(true);
    expect(Buffer.from(options.key as Buffer).equals(readFileSync(pki.adminKey))).toBe(true);
    // Without the wrapper, client-node builds a fresh agent for every request.
    const plain = kubeConfig({ server: 'https://127.0.0.1:1', caData: b64(pki.caCert) }, certUser());
    expect(await agentOfRequest(plain)).not.toBe(await agentOfRequest(plain));
  });

  it('builds no agent for a request while the pooled one has its TLS identity, and a new one when it changes', async () => {
    const kc = kubeConfig({ server: 'https://127.0.0.1:1', caData: b64(pki.caCert) }, certUser());
    // client-node's private factory, counted: it runs for every request without the pool.
    const library = kc as unknown as { createAgent: (...args: unknown[]) => unknown };
    const create = library.createAgent;
    let built = 0;
    library.createAgent = (...args) => {
      built++;
      return create.apply(kc, args);
    };
    withKeepAlive(kc);
    const first = await agentOfRequest(kc);
    for (let i = 0; i < 3; i++) expect(await agentOfRequest(kc)).toBe(first);
    const informerOptions: { agent?: unknown } = {};
    await kc.applyToHTTPSOptions(informerOptions);
    expect(informerOptions.agent).toBe(first);
    expect(built).toBe(1);
    // A rotated client certificate: the library builds the agent again, and the pool keeps a new one.
    const user = kc.getCurrentUser() as { certData?: string };
    user.certData = b64(pki.caCert);
    const rotated = (await agentOfRequest(kc)) as HttpsAgent;
    expect(rotated).not.toBe(first);
    expect(Buffer.from(rotated.options.cert as Buffer).equals(readFileSync(pki.caCert))).toBe(true);
    expect(await agentOfRequest(kc)).toBe(rotated);
    expect(built).toBe(2);
  });

  it('keeps skipTLSVerify and tls-server-name', async () => {
    const kc = withKeepAlive(
      kubeConfig({ server: 'https://127.0.0.1:1', skipTLSVerify: true, tlsServerName: 'localhost' }, { token: 't' }),
    );
    const agent = (await agentOfRequest(kc)) as HttpsAgent;
    expect(agent.options.rejectUnauthorized).toBe(false);
    expect(agent.options.servername).toBe('localhost');
    expect(agent.options.keepAlive).toBe(true);
  });

  it('makes requests of several API clients over one TLS connection with the client certificate', async () => {
    const api = await tlsServer({ requireClientCert: true });
    try {
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()));
      const core = kc.makeApiClient(CoreV1Api);
      const custom = kc.makeApiClient(CustomObjectsApi);
      for (let i = 0; i < 5; i++) {
        expect((await core.listNamespace()).items).toHaveLength(60);
        await custom.listClusterCustomObject({
          group: 'pgfsm.io',
          version: 'v1alpha1',
          plural: 'postgresclusterclasses',
        });
        await expect(
          kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: 'a', name: 'b' }),
        ).rejects.toMatchObject({
          code: 404,
        });
      }
      expect(api.seen.requests).toBe(15);
      expect(api.seen.handshakes).toBe(1);
      expect(new Set(api.seen.clientCn)).toEqual(new Set(['admin']));

      // The same requests without the pool: one handshake each. This is what the test above is worth.
      const before = api.seen.handshakes;
      const plain = kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()).makeApiClient(CoreV1Api);
      for (let i = 0; i < 3; i++) await plain.listNamespace();
      expect(api.seen.handshakes - before).toBe(3);
    } finally {
      api.close();
    }
  });

  it('refuses a server its CA did not sign, as without the pool', async () => {
    const api = await tlsServer({ requireClientCert: false });
    try {
      const otherCa = await createPki(join(dir, 'other-pki'));
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(otherCa.caCert) }, { token: 't' }));
      await expect(kc.makeApiClient(CoreV1Api).listNamespace()).rejects.toThrow(/certificate/);
      expect(api.seen.requests).toBe(0);
    } finally {
      api.close();
    }
  });

  it('runs a refreshing exec credential plugin per request over the kept connection', async () => {
    const api = await tlsServer({ requireClientCert: false });
    try {
      // The plugin hands out a new, already expired token on every call, so client-node calls it every time.
      const counter = join(dir, 'exec-counter');
      writeFileSync(counter, '0');
      const plugin = join(dir, 'exec-plugin.cjs');
      writeFileSync(
        plugin,
        `const fs = require('node:fs');
const n = Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8')) + 1;
fs.writeFileSync(${JSON.stringify(counter)}, String(n));
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',
  status: { token: 'token-' + n, expirationTimestamp: '2000-01-01T00:00:00Z' } }));
`,
      );
      chmodSync(plugin, 0o700);
      const kc = withKeepAlive(
        kubeConfig(
          { server: api.url, caData: b64(pki.caCert) },
          { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin] } },
        ),
      );
      const core = kc.makeApiClient(CoreV1Api);
      for (let i = 0; i < 3; i++) await core.listNamespace();
      expect(api.seen.auth).toEqual(['Bearer token-1', 'Bearer token-2', 'Bearer token-3']);
      expect(api.seen.handshakes).toBe(1);
    } finally {
      api.close();
    }
  });

  it('lets the informer list over the shared connections and watch over the watches’ agent', async () => {
    const api = await tlsServer({ requireClientCert: true });
    try {
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()));
      const informer = namespaceInformer(kc);
      informer.start();
      await until(() => informer.stats.watches === 1);
      expect(informer.list()).toHaveLength(60);
      await kc.makeApiClient(CoreV1Api).listNamespace();
      await informer.stop();
      // The list's connection went back to the pool and carried the API client's request; the watch has one.
      expect(api.seen.requests).toBe(3);
      expect(api.seen.handshakes).toBe(2);
      const [requests, watches] = connectionPoolOf(kc)?.agents() ?? [];
      expect((watches as HttpsAgent).options).toMatchObject({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
      expect(Buffer.from((watches as HttpsAgent).options.cert as Buffer).equals(readFileSync(pki.adminCert))).toBe(
        true,
      );
      expect(watches).not.toBe(requests);
    } finally {
      api.close();
    }
  });

  it('never lets watches take the connections requests need', async () => {
    const api = await tlsServer({ requireClientCert: true });
    const informers = Array.from({ length: 3 }, () => undefined as Informer<KubeObject> | undefined);
    try {
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()), {
        maxSockets: 2,
      });
      // Three watches that stay open, more than the request agent's two connections.
      for (let i = 0; i < informers.length; i++) {
        const informer = namespaceInformer(kc);
        informers[i] = informer;
        informer.start();
      }
      await until(() => informers.every((i) => i?.stats.watches === 1));
      const answered = kc.makeApiClient(CoreV1Api).listNamespace();
      const stuck = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('request starved')), 10_000));
      expect((await Promise.race([answered, stuck]))?.items).toHaveLength(60);
    } finally {
      await Promise.all(informers.map((i) => i?.stop()));
      api.close();
    }
  });

  it('keeps a watch open while it is quieter than the idle timeout, then reuses its connection', async () => {
    const api = await tlsServer({ requireClientCert: true });
    try {
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()), {
        idleTimeoutMs: 100,
      });
      const lines = await watchLines(kc, `${api.url}/api/v1/namespaces?watch=true&quietMs=500`);
      expect(lines.map((l) => l.type)).toEqual(['BOOKMARK', 'ADDED']);
      await kc.makeApiClient(CoreV1Api).listNamespace();
      expect(api.seen.handshakes).toBe(1);
    } finally {
      api.close();
    }
  });

  it('closes an idle pooled connection after the idle timeout', async () => {
    const api = await tlsServer({ requireClientCert: true });
    try {
      let closed = 0;
      api.server.on('secureConnection', (socket) => socket.on('close', () => closed++));
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()), {
        idleTimeoutMs: 100,
      });
      const core = kc.makeApiClient(CoreV1Api);
      await core.listNamespace();
      // The server keeps connections for 60 s: this close is the client's.
      await until(() => closed === 1);
      await core.listNamespace();
      expect(api.seen.handshakes).toBe(2);
    } finally {
      api.close();
    }
  });

  it('queues requests beyond maxSockets and completes every one of them', async () => {
    const api = await tlsServer({ requireClientCert: true });
    try {
      const kc = withKeepAlive(kubeConfig({ server: api.url, caData: b64(pki.caCert) }, certUser()), {
        maxSockets: 2,
      });
      const core = kc.makeApiClient(CoreV1Api);
      // Chunked bodies on reused connections with requests waiting for them: node-fetch 2's chunked-ending
      // check has reported false "Premature close" errors in this situation on some Node versions.
      const results = await Promise.allSettled(Array.from({ length: 200 }, () => core.listNamespace()));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(api.seen.requests).toBe(200);
      expect(api.seen.handshakes).toBe(2);
    } finally {
      api.close();
    }
  });

  it('pools plain http servers with an http agent', async () => {
    const seen: Seen = { handshakes: 0, requests: 0, auth: [], clientCn: [] };
    const server = createHttpServer({ keepAliveTimeout: 60_000 }, (req, res) => handle(req, res, seen));
    let connections = 0;
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const kc = withKeepAlive(kubeConfig({ server: url, skipTLSVerify: true }, { token: 't' }));
      const core = kc.makeApiClient(CoreV1Api);
      for (let i = 0; i < 3; i++) await core.listNamespace();
      expect(seen.requests).toBe(3);
      expect(connections).toBe(1);
      const [agent] = connectionPoolOf(kc)?.agents() ?? [];
      expect(agent).toBeInstanceOf(HttpAgent);
      expect(agent).not.toBeInstanceOf(HttpsAgent);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('is installed by loadKubeConfig, once however often it is applied', async () => {
    const file = join(dir, 'kubeconfig.json');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'c', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': b64(pki.caCert) } },
        ],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const kc = loadKubeConfig({ kubeconfig: file });
    kcs.push(kc);
    const pool = connectionPoolOf(kc);
    expect(pool).toBeDefined();
    expect(withKeepAlive(kc)).toBe(kc);
    expect(connectionPoolOf(kc)).toBe(pool);
    expect(await agentOfRequest(kc)).toBe(await agentOfRequest(kc));
  });
});

describe('ConnectionPool', () => {
  const server = 'https://127.0.0.1:6443';

  it('keeps one agent per server while the TLS identity stays, and a new one when it changes', () => {
    const pool = new ConnectionPool();
    const a = pool.agentFor(server, new HttpsAgent({ ca: Buffer.from('ca'), cert: Buffer.from('c1') }));
    expect(pool.agentFor(server, new HttpsAgent({ ca: Buffer.from('ca'), cert: Buffer.from('c1') }))).toBe(a);
    // A rotated client certificate (e.g. from an exec plugin) must not ride on connections made with the old one.
    const b = pool.agentFor(server, new HttpsAgent({ ca: Buffer.from('ca'), cert: Buffer.from('c2') }));
    expect(b).not.toBe(a);
    expect((b as HttpsAgent).options.cert).toEqual(Buffer.from('c2'));
    expect(
      pool.agentFor('https://other:6443', new HttpsAgent({ ca: Buffer.from('ca'), cert: Buffer.from('c2') })),
    ).not.toBe(b);
    expect(pool.agents()).toHaveLength(2);
    pool.destroy();
  });

  it('gives each request agent one watches’ agent with its TLS options, and leaves foreign agents alone', () => {
    const pool = new ConnectionPool({ maxSockets: 3 });
    const requests = pool.agentFor(server, new HttpsAgent({ ca: Buffer.from('ca') }));
    const watches = pool.watchAgentFor(requests);
    expect(pool.watchAgentFor(requests)).toBe(watches);
    expect((watches as HttpsAgent).options.ca).toEqual(Buffer.from('ca'));
    expect((requests as HttpsAgent).maxSockets).toBe(3);
    expect((watches as HttpsAgent).maxSockets).toBe(Number.POSITIVE_INFINITY);
    const foreign = new HttpsAgent();
    expect(pool.watchAgentFor(foreign)).toBe(foreign);
    pool.destroy();
  });

  it('leaves proxy agents to client-node', () => {
    class ProxyAgent extends HttpsAgent {}
    const pool = new ConnectionPool();
    const proxy = new ProxyAgent();
    expect(pool.agentFor(server, proxy)).toBe(proxy);
    expect(pool.agents()).toEqual([]);
  });
});

const namespaceInformer = (kc: KubeConfig) =>
  new Informer<KubeObject>(kc, {
    resource: { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
  });

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The lines of one watch response read through the KubeConfig's options, as the informer reads them. */
async function watchLines(kc: KubeConfig, url: string): Promise<Array<{ type: string }>> {
  const options: Parameters<KubeConfig['applyToHTTPSOptions']>[0] = {};
  await kc.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ...options, method: 'GET' } as object, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve(
          body
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l)),
        ),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
