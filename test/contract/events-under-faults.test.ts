/**
 * Events are neither lost nor duplicated under faults (issue 9, item 6): the same lifecycle run fault-free
 * and under injected faults emits the same events, counted as a multiset of (reason, object).
 */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import {
  clusterObject,
  editSpec,
  NS,
  passwordSecret,
  simulationWith,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';
import {
  conflictOnEverySecondStatusWrite,
  failingWrite,
  landingLate,
  losingTheFirstAnswers,
  override,
} from './support/faulty-ports.ts';

/** A pooled cluster with a managed role and a plain one, to Ready; a switchover, a spec edit, a deletion. */
async function lifecycle(ports?: (ports: Ports) => Ports): Promise<Simulation> {
  const sim = simulationWith(
    [
      clusterObject('orders', {
        connectionPoolerEnabled: true,
        managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
      }),
      clusterObject('plain', { clusterDeletionPolicy: 'Delete' }),
      passwordSecret('app-password', 'app'),
    ],
    ports ? { ports } : {},
  );
  await untilReady(sim, 'orders');
  await untilReady(sim, 'plain');
  sim.cnpg.switchover(NS, 'orders', 30_000);
  await sim.run(2 * 60_000);
  expect(statusOf(sim, 'orders').state).toBe('Ready');
  editSpec(sim, 'orders', (spec) => ({ ...spec, instances: 2 }));
  await untilReady(sim, 'orders');
  await sim.run(2 * 60_000);
  // Someone deletes a child: the cluster is no longer ready until pgfsm has put it back.
  sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
  await untilReady(sim, 'orders');
  await sim.run(2 * 60_000);
  sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'plain' });
  await sim.run(2 * 60_000);
  expect(sim.api.get({ kind: 'PostgresCluster', namespace: NS, name: 'plain' })).toBeUndefined();
  return sim;
}

/** Each event as `reason object`, sorted: a multiset. */
const eventMultiset = (sim: Simulation) => sim.events.events.map((e) => `${e.reason} ${e.regarding.name}`).sort();

describe('events under faults', () => {
  it.each([false, true])(
    'a status write that conflicts loses no announcement and repeats none (odd writes fail: %s)',
    async (odd) => {
      const faultFree = eventMultiset(await lifecycle());
      const faulty = await lifecycle(conflictOnEverySecondStatusWrite(odd));
      // The faults did happen: passes ended in a conflict.
      expect(faulty.passes.filter((p) => p.requeue.kind === 'immediate').length).toBeGreaterThan(3);
      expect(eventMultiset(faulty)).toEqual(faultFree);
    },
  );

  it('a status write that lands late, after the next pass read the status before it, loses no announcement', async () => {
    const faultFree = eventMultiset(await lifecycle());
    const faulty = await lifecycle(landingLate);
    // The late writes did land under the next pass, whose own write then conflicted.
    expect(faulty.passes.filter((p) => p.requeue.kind === 'immediate').length).toBeGreaterThan(3);
    expect(eventMultiset(faulty)).toEqual(faultFree);
  });

  it('a create whose answer is lost is read back: its own event, no failure Warning, nothing twice', async () => {
    const faultFree = eventMultiset(await lifecycle());
    const faulty = await lifecycle(losingTheFirstAnswers);
    expect(eventMultiset(faulty)).toEqual(faultFree);
    expect(faulty.events.events.filter((e) => e.type === 'Warning' && e.reason.endsWith('Failed'))).toEqual([]);
  });

  it('both at once', async () => {
    const faultFree = eventMultiset(await lifecycle());
    const faulty = await lifecycle((ports) => losingTheFirstAnswers(conflictOnEverySecondStatusWrite()(ports)));
    expect(eventMultiset(faulty)).toEqual(faultFree);
  });
});

