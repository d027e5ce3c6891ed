/**
 * The whole driver in real time: the operator (caches, controller, workers, probe server) runs the real
 * reconcile core against the in-memory API and the CNPG simulator (with millisecond delays), fed by
 * the in-memory watch sources (src/tools/memory/watch-sources.ts). A cluster must reach Ready purely through watch events and
 * requeues, survive an operator restart, and the operator must stop gracefully.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import type { EventSink } from '../../../src/operator/core/ports.ts';
import { defaultSettings } from '../../../src/operator/domain/observation.ts';
import { type RunningOperator, startOperator } from '../../../src/operator/driver/operator.ts';
import { type Leadership, type LeadershipCallbacks, SoleLeader } from '../../../src/operator/driver/sources.ts';
import { clusterObject, NS, standardClass } from '../../../src/tools/fixtures/simulation.ts';
import { MemoryApiServer, type StoredObject } from '../../../src/tools/memory/api-server.ts';
import { MemoryEventSink, memoryPorts } from '../../../src/tools/memory/ports.ts';
import { memoryWatchSources } from '../../../src/tools/memory/watch-sources.ts';
import { CnpgSimulator } from '../../../src/tools/simulation/cnpg-simulator.ts';

const realClock = { now: () => Date.now() };
const fast = { firstPhaseMs: 10, primaryMs: 30, replicaMs: 20, configurationMs: 20, roleMs: 10, poolerMs: 20 };

let running: RunningOperator | undefined;
let ticker: ReturnType<typeof setInterval> | undefined;
afterEach(async () => {
  clearInterval(ticker);
  await running?.stop();
  running = undefined;
});

async function start(
  api: MemoryApiServer,
  leadership: Leadership = new SoleLeader('test'),
  events: EventSink = new MemoryEventSink(realClock),
): Promise<RunningOperator> {
  running = await startOperator({
    sources: memoryWatchSources(api, realClock),
    ports: memoryPorts(api, realClock, events),
    // The requeue delay is long on purpose: progress must come from watch events, not from polling.
    settings: { ...defaultSettings, requeueDelayMs: 60_000 },
    leadership,
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
    const api = new MemoryApiServer();
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
    const api = new MemoryApiServer();
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

/** A lease handed out and taken back by the test. */
class LeaseByHand implements Leadership {
  readonly identity = 'by-hand';
  private leading = false;
  private callbacks: LeadershipCallbacks | undefined;
  isLeader(): boolean {
    return this.leading;
  }
  start(callbacks: LeadershipCallbacks): void {
    this.callbacks = callbacks;
    this.lead(false);
  }
  lead(continued: boolean): void {
    this.leading = true;
    this.callbacks?.onStartedLeading(continued);
  }
  lose(): void {
    if (!this.leading) return;
    this.leading = false;
    this.callbacks?.onStoppedLeading();
  }
  async stop(): Promise<void> {
    this.lose();
  }
}

describe('Events refused because this replica stopped leading', () => {
  /**
   * A pooled cluster to Ready; the lease is lost right after EndpointsPublished, the first Event of the pass that
   * stored Ready, has been sent, so the fence refuses the rest of that pass's Events (Ready).
   * Answers what was sent before, and what the operator's next term sends.
   */
  async function losingTheLeaseAtReady(continued: boolean) {
    const api = new MemoryApiServer();
    const cnpg = new CnpgSimulator(api, realClock, fast);
    ticker = setInterval(() => cnpg.advance(), 5);
    api.create(standardClass());
    const lease = new LeaseByHand();
    const sink = new MemoryEventSink(realClock);
    let lost = false;
    const events: EventSink = {
      async emit(regarding, event) {
        await sink.emit(regarding, event);
        if (event.reason === 'EndpointsPublished' && !lost) {
          lost = true;
          lease.lose();
        }
      },
    };
    const operator = await start(api, lease, events);
    api.create(clusterObject('orders', { connectionPoolerEnabled: true }));
    await expect.poll(() => lost, { timeout: 10_000, interval: 20 }).toBe(true);
    await operator.passes.delivery.idle();
    const before = sink.events.map((e) => e.reason);
    const reconciles = async () =>
      Number(
        /controller_runtime_reconcile_total\{[^}]*result="success"\} (\d+)/.exec(
          await operator.metrics.registry.metrics(),
        )?.[1],
      );
    const passes = await reconciles();
    lease.lead(continued);
    // The next term's first pass of the cluster has run, and whatever it sent has gone.
    await expect.poll(reconciles, { timeout: 5_000, interval: 20 }).toBeGreaterThan(passes);
    await operator.passes.delivery.idle();
    return { before, after: sink.events.map((e) => e.reason).slice(before.length) };
  }

  it('are kept, and sent by its next term when nobody else led in between', async () => {
    const { before, after } = await losingTheLeaseAtReady(true);
    expect(before.at(-1)).toBe('EndpointsPublished');
    expect(before).not.toContain('Ready');
    // Only what was refused: what went out before the loss is not sent again.
    expect(after).toEqual(['Ready']);
  });

  it('are dropped when another replica led in between: sent now, they would come after its own', async () => {
    const { before, after } = await losingTheLeaseAtReady(false);
    expect(before.at(-1)).toBe('EndpointsPublished');
    expect(after).toEqual([]);
  });
});
