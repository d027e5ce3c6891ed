/**
 * The CNPG simulator over an API server whose watches lag behind its writes (the real one, here a fake that
 * delivers a watch event only when the test says so): the simulator reads its own writes, so a step that
 * follows another at zero delay builds on it, and it looks only at the objects that changed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CnpgSimulator } from '../../../src/tools/simulation/cnpg-simulator.ts';
import { KubernetesSimulatorApi, versionIncludes } from '../../../src/tools/simulation/kubernetes-api.ts';

const ZERO = { firstPhaseMs: 0, primaryMs: 0, replicaMs: 0, configurationMs: 0, roleMs: 0, poolerMs: 0 };

interface Written {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** A fake API server: empty lists, watches held open, every PATCH answered with a fresh resourceVersion. */
class LaggingApiServer {
  readonly written: Written[] = [];
  private readonly watches = new Map<string, ServerResponse[]>();
  private version = 100;
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const list of this.watches.values()) for (const res of list) res.end();
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** A watch event for every watcher of `plural`. */
  deliver(plural: string, type: 'ADDED' | 'MODIFIED', object: Record<string, unknown>): void {
    for (const res of this.watches.get(plural) ?? []) res.write(`${JSON.stringify({ type, object })}\n`);
  }

  watching(plural: string): boolean {
    return (this.watches.get(plural)?.length ?? 0) > 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    let text = '';
    for await (const chunk of req) text += chunk;
    res.setHeader('content-type', 'application/json');
    const plural = url.pathname.split('/').at(-1) ?? '';
    if (req.method === 'GET' && url.searchParams.get('watch') === 'true') {
      res.writeHead(200);
      res.flushHeaders();
      this.watches.set(plural, [...(this.watches.get(plural) ?? []), res]);
      return;
    }
    if (req.method === 'GET') {
      res.end(JSON.stringify({ kind: 'List', metadata: { resourceVersion: '1' }, items: [] }));
      return;
    }
    const body = JSON.parse(text || '{}') as Record<string, unknown>;
    this.written.push({ method: req.method ?? '', path: url.pathname, body });
    const parts = url.pathname.split('/');
    const at = parts.indexOf('namespaces');
    res.end(
      JSON.stringify({
        ...body,
        metadata: { namespace: parts[at + 1], name: parts[at + 3], resourceVersion: String(++this.version) },
      }),
    );
  }
}

const cnpgCluster = (name: string, resourceVersion: string) => ({
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Cluster',
  metadata: { namespace: 'ns', name, resourceVersion, generation: 1 },
  spec: { instances: 1, imageName: 'postgres:17' },
});

const pooler = (name: string, resourceVersion: string) => ({
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Pooler',
  metadata: { namespace: 'ns', name, resourceVersion, uid: `uid-${name}`, generation: 1 },
  spec: { cluster: { name: 'c1' }, instances: 2, type: 'rw' },
});

async function eventually<T>(probe: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('timed out');
}

let server: LaggingApiServer;
let api: KubernetesSimulatorApi;

beforeEach(async () => {
  server = new LaggingApiServer();
  await server.start();
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain HTTP unless TLS verification is off (there is no TLS to verify).
    clusters: [{ name: 'fake', server: server.url, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'nobody' }],
    currentContext: 'fake',
  });
  api = new KubernetesSimulatorApi(kc);
  await api.start();
  await eventually(() =>
    ['clusters', 'poolers', 'deployments', 'secrets'].every((p) => server.watching(p)) ? true : undefined,
  );
});

afterEach(async () => {
  await api.stop();
  await server.stop();
});

