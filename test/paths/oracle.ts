/**
 * The oracle: what the stored status must say in a given state of the machine, read from the state's
 * own `meta` (phase, conditions, reasons), plus the invariants that hold across a path.
 */
import { expect } from 'vitest';
import type { StateMeta } from '../../machines/meta.ts';
import type { PostgresCluster } from '../../src/operator/api/schema.ts';
import { BACKUPS_READY } from '../../src/operator/domain/backup/status.ts';
import type { KubeEvent } from '../../src/operator/domain/effects.ts';
import { COMPONENTS, CONDITION_OF, Reason } from '../../src/operator/domain/vocabulary.ts';

const CNPG_BUSY_REASONS = new Set<string>([
  Reason.CNPGSwitchover,
  Reason.CNPGFailingOver,
  Reason.CNPGRestarting,
  Reason.CNPGUpgrading,
  Reason.CNPGApplyingConfiguration,
  Reason.CNPGPromoting,
]);

const isBlocked = (reason: string) => reason.startsWith('WaitingFor');

/** The stored status agrees with everything the state declares about itself. */
export function expectStatusMatchesState(cluster: PostgresCluster, state: string, meta: StateMeta): void {
  const status = cluster.status;
  const generation = cluster.metadata.generation;
  expect(status?.state, 'status.state').toBe(state);
  expect(status?.phase, 'phase comes from the state').toBe(meta.phase);
  expect(status?.observedGeneration).toBe(generation);
  const conditions = new Map((status?.conditions ?? []).map((c) => [c.type, c]));
  // BackupsReady stands beside the pipeline, only on a backed-up cluster: it never decides the state.
  const backups = conditions.has(BACKUPS_READY) ? [BACKUPS_READY] : [];
  expect([...conditions.keys()].sort()).toEqual(
    ['Ready', 'Reconciling', 'Stalled', ...COMPONENTS.map((c) => CONDITION_OF[c]), ...backups].sort(),
  );
  for (const c of conditions.values()) expect(c.observedGeneration, `${c.type} generation`).toBe(generation);
  const statusOf = (type: string) => conditions.get(type)?.status;
  expect(statusOf('Ready'), 'Ready').toBe(meta.ready ? 'True' : 'False');
  expect(statusOf('Reconciling'), 'Reconciling').toBe(meta.reconciling ? 'True' : 'False');
  expect(statusOf('Stalled'), 'Stalled').toBe(meta.stalled ? 'True' : 'False');

  if (meta.conditions === 'observe') {
    for (const c of COMPONENTS) expect(isBlocked(conditions.get(CONDITION_OF[c])?.reason ?? '')).toBe(false);
    return;
  }
  const stepIndex = meta.step ? COMPONENTS.indexOf(meta.step) : COMPONENTS.length;
  COMPONENTS.forEach((c, i) => {
    const condition = conditions.get(CONDITION_OF[c]);
    const label = `${CONDITION_OF[c]} in ${state}`;
    if (i < stepIndex) {
      // A step acts only when every earlier step is healthy, so earlier ones are True (audit trail);
      // only a gate failure (class, spec) can stop the pipeline before its first step.
      if (!state.startsWith('Failed.ClassMissing') && !state.startsWith('Failed.InvalidSpec')) {
        expect(condition?.status, label).toBe('True');
      }
      expect(isBlocked(condition?.reason ?? ''), label).toBe(false);
    } else if (i === stepIndex) {
      expect(condition?.status, label).toBe('False');
      expect(isBlocked(condition?.reason ?? ''), label).toBe(false);
      if (state === 'Degraded') expect(CNPG_BUSY_REASONS.has(condition?.reason ?? ''), label).toBe(true);
      if (state.startsWith('Failed.')) expect(statusOf('Ready')).toBe('False');
    } else if (condition?.status === 'Unknown') {
      // Nothing can be judged while the spec or the class is invalid.
      expect(['Failed.ClassMissing', 'Failed.InvalidSpec'], label).toContain(state);
      expect(condition.reason, label).toBe('NotAssessed');
    } else if (condition?.status !== 'True') {
      // Blocked by an earlier step: Pending, never Failed.
      expect(condition?.reason, label).toBe(`WaitingFor${CONDITION_OF[meta.step ?? 'secret']}`);
    }
  });
}

/** Events only on transitions: announcements exactly once per entry, failures once per new failure. */
export function expectTransitionEvents(from: string, to: string, events: KubeEvent[]): void {
  const count = (reason: string) => events.filter((e) => e.reason === reason).length;
  expect(count('Ready'), `Ready ${from} -> ${to}`).toBe(from !== 'Ready' && to === 'Ready' ? 1 : 0);
  // No event is named after a component's condition: the condition says it.
  for (const c of COMPONENTS) expect(count(CONDITION_OF[c]), `${CONDITION_OF[c]} ${from} -> ${to}`).toBe(0);
  expect(count('Degraded'), `Degraded ${from} -> ${to}`).toBe(from === 'Ready' && to === 'Degraded' ? 1 : 0);
  const failures = events.filter((e) => e.action === 'Fail');
  expect(failures.length, `failure warnings ${from} -> ${to}`).toBe(to.startsWith('Failed.') && from !== to ? 1 : 0);
  for (const f of failures) expect(f.type).toBe('Warning');
  expect(count('Suspended')).toBe(to === 'Suspended' && from !== to ? 1 : 0);
  expect(count('Resumed')).toBe(from === 'Suspended' && to !== from ? 1 : 0);
}
