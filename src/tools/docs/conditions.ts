/** The conditions table of a resource, from every status the exploration of its lifecycle published. */

import { BACKUPS_READY } from '../../operator/domain/backup/status.ts';
import {
  DATABASE_COMPONENTS,
  DATABASE_CONDITION_OF,
  type DatabaseComponent,
  DatabaseReason,
} from '../../operator/domain/database/vocabulary.ts';
import { COMPONENTS, CONDITION_OF, type Component, Reason } from '../../operator/domain/vocabulary.ts';
import { READY, RECONCILING, STALLED } from '../gitops/notice.ts';
import { byCodeUnits } from './events.ts';
import type { ObservedCondition } from './lifecycle.ts';
import { code, table } from './markdown.ts';

/** The summary conditions (kstatus), the same on every resource whose lifecycle a machine runs. */
const SUMMARY_MEANING: Record<string, string> = {
  [READY]: 'summary: True only in the `Ready` state',
  [RECONCILING]: 'kstatus: work in progress; the reason names the state',
  [STALLED]: 'kstatus: no progress without a change of input, or past the progress deadline',
};

/** What each of the cluster's component conditions stands for. */
const COMPONENT_MEANING: Record<Component, string> = {
  secret: 'the superuser Secret exists, is ours and holds a password',
  cluster: 'the CNPG Cluster is ours, up to date, healthy, with every instance ready',
  managedRoles: 'CNPG reconciled every managed role',
  pooler: 'both Poolers (rw, ro) serve with every replica ready, or the pooler is disabled',
  configMap: 'the endpoints ConfigMap is ours and up to date',
};

/** What each of the database's component conditions stands for. */
const DATABASE_COMPONENT_MEANING: Record<DatabaseComponent, string> = {
  cluster: 'the PostgresCluster `spec.cluster` names exists, is not being deleted and has published its endpoints',
  claims:
    'it holds its database name and role names on the cluster and its Secret names in the namespace: none is the cluster’s, nor held by another PostgresDatabase that recorded it first or is older',
  secrets: 'a connection Secret per role exists, is ours and points at the endpoints the cluster publishes',
  roles:
    'the PostgresCluster pushed every role to CNPG with a password Secret this PostgresDatabase controls, CNPG reconciled it, and PostgreSQL has it',
  database: 'the CNPG Database is ours, up to date and applied by CNPG, and PostgreSQL has the database',
  privileges:
    'the grants for the users, their access and the schemas were applied over SQL (their digest is recorded on the CNPG Database)',
};

/** The summary conditions (kstatus), then one per component in pipeline order: the cluster's, then its backups'. */
export const CONDITION_MEANING: Record<string, string> = {
  ...SUMMARY_MEANING,
  ...Object.fromEntries(COMPONENTS.map((c) => [CONDITION_OF[c], COMPONENT_MEANING[c]])),
  [BACKUPS_READY]:
    'only on a backed-up cluster (or a restore whose store is wrong): WAL archiving works (Unknown until CNPG reports its first attempt), the backup objects are written, the store usable from the namespace',
};

/** The same for a PostgresDatabase. */
export const DATABASE_CONDITION_MEANING: Record<string, string> = {
  ...SUMMARY_MEANING,
  ...Object.fromEntries(DATABASE_COMPONENTS.map((c) => [DATABASE_CONDITION_OF[c], DATABASE_COMPONENT_MEANING[c]])),
};

/** Every reason a resource's vocabulary has: what its conditions table must show. */
export const CLUSTER_REASONS: readonly string[] = Object.values(Reason);
export const DATABASE_REASONS: readonly string[] = Object.values(DatabaseReason);

export interface ConditionDoc {
  type: string;
  meaning: string;
  /** Reasons seen, per status. */
  reasons: Record<'True' | 'False' | 'Unknown', string[]>;
}

export function conditionDocs(
  observed: readonly ObservedCondition[],
  meanings: Readonly<Record<string, string>> = CONDITION_MEANING,
): ConditionDoc[] {
  const types = [...new Set(observed.map((c) => c.type))];
  const unknown = types.filter((t) => meanings[t] === undefined);
  if (unknown.length > 0) throw new Error(`condition(s) without a meaning in src/tools/docs/conditions.ts: ${unknown}`);
  const order = Object.keys(meanings);
  return types
    .sort((a, b) => order.indexOf(a) - order.indexOf(b))
    .map((type) => {
      const reasons = { True: new Set<string>(), False: new Set<string>(), Unknown: new Set<string>() };
      for (const c of observed) if (c.type === type) reasons[c.status as keyof typeof reasons]?.add(c.reason);
      const sorted = (s: Set<string>) => [...s].sort(byCodeUnits);
      return {
        type,
        meaning: meanings[type] ?? '',
        reasons: { True: sorted(reasons.True), False: sorted(reasons.False), Unknown: sorted(reasons.Unknown) },
      };
    });
}

/** Reasons of the vocabulary (the cluster's by default) that no published condition carried. */
export function unpublishedReasons(
  docs: readonly ConditionDoc[],
  vocabulary: readonly string[] = CLUSTER_REASONS,
): string[] {
  const seen = new Set(docs.flatMap((d) => [...d.reasons.True, ...d.reasons.False, ...d.reasons.Unknown]));
  return vocabulary.filter((r) => !seen.has(r));
}

export function conditionsTable(docs: readonly ConditionDoc[]): string {
  const list = (reasons: string[]) => reasons.map(code).join(', ');
  return table(
    ['Condition', 'Meaning', 'True', 'False', 'Unknown'],
    docs.map((d) => [code(d.type), d.meaning, list(d.reasons.True), list(d.reasons.False), list(d.reasons.Unknown)]),
  );
}
