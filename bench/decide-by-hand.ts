/**
 * The engine benchmark's reference: the lifecycle's decision for one tick written by hand as plain control
 * flow, without XState. Given the stored state and a tick, it decides what the statechart decides — the state
 * the tick ends in and the effects its actions ask for, in the same order — from the same health checks (the
 * guard catalogue's `holds`, which read the memoised assessment of the observation) and the same planners.
 * The ratio machine/reference is therefore what the statechart's machinery costs over the decision itself.
 *
 * It mirrors machines/postgres-cluster.ts by hand, so it can drift from it: the bench compares both on a
 * spread of worlds and every storable state before it measures, and refuses to measure when they disagree.
 */
import { GUARDS } from '../machines/guards.ts';
import { assessTick, clusterUpdateInSteps, isReady } from '../src/operator/domain/assessment.ts';
import { planDeletionPolicy, planFinalizerRemoval, planPoolerDeletion } from '../src/operator/domain/deletion.ts';
import { announce, type Effect, normal, warning } from '../src/operator/domain/effects.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { COMPONENTS, CONDITION_OF, type Component, EventReason } from '../src/operator/domain/vocabulary.ts';

export interface Decision {
  /** The state the tick ends in, as stored (`Provisioning.Cluster`). */
  state: string;
  effects: Effect[];
}

const FAILED: Record<Component, string> = {
  secret: 'Failed.Secret',
  cluster: 'Failed.Cluster',
  managedRoles: 'Failed.ManagedRoles',
  pooler: 'Failed.Pooler',
  configMap: 'Failed.ConfigMap',
};
const NEXT_STEP: Record<Component, string> = {
  secret: 'Provisioning.Cluster',
  cluster: 'Provisioning.ManagedRoles',
  managedRoles: 'Provisioning.Pooler',
  pooler: 'Provisioning.ConfigMap',
  configMap: 'Ready',
};
const STEP_OF: Record<string, Component> = {
  'Provisioning.Secret': 'secret',
  'Provisioning.Cluster': 'cluster',
  'Provisioning.ManagedRoles': 'managedRoles',
  'Provisioning.Pooler': 'pooler',
  'Provisioning.ConfigMap': 'configMap',
};
const COMPONENT_OF_FAILURE: Record<string, Component> = {
  'Failed.ClassMissing': 'cluster',
  'Failed.InvalidSpec': 'cluster',
  ...Object.fromEntries(COMPONENTS.map((c) => [FAILED[c], c])),
};

type Gate = 'deletionRequested' | 'finalizerMissing' | 'suspendRequested' | 'classMissing' | 'specInvalid';
const GATE_TARGET: Record<Gate, string> = {
  deletionRequested: 'Deleting',
  finalizerMissing: 'Pending',
  suspendRequested: 'Suspended',
  classMissing: 'Failed.ClassMissing',
  specInvalid: 'Failed.InvalidSpec',
};

/** The first gate that holds, in the catalogue's order. */
function firstGate(e: TickEvent): Gate | undefined {
  if (GUARDS.deletionRequested.holds(e)) return 'deletionRequested';
  if (GUARDS.finalizerMissing.holds(e)) return 'finalizerMissing';
  if (GUARDS.suspendRequested.holds(e)) return 'suspendRequested';
  if (GUARDS.classMissing.holds(e)) return 'classMissing';
  if (GUARDS.specInvalid.holds(e)) return 'specInvalid';
  return undefined;
}

/**
 * The component guards' params, built once as the machine's config holds them: neither side allocates them per
 * tick (and no closure is made per tick either: under tsx every closure created costs a `__name` call that the
 * compiled image does not make, which would charge the reference for an artefact of the bench's loader).
 */
const PARAMS = Object.fromEntries(COMPONENTS.map((component) => [component, { component }])) as Record<
  Component,
  { component: Component }
>;
const componentFailed = (e: TickEvent, component: Component) => GUARDS.componentFailed.holds(e, PARAMS[component]);

