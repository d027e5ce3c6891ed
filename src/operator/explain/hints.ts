/**
 * What a person can do about it, when there is something to do: one line per actionable fact. Hints
 * come from the blocker and the facts; a cluster that only needs time gets none.
 */
import { isDns1123Subdomain } from '../api/cnpg-rules.ts';
import type { Assessment } from '../domain/assessment.ts';
import { recreateWithClass } from '../domain/config.ts';
import { deletionPolicyOf } from '../domain/deletion.ts';
import { PASSWORD_KEY } from '../domain/vocabulary.ts';
import { poolerFacts } from './facts.ts';
import { STEP_OF } from './phrases.ts';
import type { Blocker, DeadlineView, ObjectFact, ObservedFacts, StateView } from './types.ts';

export interface HintInput {
  namespace: string;
  state: StateView;
  blocker: Blocker | null;
  facts: ObservedFacts;
  assessment: Assessment;
  deadline: DeadlineView;
  generation: number | null;
  observedGeneration: number | null;
}

function blockerHints({ blocker, facts, assessment, namespace }: HintInput): string[] {
  const ns = namespace;
  switch (blocker?.guard.replace(/\(.*$/, '')) {
    case 'classMissing':
      // spec.class is immutable: nothing to fix in place (the condition's message offers the same two).
      return [
        `create PostgresClusterClass ${facts.class.name ?? '<name>'}; the cluster continues on its own`,
        `or ${recreateWithClass(assessment.observation.cluster.spec)}`,
      ];
    case 'specInvalid':
      return assessment.merge.ok ? [] : [`fix ${assessment.merge.field}: ${assessment.merge.message}`];
    case 'suspendRequested':
      return ['spec.suspend is true: set it to false to resume reconciliation'];
    case 'poolersGone':
    case 'policyApplied': {
      const verb = deletionPolicyOf(assessment.observation) === 'Delete' ? 'deletes it' : 'removes the reference';
      return facts.stillOwned.map(
        (child) =>
          `${child} in ${ns} still carries our owner reference; pgfsm ${verb} on its next pass — ` +
          'if it stays, check that pgfsm runs and may delete and patch it',
      );
    }
    default:
      return [];
  }
}

/** A child someone else controls is never taken over silently: a person decides. */
function foreignHints(facts: ObservedFacts): string[] {
  const objects: Array<[string, ObjectFact]> = [
    ['Secret', facts.secret],
    ['CNPG Cluster', facts.cnpg],
    ...poolerFacts(facts).map((p): [string, ObjectFact] => ['Pooler', p]),
    ['ConfigMap', facts.configMap],
  ];
  return objects
    .filter(([, o]) => o.exists && o.ownership === 'foreign')
    .map(([kind, o]) => `${kind} ${o.name} is controlled by ${o.controller}: remove it or rename this PostgresCluster`);
}

function factHints(input: HintInput): string[] {
  const { facts, namespace } = input;
  const roleSecrets = facts.roles
    // A name no Secret can have (stored before the CRD's rule) is not one to create: the merge check names the field.
    .filter(
      (r) => r.secret !== null && isDns1123Subdomain(r.secret) && r.secretExists === false && r.state !== 'absent',
    )
    .map((r) => `create Secret ${namespace}/${r.secret} with keys username and password (role ${r.name})`);
  const failedRoles = facts.roles
    .filter((r) => r.state === 'failed')
    .map((r) => `CNPG cannot reconcile role ${r.name}: ${r.error}`);
  const secret =
    facts.secret.exists && facts.secret.ownership !== 'foreign' && !facts.secret.keys.includes(PASSWORD_KEY)
      ? [`Secret ${facts.secret.name} has no key "${PASSWORD_KEY}": add it or delete the Secret to have one generated`]
      : [];
  return [...roleSecrets, ...failedRoles, ...secret, ...foreignHints(facts), ...refusalHints(input)];
}

/** A refused write is not sent again: only a change of the spec or the class (or the world) moves on. */
const refusalHints = ({ assessment }: HintInput): string[] =>
  assessment.rejections.map(
    (r) =>
      `the API server refused the ${STEP_OF[r.component]} write pgfsm would make: change the spec or the class; ` +
      `it said: ${r.message}`,
  );

/** What every resource's explanation says about progress: the operator silent, a spec not seen, a deadline past. */
export interface ProgressInput {
  namespace: string;
  state: StateView;
  blocker: Pick<Blocker<string>, 'summary'> | null;
  deadline: DeadlineView;
  generation: number | null;
  observedGeneration: number | null;
}

export function progressHints(input: ProgressInput): string[] {
  const { state, deadline, generation, observedGeneration, blocker, namespace } = input;
  const out: string[] = [];
  if (state.stored === null) out.push(`no status yet: is pgfsm running and watching namespace ${namespace}?`);
  else if (generation !== null && observedGeneration !== null && observedGeneration < generation) {
    out.push(`status is from generation ${observedGeneration}, the spec is at ${generation}: is pgfsm running?`);
  }
  if (deadline.exceeded) {
    out.push(`no progress in ${state.state} past the progress deadline: ${blocker?.summary ?? 'see above'}`);
  }
  return out;
}

/** CNPG's own failures (unrecoverable, waiting for user, …); a foreign owner has its own hint. */
function cnpgHints(input: HintInput): string[] {
  const { blocker, namespace } = input;
  const cnpg = input.facts.cnpg;
  const refused = input.assessment.rejections.some((r) => r.component === 'cluster');
  if (blocker?.guard === 'componentFailed(cluster)' && cnpg.ownership === 'ours' && !refused) {
    return [`CNPG needs a human: kubectl -n ${namespace} describe clusters.postgresql.cnpg.io ${cnpg.name}`];
  }
  return [];
}

/**
 * Backups (issue 36) stand beside the pipeline, so no blocker names them: what keeps them from working, and the
 * archive a restore of this cluster would name once it is gone.
 */
function backupHints({ assessment }: HintInput): string[] {
  const backup = assessment.backup;
  if (!backup) return [];
  const hints = backup.problem ? [`backups: ${backup.problem.message}`] : [];
  if (backup.health?.archiving.state === 'failing') hints.push(`backups: ${backup.health.archiving.message}`);
  return hints;
}

export const hintsOf = (input: HintInput): string[] => [
  ...new Set([
    ...blockerHints(input),
    ...factHints(input),
    ...progressHints(input),
    ...cnpgHints(input),
    ...backupHints(input),
  ]),
];
