/**
 * An object the API server refuses every write to, its status included (stored before a rule of the CRD, or
 * written with validation off, so that a CEL rule can no longer be evaluated on it): the status cannot say
 * what is wrong, so the pass says it in Events, with the API server's words, once per version of the object,
 * and does not retry until the object changes.
 */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { clusterObject, getCluster, NS, simulationWith } from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';
import { override } from './support/faulty-ports.ts';

const REFUSAL =
  'PostgresCluster.pgfsm.io "orders" is invalid: spec.class: Invalid value: "string": invalid data, ' +
  'expected string, got int64 evaluating rule: class is immutable';

/** Every status write is refused at admission, as the API server refuses it for such an object. */
const refusingStatus = (ports: Ports): Ports => ({
  ...ports,
  clusters: override(ports.clusters, {
    async writeStatus() {
      throw new PortError('rejected', `write status of PostgresCluster ${NS}/orders: HTTP 422 Invalid`, REFUSAL);
    },
  }),
});

describe('a PostgresCluster whose status the API server refuses', () => {
  it('is reported once per version in a StatusRejected Warning with the refusal, beside its failure', async () => {
    const sim = simulationWith([], { ports: refusingStatus });
    sim.api.create(clusterObject('orders', { class: 7 as unknown as string }));
    const key = { namespace: NS, name: 'orders' };

    const first = await sim.reconcileNow(key);
    expect(first.to).toBe('Failed.InvalidSpec');
    expect(first.statusWritten).toBe(false);
    // Nothing will change until the object does, and its watch says when.
    expect(first.requeue).toEqual({ kind: 'none' });
    const reasons = first.events.map((e) => e.reason);
    expect(reasons).toContain('InvalidConfiguration');
    const refused = first.events.find((e) => e.reason === 'StatusRejected');
    expect(refused?.type).toBe('Warning');
    expect(refused?.message).toContain(REFUSAL);
    const invalid = first.events.find((e) => e.reason === 'InvalidConfiguration');
    expect(invalid?.message).toContain('spec.class');
    // No finalizer was asked for: nothing of ours exists, nothing will be created.
    expect(getCluster(sim, 'orders')?.metadata.finalizers ?? []).toEqual([]);

    const again = await sim.reconcileNow(key);
    expect(again.events).toEqual([]);
    expect(again.requeue).toEqual({ kind: 'none' });

    // A new version of the object is judged, and refused, again.
    const stored = getCluster(sim, 'orders') as unknown as StoredObject;
    sim.api.update({ ...stored, metadata: { ...stored.metadata, labels: { team: 'a' } } });
    const changed = await sim.reconcileNow(key);
    expect(changed.events.map((e) => e.reason)).toContain('StatusRejected');
    expect(sim.events.events.filter((e) => e.reason === 'StatusRejected')).toHaveLength(2);
  });
});