/** Enters `state` (running its entry and then its eventless transitions); returns where it settles. */
function enter(state: string, e: TickEvent, out: Effect[]): string {
  // Only read when needed (assessTick, memoised): the deletion steps never assess the observation, in the
  // machine neither.
  switch (state) {
    case 'Provisioning':
      return enter('Provisioning.Secret', e, out);
    case 'Ready':
      out.push(announce(normal(EventReason.Ready, 'BecomeReady', 'Cluster is up and running')));
      return state;
    case 'Suspended':
      out.push(announce(normal(EventReason.Suspended, 'Suspend', 'Reconciliation suspended: no writes to children')));
      return state;
    case 'Provisioning.ClusterStaged':
      out.push(...assessTick(e).plans.cluster);
      return state;
    case 'Deleting':
      out.push(...planPoolerDeletion(e.observation));
      if (!GUARDS.poolersGone.holds(e)) return 'Deleting.Poolers';
      out.push(...planDeletionPolicy(e.observation));
      if (!GUARDS.policyApplied.holds(e)) return 'Deleting.ApplyPolicy';
      out.push(...planFinalizerRemoval(e.observation));
      return GUARDS.deletionRequested.holds(e) ? 'Deleted' : 'Deleting.RemoveFinalizer';
  }
  const step = STEP_OF[state];
  if (step) {
    out.push(...(step === 'cluster' && clusterUpdateInSteps(assessTick(e)) ? [] : assessTick(e).plans[step]));
    if (componentFailed(e, step)) return enter(FAILED[step], e, out);
    if (step === 'cluster' && GUARDS.clusterUpdateInSteps.holds(e)) return enter('Provisioning.ClusterStaged', e, out);
    if (GUARDS.componentReady.holds(e, PARAMS[step])) return enter(NEXT_STEP[step], e, out);
    return state;
  }
  const failed = COMPONENT_OF_FAILURE[state];
  if (failed) {
    const h = assessTick(e).health[failed];
    if (h) out.push(announce(warning(h.reason, 'Fail', h.message)));
  }
  // Pending and Degraded have no entry.
  return state;
}

/** One tick from the stored state: the state it ends in and the effects, in the machine's order. */
export function decideByHand(stored: string, e: TickEvent): Decision {
  const out: Effect[] = [];
  const decision = decide(stored, e, out);
  return { state: decision === STAY ? stored : enter(decision, e, out), effects: out };
}

/** Stays in the stored state. */
const STAY = Symbol('stay');

/** The state the tick enters (`enter` settles it), or STAY; the effects of leaving go to `out`. */
function decide(stored: string, e: TickEvent, out: Effect[]): string | typeof STAY {
  if (stored === 'Deleted') return STAY;
  if (stored.startsWith('Deleting.')) return GUARDS.deletionRequested.holds(e) ? 'Deleting' : STAY;

  const gate = firstGate(e);
  if (stored === 'Pending') {
    if (gate === 'finalizerMissing') {
      out.push({ type: 'addFinalizer' });
      return STAY;
    }
    return gate ? GATE_TARGET[gate] : 'Provisioning';
  }
  if (stored === 'Suspended') {
    if (gate === 'suspendRequested') return STAY;
    out.push(announce(normal(EventReason.Resumed, 'Resume', 'Reconciliation resumed')));
    return gate ? GATE_TARGET[gate] : 'Provisioning';
  }
  if (stored === 'Failed.ClassMissing' || stored === 'Failed.InvalidSpec') {
    if (gate && GATE_TARGET[gate] === stored) return STAY;
    return gate ? GATE_TARGET[gate] : 'Provisioning';
  }
  if (gate) return GATE_TARGET[gate];
  if (stored.startsWith('Provisioning.')) return 'Provisioning';
  const failed = COMPONENT_OF_FAILURE[stored];
  if (failed) return componentFailed(e, failed) ? STAY : 'Provisioning';
  if (stored === 'Degraded') {
    if (GUARDS.allReady.holds(e)) return 'Ready';
    return GUARDS.cnpgBusy.holds(e) ? STAY : 'Provisioning';
  }
  if (stored === 'Ready') {
    if (GUARDS.allReady.holds(e)) return STAY;
    const x = assessTick(e);
    if (GUARDS.cnpgBusy.holds(e)) {
      const message = `Cluster degraded: ${x.health.cluster?.message ?? ''}`;
      out.push(announce(warning(EventReason.Degraded, 'BecomeDegraded', message)));
      return 'Degraded';
    }
    if (GUARDS.routineChange.holds(e)) return 'Provisioning';
    const lost = COMPONENTS.find((c) => !isReady(x, c));
    const h = lost ? x.health[lost] : undefined;
    const what = lost && h ? `${CONDITION_OF[lost]} is ${h.reason}: ${h.message}` : 'a component is not ready';
    out.push(announce(warning(EventReason.NotReady, 'BecomeNotReady', `Cluster is no longer ready: ${what}`)));
    return 'Provisioning';
  }
  throw new Error(`decideByHand: no such state ${stored}`);
}