describe('KubernetesSimulatorApi', () => {
  it('reads its own writes until the watch shows them, then the watch', async () => {
    server.deliver('clusters', 'ADDED', cnpgCluster('c1', '5'));
    await eventually(() => api.get({ kind: 'Cluster', namespace: 'ns', name: 'c1' }));
    const read = () => api.get({ kind: 'Cluster', namespace: 'ns', name: 'c1' }) as { status?: object } | undefined;

    api.put({ ...cnpgCluster('c1', '5'), status: { phase: 'Setting up primary', phaseReason: 'x' } } as never, true);
    expect(read()?.status).toEqual({ phase: 'Setting up primary', phaseReason: 'x' });
    api.put({ ...cnpgCluster('c1', '5'), status: { phase: 'Cluster in healthy state' } } as never, true);
    expect(read()?.status).toEqual({ phase: 'Cluster in healthy state' });
    await api.idle();
    // Only what changed, in order, a removed key as null: a merge patch of the whole status would keep it.
    expect(server.written.map((w) => w.body)).toEqual([
      { status: { phase: 'Setting up primary', phaseReason: 'x' } },
      { status: { phase: 'Cluster in healthy state', phaseReason: null } },
    ]);
    expect(api.unseenWrites).toBe(1);

    // The watch shows an older version (the first write): the overlay stays.
    server.deliver('clusters', 'MODIFIED', { ...cnpgCluster('c1', '101'), status: { phase: 'Setting up primary' } });
    await new Promise((r) => setTimeout(r, 50));
    expect(read()?.status).toEqual({ phase: 'Cluster in healthy state' });
    // The watch shows the last write, with a change of someone else's: from now on the watch is the truth.
    server.deliver('clusters', 'MODIFIED', {
      ...cnpgCluster('c1', '102'),
      status: { phase: 'Cluster in healthy state', other: 1 },
    });
    await eventually(() => (api.unseenWrites === 0 ? true : undefined));
    expect(read()?.status).toEqual({ phase: 'Cluster in healthy state', other: 1 });
  });

  it('a copy per read: changing what was read is not a write already made', async () => {
    server.deliver('clusters', 'ADDED', { ...cnpgCluster('c1', '5'), status: { phase: 'a' } });
    await eventually(() => api.get({ kind: 'Cluster', namespace: 'ns', name: 'c1' }));
    const read = api.get({ kind: 'Cluster', namespace: 'ns', name: 'c1' }) as unknown as { status: { phase: string } };
    read.status.phase = 'b';
    api.put(read as never, true);
    await api.idle();
    expect(server.written.map((w) => w.body)).toEqual([{ status: { phase: 'b' } }]);
  });

  it("at zero delays the simulator gets a pooler's Deployment ready though the watch never showed the Deployment", async () => {
    const simulator = new CnpgSimulator(api, { now: () => Date.now() }, ZERO);
    try {
      server.deliver('poolers', 'ADDED', pooler('c1-pooler-rw', '7'));
      await eventually(() => (server.written.length >= 3 ? true : undefined));
      simulator.advance();
      await api.idle();
      const deploymentStatus = server.written
        .filter((w) => w.path.endsWith('/deployments/c1-pooler-rw/status'))
        .map((w) => w.body.status);
      expect(deploymentStatus).toEqual([
        { replicas: 2, readyReplicas: 0 },
        { replicas: 2, readyReplicas: 2 },
      ]);
    } finally {
      simulator.stop();
    }
  });

  it('the simulator looks at the changed objects only, never the whole fleet, per event', async () => {
    for (let i = 0; i < 50; i++) server.deliver('clusters', 'ADDED', cnpgCluster(`c${i}`, String(10 + i)));
    await eventually(() => (api.list('Cluster').length === 50 ? true : undefined));
    let lists = 0;
    const list = api.list.bind(api);
    api.list = ((kind: string, namespace?: string) => {
      lists++;
      return list(kind, namespace);
    }) as typeof api.list;
    const simulator = new CnpgSimulator(api, { now: () => Date.now() }, ZERO);
    try {
      simulator.advance();
      const atStart = lists;
      // Fifty spec changes, each its own event, each followed by the simulator's own steps.
      for (let i = 0; i < 50; i++) {
        server.deliver('clusters', 'MODIFIED', { ...cnpgCluster(`c${i}`, String(1000 + i)), spec: { instances: 2 } });
      }
      await eventually(() => (server.written.length >= 150 ? true : undefined));
      for (let i = 0; i < 5; i++) simulator.advance();
      expect(lists).toBe(atStart);
    } finally {
      simulator.stop();
    }
  });
});

describe('versionIncludes', () => {
  it('compares etcd revisions as numbers, anything else only when equal', () => {
    expect(versionIncludes('10', '9')).toBe(true);
    expect(versionIncludes('9', '10')).toBe(false);
    expect(versionIncludes(undefined, '1')).toBe(false);
    expect(versionIncludes('a', 'a')).toBe(true);
    expect(versionIncludes('b', 'a')).toBe(false);
  });
});
