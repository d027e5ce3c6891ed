/**
 * A write that conflicts (the pass decided on a view the world has moved past: a child created since the
 * cache saw it absent, a version that changed) is no failure to report: no failure condition, no Warning;
 * the pass runs again at once on the newer view.
 */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../src/operator/core/errors.ts';
import type { Ports } from '../../src/operator/core/ports.ts';
import { clusterObject, getCluster, simulationWith, untilReady } from '../../src/tools/fixtures/simulation.ts';
import { override } from './support/faulty-ports.ts';

/** The first apply of each CNPG Cluster conflicts, as a create-only apply does when the cache lagged. */
const firstClusterApplyConflicts = (ports: Ports): Ports => {
  let conflicted = false;
  return {
    ...ports,
    cnpgClusters: override(ports.cnpgClusters, {
      apply: async (...args: Parameters<Ports['cnpgClusters']['apply']>) => {
        if (!conflicted) {
          conflicted = true;
          throw new PortError('conflict', 'apply Cluster (only if absent): HTTP 409 Conflict');
        }
        return ports.cnpgClusters.apply(...args);
      },
    }),
  };
};

describe('a write that conflicts', () => {
  it('is run again at once, with no Warning and no failure condition', async () => {
    const conditionReasons: string[] = [];
    const sim = simulationWith([clusterObject('orders')], {
      ports: firstClusterApplyConflicts,
      onPass: (outcome) => {
        if (outcome.requeue.kind === 'immediate') {
          for (const c of getCluster(sim, 'orders')?.status?.conditions ?? []) conditionReasons.push(c.reason);
        }
      },
    });
    await untilReady(sim, 'orders');
    expect(sim.passes.some((p) => p.requeue.kind === 'immediate')).toBe(true);
    expect(sim.events.events.filter((e) => e.type === 'Warning')).toEqual([]);
    expect(conditionReasons).not.toContain('ClusterApplyFailed');
  });
});
