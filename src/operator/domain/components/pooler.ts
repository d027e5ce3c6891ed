/**
 * The PgBouncer Poolers (rw and ro): created, repaired on drift (instances, mode, parameters) and deleted
 * when the pooler is turned off. Ready means the Deployment's ready replicas, not CNPG's scheduled count.
 */
import type { MergedConfig, PoolerConfig } from '../config.ts';
import { type Effect, normal } from '../effects.ts';
import { CNPG_API_VERSION, type ObjectRef, type Pooler, type PoolerView } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { ownedKeysAnnotation, ownedMapDrifted } from '../owned-keys.ts';
import { type Health, health } from '../verdict.ts';
import { childLabels, childNames, describeOwner, ownerReferenceTo, ownershipOf, Reason } from '../vocabulary.ts';

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

const views = (observation: Observation) =>
  POOLER_TYPES.map((type) => [type, observation.poolers[type]] as [PoolerType, PoolerView | undefined]);

export function checkPoolers(observation: Observation, config: MergedConfig): Health {
  const { cluster } = observation;
  if (!config.pooler) {
    // A pooler of our name that someone else controls is theirs: never deleted, so never waited for.
    const leftovers = views(observation).filter(
      ([, v]) => v && ownershipOf(v.pooler.metadata.ownerReferences, cluster) !== 'foreign',
    );
    if (leftovers.length === 0) return health('Ready', Reason.PoolerDisabled, 'Connection pooler is disabled');
    return health('Provisioning', Reason.PoolerDeleting, 'Removing the connection poolers: the pooler is disabled');
  }
  const notes: string[] = [];
  let creating = false;
  let updating = false;
  for (const [type, view] of views(observation)) {
    const desired = desiredPooler(observation, config.pooler, type);
    if (!view) {
      creating = true;
      notes.push(`${type} pooler does not exist yet`);
      continue;
    }
    if (ownershipOf(view.pooler.metadata.ownerReferences, cluster) === 'foreign') {
      return health(
        'Failed',
        Reason.PoolerOwnedByOther,
        `Pooler ${desired.metadata.name} is controlled by ${describeOwner(view.pooler.metadata.ownerReferences)}`,
      );
    }
    const drift = poolerDrift(view.pooler, desired);
    if (drift.length > 0 || ownershipOf(view.pooler.metadata.ownerReferences, cluster) === 'orphan') {
      updating = true;
      notes.push(`${type} pooler is being updated${drift.length ? ` (${drift.join(', ')})` : ''}`);
      continue;
    }
    const wanted = desired.spec.instances ?? 1;
    if (view.readyReplicas < wanted) {
      creating = true;
      notes.push(`${type} pooler has ${view.readyReplicas}/${wanted} ready instances`);
    }
  }
  if (updating) return health('Provisioning', Reason.PoolerUpdating, notes.join('; '));
  if (creating) return health('Provisioning', Reason.PoolerCreating, notes.join('; '));
  return health('Ready', Reason.AllInstancesReady, 'Connection poolers are ready');
}

export function planPoolers(observation: Observation, config: MergedConfig): Effect[] {
  const { cluster } = observation;
  const effects: Effect[] = [];
  if (!config.pooler) {
    for (const [type, view] of views(observation)) {
      if (!view || ownershipOf(view.pooler.metadata.ownerReferences, cluster) === 'foreign') continue;
      const ref = poolerRef(observation, type);
      effects.push({
        type: 'delete',
        component: 'pooler',
        ref,
        event: normal('PoolerDeleted', 'DeletePooler', `Pooler ${ref.name} deleted: the pooler is disabled`),
      });
    }
    return effects;
  }
  for (const [type, view] of views(observation)) {
    const desired = desiredPooler(observation, config.pooler, type);
    const apply: Effect = { type: 'apply', component: 'pooler', object: desired };
    const name = desired.metadata.name;
    if (!view) {
      effects.push({ ...apply, event: normal('PoolerCreationStarted', 'CreatePooler', `Pooler ${name} created`) });
      continue;
    }
    const ownership = ownershipOf(view.pooler.metadata.ownerReferences, cluster);
    if (ownership === 'foreign') continue;
    const drift = poolerDrift(view.pooler, desired);
    if (ownership === 'orphan') {
      effects.push({ ...apply, event: normal('ClusterAdopted', 'AdoptPooler', `Adopted the existing pooler ${name}`) });
    } else if (drift.length > 0) {
      effects.push({
        ...apply,
        event: normal('PoolerUpdated', 'UpdatePooler', `Pooler ${name} updated: ${drift.join(', ')}`),
      });
    }
  }
  return effects;
}

/** Both poolers exist, match and serve: what `connectionPoolerStatus.enabled` promises consumers. */
export const poolersServing = (observation: Observation, config: MergedConfig) =>
  config.pooler !== undefined && checkPoolers(observation, config).state === 'Ready';
