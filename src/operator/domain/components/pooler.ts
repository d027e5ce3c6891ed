/**
 * The PgBouncer Poolers (rw and ro): created, repaired on drift (instances, mode, parameters) and deleted
 * when the pooler is turned off. Ready means the Deployment's ready replicas, not CNPG's scheduled count.
 */
import type { MergedConfig, PoolerConfig } from '../config.ts';
import { type Effect, joinReports, type KubeEvent, normal } from '../effects.ts';
import { CNPG_API_VERSION, type ObjectRef, type Pooler, type PoolerView } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { ownedKeysAnnotation, ownedMapDrifted } from '../owned-keys.ts';
import { heldByOther, type Judgment, judgment, type Verdict, verdict } from '../verdict.ts';
import {
  childLabels,
  childNames,
  EventReason,
  mayAdopt,
  notAdoptableMessage,
  ownerReferenceTo,
  ownershipOf,
  Reason,
} from '../vocabulary.ts';

export const POOLER_TYPES = ['rw', 'ro'] as const;
export type PoolerType = (typeof POOLER_TYPES)[number];

export const poolerRef = (observation: Observation, type: PoolerType): ObjectRef => {
  const names = childNames(observation.cluster.metadata.name);
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Pooler',
    namespace: observation.cluster.metadata.namespace,
    name: type === 'rw' ? names.poolerRw : names.poolerRo,
  };
};

export function desiredPooler(observation: Observation, pooler: PoolerConfig, type: PoolerType): Pooler {
  const { cluster } = observation;
  return {
    apiVersion: CNPG_API_VERSION,
    kind: 'Pooler',
    metadata: {
      name: poolerRef(observation, type).name,
      namespace: cluster.metadata.namespace,
      labels: childLabels(cluster.metadata.name),
      annotations: ownedKeysAnnotation(pooler.parameters),
      ownerReferences: [ownerReferenceTo(cluster)],
    },
    spec: {
      cluster: { name: childNames(cluster.metadata.name).cnpgCluster },
      type,
      instances: pooler.instances,
      pgbouncer: { poolMode: pooler.mode, parameters: pooler.parameters },
    },
  };
}

/** The pooler fields that differ from what pgfsm wants. */
export function poolerDrift(observed: Pooler, desired: Pooler): string[] {
  const o: Partial<Pooler['spec']> = observed.spec ?? {};
  const d = desired.spec;
  const drift: string[] = [];
  if (o.cluster?.name !== d.cluster.name) drift.push('cluster');
  if (o.type !== d.type) drift.push('type');
  if ((o.instances ?? 1) !== d.instances) drift.push('instances');
  if ((o.pgbouncer?.poolMode ?? 'session') !== d.pgbouncer.poolMode) drift.push('poolMode');
  if (ownedMapDrifted(o.pgbouncer?.parameters, observed.metadata.annotations, d.pgbouncer.parameters ?? {})) {
    drift.push('parameters');
  }
  return drift;
}

/** Ours, or an orphan ours to adopt (`mayAdopt`). */
function isOursToTouch(view: PoolerView, observation: Observation): boolean {
  const ownership = ownershipOf(view.pooler.metadata.ownerReferences, observation.cluster);
  if (ownership === 'orphan') return mayAdopt(view.pooler.metadata);
  return ownership === 'ours';
}

const views = (observation: Observation) =>
  POOLER_TYPES.map((type) => [type, observation.poolers[type]] as [PoolerType, PoolerView | undefined]);

/**
 * Disabled: delete the poolers that are ours or ours to adopt. Enabled, per pooler: missing, create it;
 * foreign, or orphaned and not handed over (`mayAdopt`), a person's (the whole step fails, the other pooler
 * is still repaired); orphaned and handed over (`mayAdopt`), adopt it; drifted,
 * repair it; otherwise wait for its ready replicas.
 */
export function judgePoolers(observation: Observation, config: MergedConfig): Judgment {
  return config.pooler ? judgeEnabled(observation, config.pooler) : judgeDisabled(observation);
}

