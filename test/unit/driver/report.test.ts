/** The controller's log of a pass: only events that were sent are logged as events; the others as not sent. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { PortError } from '../../../src/operator/core/errors.ts';
import type { ReconcileOutcome } from '../../../src/operator/core/reconcile.ts';
import { normal, warning } from '../../../src/operator/domain/effects.ts';
import { Controller } from '../../../src/operator/driver/controller.ts';
import type { ObjectSource, WatchSources } from '../../../src/operator/driver/sources.ts';
import type { Timers } from '../../../src/operator/driver/workqueue.ts';

const orders: PostgresCluster = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name: 'orders' },
  spec: { class: 'standard' },
};

const source = (objects: PostgresCluster[] = []): ObjectSource<PostgresCluster> => ({
  resource: 'fake',
  synced: true,
  lastSeen: 0,
  fresh: () => true,
  get: (namespace, name) => objects.find((o) => o.metadata.namespace === namespace && o.metadata.name === name),
  list: () => objects,
  on: () => () => {},
  start: () => {},
  stop: async () => {},
});

/** Timers that never fire: the pass's requeue is never taken. */
const stillTimers: Timers = { now: () => 0, setTimeout: () => ({}), clearTimeout: () => {} };

/** The lines the controller logs for one pass with this outcome. */
async function linesFor(outcome: Omit<ReconcileOutcome, 'key'>): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'trace' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  let passed: () => void = () => {};
  const pass = new Promise<void>((resolve) => {
    passed = resolve;
  });
  const empty = source() as unknown;
  const controller = new Controller({
    sources: {
      clusters: source([orders]),
      classes: empty,
      cnpgClusters: empty,
      poolers: empty,
      secrets: empty,
      configMaps: empty,
      deployments: empty,
    } as WatchSources,
    reconcile: async (key) => {
      passed();
      return { key, ...outcome };
    },
    workers: 1,
    logger,
    timers: stillTimers,
    resyncPeriodMs: 0,
  });
  controller.startWorkers();
  await pass;
  // Stopping waits for the pass in flight, and its report.
  await controller.stopWorkers();
  await controller.shutDown();
  return lines;
}

const ready = normal('Ready', 'BecomeReady', 'Cluster is up and running');
const degraded = warning('Degraded', 'BecomeDegraded', 'Cluster degraded: a message not to log again');

describe('report', () => {
  it('logs a sent event as `event` and an unsent one as `event not sent`, with its reason but not its message', async () => {
    const lines = await linesFor({
      found: true,
      from: 'Provisioning.ConfigMap',
      to: 'Ready',
      requeue: { kind: 'none' },
      statusWritten: true,
      writes: 0,
      events: [ready],
      unsent: [{ event: degraded, error: new PortError('timeout', 'create Event Degraded: timed out') }],
    });
    const events = lines.filter((l) => l.msg === 'event');
    expect(events.map((l) => l.reason)).toEqual(['Ready']);
    const notSent = lines.filter((l) => l.msg === 'event not sent');
    expect(notSent).toHaveLength(1);
    expect(notSent[0]).toMatchObject({
      level: 40,
      namespace: 'team-a',
      name: 'orders',
      reason: 'EventNotSent',
      eventReason: 'Degraded',
      action: 'BecomeDegraded',
      error: 'create Event Degraded: timed out',
    });
    expect(JSON.stringify(notSent[0])).not.toContain('a message not to log again');
  });

  it('logs no `event not sent` line when every event was sent', async () => {
    const lines = await linesFor({
      found: true,
      from: 'Ready',
      to: 'Ready',
      requeue: { kind: 'none' },
      statusWritten: false,
      writes: 0,
      events: [ready],
    });
    expect(lines.filter((l) => l.msg === 'event not sent')).toEqual([]);
    expect(lines.filter((l) => l.msg === 'event')).toHaveLength(1);
  });
});
