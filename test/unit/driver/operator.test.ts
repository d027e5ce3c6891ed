/**
 * The whole driver in real time: the operator (caches, controller, workers, probe server) runs the real
 * reconcile core against the in-memory API and the CNPG simulator (with millisecond delays), fed by
 * watch sources over the in-memory API. A cluster must reach Ready purely through watch events and
 * requeues, survive an operator restart, and the operator must stop gracefully.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { defaultSettings } from '../../../src/operator/domain/observation.ts';
import { type RunningOperator, startOperator } from '../../../src/operator/driver/operator.ts';
import {
  type ObjectSource,
  SoleLeader,
  type SourceEvent,
  type WatchSources,
} from '../../../src/operator/driver/sources.ts';
import { clusterObject, NS, standardClass } from '../../../src/tools/fixtures/simulation.ts';
import type { Change, MemoryApiServer, StoredObject } from '../../../src/tools/memory/api-server.ts';
import { MemoryEventSink, memoryPorts } from '../../../src/tools/memory/ports.ts';
import { CnpgSimulator } from '../../../src/tools/simulation/cnpg-simulator.ts';
import { Simulation } from '../../../src/tools/simulation/simulation.ts';

/** An informer over the in-memory API: lists on start, then follows its change notifications. */
class MemorySource<T extends KubeObject> implements ObjectSource<T> {
  synced = false;
  lastSeen = 0;
  private cache = new Map<string, T>();
  private readonly listeners = new Set<(e: SourceEvent<T>) => void>();
  private unsubscribe: (() => void) | undefined;
  constructor(
    private readonly api: MemoryApiServer,
    private readonly kind: string,
    readonly resource: string,
  ) {}
  fresh = () => this.synced;
  get = (namespace: string, name: string) => this.cache.get(`${namespace}/${name}`);
  list = (namespace?: string) =>
    [...this.cache.values()].filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  on(listener: (e: SourceEvent<T>) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  start() {
    this.unsubscribe = this.api.onChange((change) => this.onChange(change));
    for (const o of this.api.list<T>(this.kind)) this.apply('added', o);
    this.synced = true;
    this.lastSeen = Date.now();
  }
  async stop() {
    this.unsubscribe?.();
  }
  private onChange(change: Change) {
    if (change.object.kind === this.kind) this.apply(change.type, change.object as unknown as T);
  }
  private apply(type: Change['type'], object: T) {
    const key = `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    const old = this.cache.get(key);
    if (type === 'deleted') this.cache.delete(key);
    else this.cache.set(key, object);
    const event: SourceEvent<T> =
      type === 'deleted' ? { type: 'delete', object } : old ? { type: 'update', object, old } : { type: 'add', object };
    for (const l of this.listeners) l(event);
  }
}

const memorySources = (api: MemoryApiServer): WatchSources => ({
  clusters: new MemorySource<PostgresCluster>(api, 'PostgresCluster', 'postgresclusters'),
  classes: new MemorySource(api, 'PostgresClusterClass', 'postgresclusterclasses'),
  cnpgClusters: new MemorySource(api, 'Cluster', 'clusters'),
  poolers: new MemorySource(api, 'Pooler', 'poolers'),
  secrets: new MemorySource(api, 'Secret', 'secrets'),
  configMaps: new MemorySource(api, 'ConfigMap', 'configmaps'),
  deployments: new MemorySource(api, 'Deployment', 'deployments'),
});

const realClock = { now: () => Date.now() };
const fast = { firstPhaseMs: 10, primaryMs: 30, replicaMs: 20, configurationMs: 20, roleMs: 10, poolerMs: 20 };

let running: RunningOperator | undefined;
let ticker: ReturnType<typeof setInterval> | undefined;
afterEach(async () => {
  clearInterval(ticker);
  await running?.stop();
  running = undefined;
});

async function start(api: MemoryApiServer): Promise<RunningOperator> {
  running = await startOperator({
    sources: memorySources(api),
    ports: memoryPorts(api, realClock, new MemoryEventSink(realClock)),
    // The requeue delay is long on purpose: progress must come from watch events, not from polling.
    settings: { ...defaultSettings, requeueDelayMs: 60_000 },
    leadership: new SoleLeader('test'),
    workers: 2,
    metricsAddress: '127.0.0.1:0',
    logger: pino({ level: 'silent' }),
    resyncPeriodMs: 0,
  });
  return running;
}

const phaseOf = (api: MemoryApiServer, name: string) =>
  api.get<PostgresCluster>({ kind: 'PostgresCluster', namespace: NS, name })?.status?.phase;

describe('operator on the in-memory API', () => {
  it('drives a pooled cluster to Ready through watch events alone, then stops gracefully', async () => {
    // The Simulation only provides the API and the CNPG simulator here; its own queue is not used.
    const api = new Simulation().api;
    const cnpg = new CnpgSimulator(api, realClock, fast);
    ticker = setInterval(() => cnpg.advance(), 5);
    api.create(standardClass());
    const operator = await start(api);
    api.create(clusterObject('orders', { connectionPoolerEnabled: true }));

    await expect.poll(() => phaseOf(api, 'orders'), { timeout: 10_000, interval: 20 }).toBe('Ready');
    const base = `http://127.0.0.1:${operator.server.port}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/pgfsm_cluster_state\{namespace="team-a",name="orders",state="[^"]+"\} 1/);
    expect(metrics).toContain('pgfsm_leader 1');
    expect(metrics).toMatch(
      /controller_runtime_reconcile_total\{controller="postgrescluster",result="success"\} [1-9]/,
    );

    await operator.stop();
    running = undefined;
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('picks up what changed while it was down: a restarted operator enqueues every cluster', async () => {
    const api = new Simulation().api;
    const cnpg = new CnpgSimulator(api, realClock, fast);
    ticker = setInterval(() => cnpg.advance(), 5);
    api.create(standardClass());
    api.create(clusterObject('orders', { clusterDeletionPolicy: 'Delete' }));
    const first = await start(api);
    await expect.poll(() => phaseOf(api, 'orders'), { timeout: 10_000, interval: 20 }).toBe('Ready');
    await first.stop();
    running = undefined;

    // While no operator runs, the user deletes the cluster: only the finalizer holds it.
    api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'orders' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(api.get({ kind: 'PostgresCluster', namespace: NS, name: 'orders' })).toBeDefined();

    await start(api);
    await expect
      .poll(() => api.get({ kind: 'PostgresCluster', namespace: NS, name: 'orders' }), { timeout: 10_000 })
      .toBeUndefined();
    expect(api.list<StoredObject>('Cluster', NS)).toEqual([]);
  });
});
