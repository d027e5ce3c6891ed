/** The conditions table, from every status the exploration of the lifecycle published. */
import { COMPONENTS, CONDITION_OF, type Component, Reason } from '../../operator/domain/vocabulary.ts';
import { READY, RECONCILING, STALLED } from '../gitops/notice.ts';
import { byCodeUnits } from './events.ts';
import type { ObservedCondition } from './lifecycle.ts';
import { code, table } from './markdown.ts';

/** What each component's condition stands for. */
const COMPONENT_MEANING: Record<Component, string> = {
  secret: 'the superuser Secret exists, is ours and holds a password',
  cluster: 'the CNPG Cluster is ours, up to date, healthy, with every instance ready',
  managedRoles: 'CNPG reconciled every managed role',
  pooler: 'both Poolers (rw, ro) serve with every replica ready, or the pooler is disabled',
  configMap: 'the endpoints ConfigMap is ours and up to date',
};

/** The summary conditions (kstatus), then one per component in pipeline order. */
export const CONDITION_MEANING: Record<string, string> = {
  [READY]: 'summary: True only in the `Ready` state',
  [RECONCILING]: 'kstatus: work in progress; the reason names the state',
  [STALLED]: 'kstatus: no progress without a change of input, or past the progress deadline',
  ...Object.fromEntries(COMPONENTS.map((c) => [CONDITION_OF[c], COMPONENT_MEANING[c]])),
};

export interface ConditionDoc {
  type: string;
  meaning: string;
  /** Reasons seen, per status. */
  reasons: Record<'True' | 'False' | 'Unknown', string[]>;
}

export function conditionDocs(observed: readonly ObservedCondition[]): ConditionDoc[] {
  const types = [...new Set(observed.map((c) => c.type))];
  const unknown = types.filter((t) => CONDITION_MEANING[t] === undefined);
  if (unknown.length > 0) throw new Error(`condition(s) without a meaning in src/tools/docs/conditions.ts: ${unknown}`);
  const order = Object.keys(CONDITION_MEANING);
  return types
    .sort((a, b) => order.indexOf(a) - order.indexOf(b))
    .map((type) => {
      const reasons = { True: new Set<string>(), False: new Set<string>(), Unknown: new Set<string>() };
      for (const c of observed) if (c.type === type) reasons[c.status as keyof typeof reasons]?.add(c.reason);
      const sorted = (s: Set<string>) => [...s].sort(byCodeUnits);
      return {
        type,
        meaning: CONDITION_MEANING[type] ?? '',
        reasons: { True: sorted(reasons.True), False: sorted(reasons.False), Unknown: sorted(reasons.Unknown) },
      };
    });
}

/** Reasons of the vocabulary (src/operator/domain/vocabulary.ts) that no published condition carried. */
export function unpublishedReasons(docs: readonly ConditionDoc[]): string[] {
  const seen = new Set(docs.flatMap((d) => [...d.reasons.True, ...d.reasons.False, ...d.reasons.Unknown]));
  return Object.values(Reason).filter((r) => !seen.has(r));
}

export function conditionsTable(docs: readonly ConditionDoc[]): string {
  const list = (reasons: string[]) => reasons.map(code).join(', ');
  return table(
    ['Condition', 'Meaning', 'True', 'False', 'Unknown'],
    docs.map((d) => [code(d.type), d.meaning, list(d.reasons.True), list(d.reasons.False), list(d.reasons.Unknown)]),
  );
}
