/**
 * Each component's health and writes come from one judgment, so they cannot disagree: in every world of
 * a product of per-component facts, a verdict that says something is being created, adopted, updated or
 * deleted comes with the write that does it, and a write never comes with Ready.
 */
import { describe, expect, it } from 'vitest';
import { assess } from '../../../src/operator/domain/assessment.ts';
import { CnpgPhase } from '../../../src/operator/domain/components/cnpg-phases.ts';
import { defaultSettings } from '../../../src/operator/domain/observation.ts';
import { COMPONENTS, Reason } from '../../../src/operator/domain/vocabulary.ts';
import type { Facts } from '../../../src/tools/fixtures/observations.ts';
import { world } from './support.ts';

const SECRETS: Facts['secret'][] = ['missing', 'ready', 'noKey', 'orphan'];
const CNPGS = ['healthy', 'missing', 'drifted', 'scaling', 'released', '', CnpgPhase.Switchover];
const ROLES: Facts['rolesState'][] = ['reconciled', 'pending', 'failed', 'secretMissing', 'notPushed'];
const POOLERS: Facts['poolers'][] = ['missing', 'notReady', 'ready', 'drifted', 'foreign'];
const CONFIG_MAPS: Facts['configMap'][] = ['missing', 'ready', 'drifted', 'released', 'foreign'];

function* worlds(): Generator<Partial<Facts>> {
  for (const secret of SECRETS)
    for (const cnpg of CNPGS)
      for (const rolesState of ROLES)
        for (const poolers of POOLERS)
          for (const configMap of CONFIG_MAPS)
            for (const poolerEnabled of [true, false])
              yield { secret, cnpg, rolesState, poolers, configMap, poolerEnabled };
}

/** Reasons that say pgfsm is writing the component right now. */
const WRITING = new Set<string>([
  Reason.SuperUserSecretPending,
  Reason.CNPGClusterUpdating,
  Reason.PoolerUpdating,
  Reason.PoolerDeleting,
  Reason.ConfigMapPending,
  Reason.ConfigMapDrifted,
]);

describe('one judgment per component', () => {
  it('a writing verdict comes with a write, a write never with Ready, an adoption only with Provisioning', () => {
    let judged = 0;
    for (const facts of worlds()) {
      const a = assess(world(facts), defaultSettings, 0);
      for (const c of COMPONENTS) {
        const h = a.health[c];
        const effects = a.plans[c];
        if (!h) continue;
        const label = `${c} in ${JSON.stringify(facts)}: ${h.state}/${h.reason} ${h.message}`;
        if (WRITING.has(h.reason)) expect(effects.length, label).toBeGreaterThan(0);
        if (effects.length > 0) expect(h.state, label).not.toBe('Ready');
        const adopts = effects.some((e) => e.event?.reason.endsWith('Adopted'));
        if (/adopting/i.test(h.message)) expect(adopts, label).toBe(true);
        if (adopts) expect(h.state, label).toBe('Provisioning');
        judged++;
      }
    }
    expect(judged).toBeGreaterThan(10_000);
    // Seven thousand worlds take about four seconds alone, more beside other suites: past the default 5 s.
  }, 60_000);
});