function judgeDisabled(observation: Observation): Judgment {
  // A pooler of our name that someone else controls, or that nobody owns and nobody handed over, is
  // theirs: never deleted, so never waited for.
  const effects: Effect[] = views(observation)
    .filter(([, v]) => v && isOursToTouch(v, observation))
    .map(([type]) => {
      const ref = poolerRef(observation, type);
      return {
        type: 'delete',
        component: 'pooler',
        ref,
        event: normal(EventReason.PoolerDeleted, 'DeletePooler', `Pooler ${ref.name} deleted: the pooler is disabled`),
      };
    });
  if (effects.length === 0) return judgment(verdict('Ready', Reason.PoolerDisabled, 'Connection pooler is disabled'));
  return judgment(
    verdict('Provisioning', Reason.PoolerDeleting, 'Removing the connection poolers: the pooler is disabled'),
    ...effects,
  );
}

/** The report of Poolers created: one event for those created together. */
const poolersCreated = (names: string[]): KubeEvent =>
  normal(
    EventReason.PoolersCreated,
    'CreatePoolers',
    names.length > 1 ? `Poolers ${names.join(' and ')} created` : `Pooler ${names[0]} created`,
  );

function judgeEnabled(observation: Observation, pooler: PoolerConfig): Judgment {
  const { cluster } = observation;
  const effects: Effect[] = [];
  const notes: string[] = [];
  let foreign: Verdict | undefined;
  let creating = false;
  let updating = false;
  // The Poolers created in this pass (planned one right after the other: two at most), reported as one event
  // when both are (joinReports).
  const created: Array<Effect & { type: 'apply' }> = [];
  for (const [type, view] of views(observation)) {
    const desired = desiredPooler(observation, pooler, type);
    const name = desired.metadata.name;
    const apply = (event: KubeEvent): Effect & { type: 'apply' } => ({
      type: 'apply',
      component: 'pooler',
      object: desired,
      event,
    });
    if (!view) {
      creating = true;
      notes.push(`${type} pooler does not exist yet`);
      const effect = apply(poolersCreated([name]));
      created.push(effect);
      effects.push(effect);
      continue;
    }
    const owners = view.pooler.metadata.ownerReferences;
    const ownership = ownershipOf(owners, cluster);
    if (ownership === 'foreign') {
      foreign ??= heldByOther(Reason.PoolerOwnedByOther, `Pooler ${name}`, owners);
      continue;
    }
    if (ownership === 'orphan' && !isOursToTouch(view, observation)) {
      foreign ??= verdict(
        'Failed',
        Reason.PoolerNotAdoptable,
        notAdoptableMessage(`Pooler ${name}`, 'Pooler', view.pooler.metadata, cluster),
      );
      continue;
    }
    const drift = poolerDrift(view.pooler, desired);
    if (ownership === 'orphan' || drift.length > 0) {
      updating = true;
      notes.push(`${type} pooler is being updated${drift.length ? ` (${drift.join(', ')})` : ''}`);
      effects.push(
        ownership === 'orphan'
          ? apply(normal(EventReason.PoolerAdopted, 'AdoptPooler', `Adopted the existing pooler ${name}`))
          : apply(normal(EventReason.PoolerUpdated, 'UpdatePooler', `Pooler ${name} updated: ${drift.join(', ')}`)),
      );
      continue;
    }
    const wanted = desired.spec.instances ?? 1;
    if (view.readyReplicas < wanted) {
      creating = true;
      notes.push(`${type} pooler has ${view.readyReplicas}/${wanted} ready instances`);
    }
  }
  joinReports(created, (n) => poolersCreated(created.slice(0, n).map((c) => c.object.metadata.name)));
  // A pooler not ours to take fails the step, yet the other one is still written: it is ours and needs it
  // anyway.
  if (foreign) return judgment(foreign, ...effects);
  if (updating) return judgment(verdict('Provisioning', Reason.PoolerUpdating, notes.join('; ')), ...effects);
  if (creating) return judgment(verdict('Provisioning', Reason.PoolerCreating, notes.join('; ')), ...effects);
  return judgment(verdict('Ready', Reason.AllInstancesReady, 'Connection poolers are ready'));
}

/** Both poolers exist, match and serve: what `connectionPoolerStatus.enabled` promises consumers. */
export const poolersServing = (observation: Observation, config: MergedConfig) =>
  config.pooler !== undefined && judgePoolers(observation, config).verdict.state === 'Ready';
