/**
 * Which guard keeps the cluster where a tick leaves it, and where it goes once that guard changes.
 * Read from the guard checks of the machine (explain/machine.ts), never from a table of states:
 * - a state that a tick keeps ("stays while [G]": Degraded, Suspended, a failure) is held by G;
 * - a waiting state (a pipeline step, a deletion step) waits for its first eventless transition that
 *   leads on rather than into a failure.
 */
import { lifecycle } from '../../../machines/chart.ts';
import { isGate } from '../../../machines/guards.ts';
import type { StateMeta } from '../../../machines/meta.ts';
import type { Assessment } from '../domain/assessment.ts';
import { deletionPolicyOf } from '../domain/deletion.ts';
import type { TickEvent } from '../domain/observation.ts';
import { CONDITION_OF, type Component, FINALIZER } from '../domain/vocabulary.ts';
import { type Checked, type Replay, tickChecks } from './machine.ts';
import { componentFacts, LEAD, STEP_OF } from './phrases.ts';
import type { Blocker, ObservedFacts, WhenClear } from './types.ts';

const isComponent = (value: unknown): value is Component => typeof value === 'string' && value in CONDITION_OF;
const intoFailure = (target: string | null) => target !== null && lifecycle.get(target).meta?.phase === 'Failed';
const isGateCheck = (c: Checked) => c.name !== null && isGate(c.name);

interface Found {
  check: Checked;
  whenClear: WhenClear | null;
}

/** "Stays while [G]": progress is the transition before G that would lead on, else the one after it. */
function heldBy(fired: Checked, all: Checked[]): Found {
  const at = all.findIndex((c) => c.guard === fired.guard && c.target === null);
  const leadsOn = (c: Checked) => c.target !== null && !isGateCheck(c) && !intoFailure(c.target);
  const before = all.slice(0, at).find((c) => leadsOn(c) && !c.holds);
  const after = all.slice(at + 1).find(leadsOn);
  const next = before ?? after;
  return { check: fired, whenClear: next?.target ? { state: next.target, when: next.guard } : null };
}

export function findBlocker(replay: Replay, meta: StateMeta, event: TickEvent): Found | null {
  if (meta.ready || replay.next.status === 'done') return null;
  const fired = replay.guards.findLast((c) => c.on === 'tick');
  if (fired?.holds && fired.target === null && fired.guard !== null) {
    return heldBy(fired, tickChecks(replay.nextPath, event, false));
  }
  // A detour to a state of the same step (the Cluster step's update in steps) is not where progress lies.
  const sameStep = (target: string) => meta.step !== undefined && lifecycle.get(target).meta?.step === meta.step;
  const waiting = replay.guards.find(
    (c) => c.on === 'always' && !c.holds && c.target && !intoFailure(c.target) && !sameStep(c.target),
  );
  if (!waiting?.target) return null;
  return { check: waiting, whenClear: { state: waiting.target, when: waiting.guard } };
}

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

export function blockerOf(found: Found, meta: StateMeta, facts: ObservedFacts, a: Assessment): Blocker {
  const { check } = found;
  const param = check.params.component;
  const component = isComponent(param) ? param : (meta.step ?? null);
  const health = component ? a.health[component] : undefined;
  return {
    guard: check.guard ?? '',
    holds: check.holds,
    component,
    condition: component ? CONDITION_OF[component] : null,
    reason: health?.reason ?? null,
    summary: summaryOf(check, component, facts, a),
    message: health?.message ?? null,
    facts: factsOf(check, component, facts, a),
  };
}
