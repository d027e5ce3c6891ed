/**
 * The requeue decision of a failed pass, by error class: conflict → at once (its own backoff), transient
 * (resets, client timeouts, 5xx) → short backoff, 429 → its Retry-After, a namespace being deleted → the
 * state's requeue delay, anything else → backoff. And on the shipped driver: a fleet whose API calls fail
 * for a while is back within seconds, not at the next resync.
 */
import { describe, expect, it } from 'vitest';
import { stepMeta } from '../../machines/meta.ts';
import { type ErrorClass, PortError, retryFor, worstError } from '../../src/operator/core/errors.ts';
import { requeueOf } from '../../src/operator/core/outcome.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { clusterObject, NS, simulationWith, statusOf, untilReady } from '../../src/tools/fixtures/simulation.ts';

const key = { namespace: NS, name: 'inventory' };

/** Ports whose status write fails once with `error` after `arm()`. */
function failingStatusWrite(error: PortError) {
  let armed = false;
  const wrap = (ports: Ports): Ports => {
    const writeStatus = ports.clusters.writeStatus.bind(ports.clusters);
    ports.clusters.writeStatus = async (...args) => {
      if (armed) {
        armed = false;
        throw error;
      }
      return writeStatus(...args);
    };
    return ports;
  };
  return { wrap, arm: () => (armed = true) };
}

/** A pass of a cluster on its way to Ready whose status write fails with `error`. */
async function requeueAfter(error: PortError) {
  const fault = failingStatusWrite(error);
  const sim = simulationWith([clusterObject('inventory')], { ports: fault.wrap });
  await sim.run(1_000);
  sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'inventory' });
  fault.arm();
  return (await sim.reconcileNow(key)).requeue;
}

describe('the requeue decision by error class', () => {
  it('a conflict requeues at once', async () => {
    expect(await requeueAfter(new PortError('conflict', 'modified'))).toEqual({ kind: 'immediate' });
  });

  it.each(['unavailable', 'timeout', 'serverTimeout'] as const)('%s is transient', async (c) => {
    expect(await requeueAfter(new PortError(c, c))).toMatchObject({ kind: 'transient' });
  });

  it('a 429 carries its Retry-After to the queue, and goes without one when the server gave none', async () => {
    expect(await requeueAfter(new PortError('tooManyRequests', 'slow', undefined, 3_000))).toMatchObject({
      kind: 'throttled',
      retryAfterMs: 3_000,
    });
    const bare = await requeueAfter(new PortError('tooManyRequests', 'slow'));
    expect(bare.kind).toBe('throttled');
    expect(bare).not.toHaveProperty('retryAfterMs');
  });

  it('only a 429 carries a Retry-After to the queue', async () => {
    const requeue = await requeueAfter(new PortError('unavailable', '503', undefined, 3_000));
    expect(requeue).not.toHaveProperty('retryAfterMs');
  });

  it('a namespace being deleted waits the state’s requeue delay, never escalated', async () => {
    expect(await requeueAfter(new PortError('namespaceTerminating', 'terminating'))).toEqual({
      kind: 'after',
      ms: 15_000,
    });
  });

  it.each(['forbidden', 'notFound', 'other'] as const)('%s backs off', async (c) => {
    expect((await requeueAfter(new PortError(c, c))).kind).toBe('backoff');
  });

  it('a status the API server refuses at admission waits for the object to change, which its watch reports', async () => {
    expect(await requeueAfter(new PortError('rejected', 'invalid'))).toEqual({ kind: 'none' });
  });

  it('the error that waits longest decides: persistent over 429 over transient over conflict', () => {
    const of = (c: ErrorClass) => new PortError(c, c);
    const worst = (...classes: ErrorClass[]) => (worstError(classes.map(of)) as PortError).errorClass;
    expect(worst('conflict', 'unavailable')).toBe('unavailable');
    expect(worst('unavailable', 'tooManyRequests', 'timeout')).toBe('tooManyRequests');
    expect(worst('tooManyRequests', 'forbidden', 'conflict')).toBe('forbidden');
    expect(retryFor('other')).toBe('persistent');
  });
});

describe('recovery from short API trouble on the shipped driver', () => {
  it('a cluster whose status writes were refused with 503 for a minute is Ready seconds after, not at the resync', async () => {
    let failing = true;
    const wrap = (ports: Ports): Ports => {
      const writeStatus = ports.clusters.writeStatus.bind(ports.clusters);
      ports.clusters.writeStatus = async (...args) => {
        if (failing) throw new PortError('unavailable', 'HTTP 503');
        return writeStatus(...args);
      };
      return ports;
    };
    const sim = simulationWith([clusterObject('inventory')], { ports: wrap });
    await sim.run(60_000);
    expect(() => statusOf(sim, 'inventory')).toThrow(/no status/);
    failing = false;
    // Transient backoff is capped at 30 s (± 20 %): the cluster is looked at again within 36 s, and reaches
    // Ready as an untroubled one would from there.
    await sim.run(36_000);
    expect(statusOf(sim, 'inventory').state).toBeDefined();
    await untilReady(sim, 'inventory', 60_000);
  });
});

describe('the requeue of a waiting state with a verdict that changes by time alone', () => {
  const meta = stepMeta('waits for CNPG', 'cluster');
  const facts = { error: undefined, refusedOnly: false, cutShort: false, meta, since: 0, settings: defaultSettings };

  it('looks again when the wait ends, when that comes before the state’s own delay', () => {
    expect(requeueOf({ ...facts, now: 1_000, recheckAt: 5_000 })).toEqual({ kind: 'after', ms: 4_100 });
  });

  it('keeps the state’s own delay when the wait ends later, and never looks again in the past', () => {
    expect(requeueOf({ ...facts, now: 1_000, recheckAt: 60_000 })).toEqual({
      kind: 'after',
      ms: defaultSettings.requeueDelayMs,
    });
    expect(requeueOf({ ...facts, now: 9_000, recheckAt: 5_000 })).toEqual({ kind: 'after', ms: 100 });
  });

  it('a state that waits on nothing (Ready) looks again only when a verdict changes by time (a running backup)', () => {
    const ready = { ...meta, requeue: 'none' as const };
    expect(requeueOf({ ...facts, meta: ready, now: 1_000 })).toEqual({ kind: 'none' });
    expect(requeueOf({ ...facts, meta: ready, now: 1_000, recheckAt: 6_000 })).toEqual({ kind: 'after', ms: 5_100 });
  });
});
