/** The probe server: liveness always, readiness from cache sync and watch freshness, metrics. */
import { afterEach, describe, expect, it } from 'vitest';
import { OperatorMetrics } from '../../../src/operator/driver/metrics.ts';
import { type ProbeServer, parseAddress, sourceChecks, startServer } from '../../../src/operator/driver/server.ts';
import type { ObjectSource } from '../../../src/operator/driver/sources.ts';

interface FakeSource extends ObjectSource {
  synced: boolean;
  isFresh: boolean;
}

const fake = (resource: string): FakeSource => ({
  resource,
  synced: false,
  isFresh: false,
  lastSeen: 0,
  fresh() {
    return this.synced && this.isFresh;
  },
  get: () => undefined,
  list: () => [],
  on: () => () => {},
  start: () => {},
  stop: async () => {},
});

let server: ProbeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(path: string): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${server?.port}${path}`);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('probe server', () => {
  it('is live at once, ready only when every source is synced and fresh, whatever the leadership', async () => {
    const clusters = fake('postgresclusters');
    const secrets = fake('secrets');
    const metrics = new OperatorMetrics({ defaultMetrics: false });
    server = await startServer({
      address: '127.0.0.1:0',
      registry: metrics.registry,
      readiness: sourceChecks([clusters, secrets]),
    });

    expect(await get('/healthz')).toMatchObject({ status: 200, body: 'ok' });
    let ready = await get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toContain('[-]postgresclusters not synced');

    clusters.synced = true;
    clusters.isFresh = true;
    secrets.synced = true;
    ready = await get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toContain('[+]postgresclusters ok');
    expect(ready.body).toContain('[-]secrets watch stale');

    secrets.isFresh = true;
    expect(await get('/readyz')).toMatchObject({ status: 200 });
    // Leadership plays no part: a standby is ready too.
    metrics.setLeader(false);
    expect((await get('/readyz')).status).toBe(200);

    // A watch that goes silent makes the replica unready again.
    clusters.isFresh = false;
    expect(await get('/readyz')).toMatchObject({ status: 503 });
    expect(await get('/healthz')).toMatchObject({ status: 200 });
  });

  it('serves the registry at /metrics in the Prometheus text format', async () => {
    const metrics = new OperatorMetrics({ defaultMetrics: false });
    server = await startServer({ address: '127.0.0.1:0', registry: metrics.registry, readiness: () => [] });
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.type).toContain('text/plain');
    expect(res.body).toContain('controller_runtime_reconcile_total');
    expect((await get('/nope')).status).toBe(404);
  });

  it('parses listen addresses like controller-runtime flags', () => {
    expect(parseAddress(':8080')).toEqual({ host: undefined, port: 8080 });
    expect(parseAddress('127.0.0.1:9090')).toEqual({ host: '127.0.0.1', port: 9090 });
    expect(parseAddress('[::1]:9090')).toEqual({ host: '::1', port: 9090 });
    expect(parseAddress('8081')).toEqual({ host: undefined, port: 8081 });
    expect(() => parseAddress(':http')).toThrow(/invalid listen address/);
  });
});
