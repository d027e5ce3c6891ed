/** Deletion: poolers first, then the deletion policy for the data-bearing children, then the finalizer. */
import type { DeletionPolicy } from '../api/schema.ts';
import { cnpgRef } from './components/cluster.ts';
import { configMapRef } from './components/configmap.ts';
import { POOLER_TYPES, poolerRef } from './components/pooler.ts';
import { secretRef } from './components/secret.ts';
import { type Effect, normal } from './effects.ts';
import type { KubeObject, ObjectRef } from './objects.ts';
import { refOf } from './objects.ts';
import type { Observation } from './observation.ts';
import { type Component, EventReason } from './vocabulary.ts';

export const deletionPolicyOf = (observation: Observation): DeletionPolicy =>
  observation.cluster.spec?.clusterDeletionPolicy === 'Delete' ? 'Delete' : 'Retain';

const ownedByUs = (object: KubeObject, observation: Observation) =>
  (object.metadata.ownerReferences ?? []).some((o) => o.uid === observation.cluster.metadata.uid);

/**
 * The children the policy decides about: everything that holds data or credentials, and the backup objects (issue
 * 36). Under Retain those are released with the CNPG Cluster, which keeps archiving through them; under Delete they
 * are deleted, and the archive in the bucket is never touched: deleting a Backup object deletes no backup, and the
 * archive is what a restore from a cluster that no longer exists reads (restore.source.serverName).
 */
function retainableChildren(observation: Observation): Array<[Component, KubeObject | undefined, ObjectRef?]> {
  const backup = observation.backup;
  return [
    ['cluster', observation.cnpg, cnpgRef(observation)],
    ['secret', observation.secret, secretRef(observation)],
    ['configMap', observation.configMap, configMapRef(observation)],
    ['cluster', backup?.store],
    ['cluster', backup?.sourceStore],
    ['cluster', backup?.scheduled],
    ['cluster', backup?.onDemand],
  ];
}

/** No pooler of ours is left (a pooler of our name that someone else controls is not ours to wait for). */
export const poolersGone = (observation: Observation) =>
  POOLER_TYPES.every((type) => {
    const view = observation.poolers[type];
    return !view || !ownedByUs(view.pooler, observation);
  });

export function planPoolerDeletion(observation: Observation): Effect[] {
  return POOLER_TYPES.flatMap((type) => {
    const view = observation.poolers[type];
    if (!view || !ownedByUs(view.pooler, observation)) return [];
    const ref = poolerRef(observation, type);
    return [
      {
        type: 'delete',
        component: 'pooler',
        ref,
        event: normal(EventReason.PoolerDeleted, 'DeletePooler', `Pooler ${ref.name} deleted`),
      },
    ];
  });
}

/**
 * The policy is applied when no child still names this cluster as an owner: under Delete because the
 * children are gone, under Retain because their owner references were removed.
 */
export const policyApplied = (observation: Observation) =>
  retainableChildren(observation).every(([, object]) => !object || !ownedByUs(object, observation));

/**
 * Some child still names this cluster as its owner: what our finalizer protects, since without it a deletion
 * leaves them to the garbage collector, whatever the deletion policy says.
 */
export const ownsAChild = (observation: Observation) => !poolersGone(observation) || !policyApplied(observation);

export function planDeletionPolicy(observation: Observation): Effect[] {
  const policy = deletionPolicyOf(observation);
  const uid = observation.cluster.metadata.uid ?? '';
  return retainableChildren(observation).flatMap(([component, object]): Effect[] => {
    if (!object || !ownedByUs(object, observation)) return [];
    const ref = refOf(object);
    const what = `${ref.kind} ${ref.name}`;
    if (policy === 'Delete') {
      return [
        { type: 'delete', component, ref, event: normal(EventReason.ChildDeleted, 'DeleteChild', `${what} deleted`) },
      ];
    }
    return [
      {
        type: 'releaseOwner',
        component,
        ref,
        ownerUid: uid,
        event: normal(EventReason.ChildRetained, 'RetainChild', `${what} retained: owner reference removed`),
      },
    ];
  });
}

export function planFinalizerRemoval(observation: Observation): Effect[] {
  return [
    {
      type: 'removeFinalizer',
      event: normal(
        EventReason.CleanupComplete,
        'RemoveFinalizer',
        `Cleanup complete (policy: ${deletionPolicyOf(observation)})`,
      ),
    },
  ];
}
