/**
 * Which guard keeps the resource where a tick leaves it, and where it goes once that guard changes.
 * Read from the guard checks of the machine (explain/machine.ts), never from a table of states:
 * - a state that a tick keeps ("stays while [G]": Degraded, Suspended, a failure) is held by G;
 * - a waiting state (a pipeline step, a deletion step) waits for its first eventless transition that
 *   leads on rather than into a failure.
 * `findBlocker` and `blockerOf` serve every machine; what a guard means in words is each resource's own
 * (`clusterSummary` here, database-hints.ts for the PostgresDatabase).
 */
import type { StateMeta } from '../../../machines/meta.ts';
import type { Assessment } from '../domain/assessment.ts';
import { deletionPolicyOf } from '../domain/deletion.ts';
import type { Verdict } from '../domain/verdict.ts';
import { type Component, FINALIZER } from '../domain/vocabulary.ts';
import { type Checked, type Replay, tickChecks } from './machine.ts';
import type { ExplainedMachine } from './machines.ts';
import { componentFacts, LEAD, STEP_OF } from './phrases.ts';
import type { Blocker, ObservedFacts, WhenClear } from './types.ts';

export interface Found {
  check: Checked;
  whenClear: WhenClear | null;
}

/** "Stays while [G]": progress is the transition before G that would lead on, else the one after it. */
function heldBy<E>(machine: ExplainedMachine<E, unknown>, fired: Checked, all: Checked[]): Found {
  const { states, description } = machine;
  const intoFailure = (target: string) => states.get(target).meta?.phase === 'Failed';
  const isGateCheck = (c: Checked) => c.name !== null && description.guards.isGate(c.name);
  const at = all.findIndex((c) => c.guard === fired.guard && c.target === null);
  const leadsOn = (c: Checked) => c.target !== null && !isGateCheck(c) && !intoFailure(c.target);
  const before = all.slice(0, at).find((c) => leadsOn(c) && !c.holds);
  const after = all.slice(at + 1).find(leadsOn);
  const next = before ?? after;
  return { check: fired, whenClear: next?.target ? { state: next.target, when: next.guard } : null };
}

export function findBlocker<E>(
  machine: ExplainedMachine<E, unknown>,
  replay: Replay<unknown>,
  meta: StateMeta<string>,
  event: E,
): Found | null {
  if (meta.ready || replay.next.status === 'done') return null;
  const { states } = machine;
  const fired = replay.guards.findLast((c) => c.on === 'tick');
  if (fired?.holds && fired.target === null && fired.guard !== null) {
    return heldBy(machine, fired, tickChecks(machine, replay.nextPath, event, false));
  }
  const intoFailure = (target: string) => states.get(target).meta?.phase === 'Failed';
  // A detour to a state of the same step (the Cluster step's update in steps) is not where progress lies.
  const sameStep = (target: string) => meta.step !== undefined && states.get(target).meta?.step === meta.step;
  const waiting = replay.guards.find(
    (c) => c.on === 'always' && !c.holds && c.target && !intoFailure(c.target) && !sameStep(c.target),
  );
  if (!waiting?.target) return null;
  return { check: waiting, whenClear: { state: waiting.target, when: waiting.guard } };
}

/** What a resource says about the guard that blocks it: the one-line summary and the facts behind it. */
export interface BlockerWords<C extends string> {
  summary: (check: Checked, component: C | null) => string;
  facts: (check: Checked, component: C | null) => string[];
}

/** The blocker, for any machine: the guard's component (its param, else the state's step) and its health. */
export function blockerOf<C extends string>(
  machine: ExplainedMachine<never, unknown>,
  found: Found,
  meta: StateMeta<string>,
  health: Readonly<Partial<Record<C, Verdict<string>>>>,
  words: BlockerWords<C>,
): Blocker<C> {
  const { check } = found;
  const { conditionOf } = machine.description;
  const isComponent = (value: unknown): value is C => typeof value === 'string' && Object.hasOwn(conditionOf, value);
  const param = check.params.component;
  const step = isComponent(meta.step) ? meta.step : null;
  const component = isComponent(param) ? param : step;
  const verdict = component ? health[component] : undefined;
  return {
    guard: check.guard ?? '',
    holds: check.holds,
    component,
    condition: component ? (conditionOf[component] ?? null) : null,
    reason: verdict?.reason ?? null,
    summary: words.summary(check, component),
    message: verdict?.message ?? null,
    facts: words.facts(check, component),
  };
}

// ---- The PostgresCluster's words ----

/** The one-line summary a reader acts on, from the guard and the facts behind it. */
function summaryOf(check: Checked, component: Component | null, facts: ObservedFacts, a: Assessment): string {
  const list = (items: string[]) => items.join(', ');
  switch (check.name) {
    case 'componentReady':
      return component ? `waiting for ${LEAD[component]}: ${list(componentFacts(component, facts))}` : '';
    case 'componentFailed':
      // The step, not its subject: "CNPG failed" would be wrong when pgfsm itself refuses (another owner, a
      // superuser Secret it will not take over).
      return component ? `the ${STEP_OF[component]} step failed: ${a.health[component]?.message ?? ''}` : '';
    case 'cnpgBusy':
      return `CNPG is busy: ${list(componentFacts('cluster', facts))}`;
    case 'classMissing':
      return `PostgresClusterClass ${facts.class.name ?? '(none)'} not found`;
    case 'specInvalid':
      return `invalid spec: ${a.merge.ok ? '' : a.merge.message}`;
    case 'suspendRequested':
      return 'spec.suspend is true: reconciliation is suspended, nothing is written to the children';
    case 'finalizerMissing':
      return `finalizer ${FINALIZER} not on the object yet: the operator adds it on its next pass`;
    case 'poolersGone':
      return `waiting for the poolers to be deleted: ${list(facts.stillOwned.filter((c) => c.startsWith('Pooler ')))}`;
    case 'policyApplied':
      return `waiting for the ${deletionPolicyOf(a.observation)} policy: ${list(facts.stillOwned)} still carry our owner reference`;
    default:
      return `${check.guard} ${check.holds ? 'holds' : 'is false'}`;
  }
}

function factsOf(check: Checked, component: Component | null, facts: ObservedFacts, a: Assessment): string[] {
  if (check.name === 'poolersGone' || check.name === 'policyApplied') return facts.stillOwned;
  if (check.name === 'specInvalid') return a.merge.ok ? [] : [`field ${a.merge.field}`];
  if (check.name === 'classMissing') return [`spec.class ${facts.class.name ?? '(none)'}`];
  return component ? componentFacts(component, facts) : [];
}

export const clusterWords = (facts: ObservedFacts, a: Assessment): BlockerWords<Component> => ({
  summary: (check, component) => summaryOf(check, component, facts, a),
  facts: (check, component) => factsOf(check, component, facts, a),
});