describe('a write whose answer was lost', () => {
  const key = { namespace: NS, name: 'orders' };
  /**
   * The pass that creates the superuser Secret, through `ports`: the first, which adds the finalizer and
   * follows that write's answer to the Secret's step (core/follow.ts).
   */
  async function creatingTheSecret(ports: (ports: Ports) => Ports) {
    const sim = simulationWith([clusterObject('orders')], { ports });
    const outcome = await sim.reconcileNow(key);
    return { sim, outcome };
  }

  it('counts a create that landed as done, with its own event', async () => {
    const { sim, outcome } = await creatingTheSecret(failingWrite('createSecret', true, 'timeout').ports);
    expect(outcome.error).toBeUndefined();
    expect(outcome.events.map((e) => e.reason)).toContain('SuperuserSecretCreated');
    expect(sim.events.events.filter((e) => e.type === 'Warning')).toEqual([]);
  });

  it('counts a create that landed as done even when its first reads back fail too', async () => {
    const lost = failingWrite('createSecret', true, 'timeout');
    let failingReads = 0;
    const ports = (base: Ports): Ports => {
      const faulty = lost.ports(base);
      return {
        ...faulty,
        secrets: override(faulty.secrets, {
          get: async (ref: Parameters<Ports['secrets']['get']>[0]) => {
            // The reads right after the lost answer (the write disarms the fault) fail twice.
            if (!lost.armed && failingReads < 2) {
              failingReads++;
              throw new PortError('unavailable', 'injected: read back failed');
            }
            return faulty.secrets.get(ref);
          },
        }),
      };
    };
    const { sim, outcome } = await creatingTheSecret(ports);
    expect(failingReads).toBe(2);
    expect(outcome.error).toBeUndefined();
    expect(outcome.events.map((e) => e.reason)).toContain('SuperuserSecretCreated');
    expect(sim.events.events.filter((e) => e.type === 'Warning')).toEqual([]);
  });

  it('reports a create that did not land as the failure it is', async () => {
    const { sim, outcome } = await creatingTheSecret(failingWrite('createSecret', false, 'timeout').ports);
    expect(outcome.error).toBeInstanceOf(PortError);
    expect(sim.api.get({ kind: 'Secret', namespace: NS, name: 'orders-superuser' })).toBeUndefined();
    expect(sim.events.events.map((e) => e.reason)).toEqual(['SuperUserSecretFailed']);
  });

  it('does not read back after an answer that says no, even if the object is there', async () => {
    const { sim, outcome } = await creatingTheSecret(failingWrite('createSecret', true, 'conflict').ports);
    expect((outcome.error as PortError).errorClass).toBe('conflict');
    expect(sim.events.events.map((e) => e.reason)).not.toContain('SuperuserSecretCreated');
  });

  it('does not take an object that exists but lacks what was applied for a write that landed', async () => {
    const fault = failingWrite('applyCluster', false, 'timeout');
    fault.armed = false;
    const sim = simulationWith([clusterObject('orders')], { ports: fault.ports });
    await untilReady(sim, 'orders');
    // The CNPG Cluster exists, owned by this cluster, but the apply of the new spec never reaches it.
    fault.armed = true;
    editSpec(sim, 'orders', (spec) => ({ ...spec, instances: 2 }));
    const outcome = await sim.reconcileNow(key);
    expect(outcome.error).toBeInstanceOf(PortError);
    expect(outcome.events.map((e) => e.reason)).toEqual(['ClusterApplyFailed']);
  });
});

describe('an event that cannot be sent', () => {
  it('is reported as not sent, not as sent, costs the pass nothing else, and is sent by the next pass', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    sim.cnpg.switchover(NS, 'orders', 60_000);
    sim.events.failNext(1);
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome.statusWritten).toBe(true);
    expect(outcome.error).toBeUndefined();
    // Handed over to be sent after the pass, whose worker does not wait for it.
    expect(outcome.handedOver).toBe(true);
    expect(outcome.events.map((e) => e.reason)).toEqual(['Degraded']);
    expect(sim.unsentCount).toBe(1);
    expect(sim.events.events.map((e) => e.reason)).not.toContain('Degraded');
    // The failed delivery woke the cluster: its next pass sends it, once.
    await sim.run(1_000);
    expect(sim.events.events.filter((e) => e.reason === 'Degraded')).toHaveLength(1);
  });
});

describe('events the sink cannot send', () => {
  /** Every third Event create fails, even after the sink's own retries. */
  const sinkFailingEveryThird = (ports: Ports): Ports => {
    let calls = 0;
    return {
      ...ports,
      events: {
        emit: (regarding, event) => {
          calls++;
          if (calls % 3 === 0) return Promise.reject(new PortError('timeout', `injected: Event ${event.reason}`));
          return ports.events.emit(regarding, event);
        },
      },
    };
  };

  it('are sent by the next pass, in order and once: a lifecycle loses none and repeats none', async () => {
    const faultFree = eventMultiset(await lifecycle());
    const faulty = await lifecycle(sinkFailingEveryThird);
    expect(faulty.unsentCount).toBeGreaterThan(3);
    expect(eventMultiset(faulty)).toEqual(faultFree);
  });
});

describe('the Events of a deletion, refused one in two', () => {
  it('all arrive, once and in order, also those left to passes after the cluster is gone', async () => {
    let deleting = false;
    let calls = 0;
    const refusingEveryOther = (ports: Ports): Ports => ({
      ...ports,
      events: {
        emit: (regarding, event) => {
          if (deleting && regarding.metadata.name === 'plain' && calls++ % 2 === 0) {
            return Promise.reject(new PortError('unavailable', `injected: Event ${event.reason}`));
          }
          return ports.events.emit(regarding, event);
        },
      },
    });
    const calm = simulationWith([clusterObject('plain', { clusterDeletionPolicy: 'Delete' })]);
    const faulty = simulationWith([clusterObject('plain', { clusterDeletionPolicy: 'Delete' })], {
      ports: refusingEveryOther,
    });
    for (const sim of [calm, faulty]) {
      await untilReady(sim, 'plain');
      deleting = sim === faulty;
      sim.api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'plain' });
      await sim.run(10 * 60_000);
    }
    const said = (sim: Simulation) =>
      sim.events.events.filter((e) => e.regarding.name === 'plain').map((e) => `${e.reason}: ${e.message}`);
    expect(calls).toBeGreaterThan(4);
    expect(said(faulty)).toEqual(said(calm));
    expect(said(faulty).at(-1)).toMatch(/^CleanupComplete/);
  });
});
