/** Executes the writes the machine asked for, in order, through the ports. */
import type { PostgresCluster } from '../api/schema.ts';
import type { Effect, KubeEvent, Write } from '../domain/effects.ts';
import type { CnpgCluster, ConfigMap, KubeObject, ObjectRef, Pooler } from '../domain/objects.ts';
import { FINALIZER } from '../domain/vocabulary.ts';
import type { ChildPort, Ports } from './ports.ts';

function childPort(ports: Ports, ref: Pick<ObjectRef, 'kind'>): ChildPort<KubeObject> {
  switch (ref.kind) {
    case 'Secret':
      return ports.secrets;
    case 'Cluster':
      return ports.cnpgClusters;
    case 'Pooler':
      return ports.poolers;
    case 'ConfigMap':
      return ports.configMaps;
    default:
      throw new Error(`no port for kind ${ref.kind}`);
  }
}

async function write(ports: Ports, cluster: PostgresCluster, effect: Write): Promise<void> {
  switch (effect.type) {
    case 'addFinalizer':
      return ports.clusters.addFinalizer(cluster, FINALIZER);
    case 'removeFinalizer':
      return ports.clusters.removeFinalizer(cluster, FINALIZER);
    case 'createSecret':
      return ports.secrets.create(effect.secret);
    case 'apply':
      switch (effect.component) {
        case 'cluster':
        case 'managedRoles':
          return ports.cnpgClusters.apply(effect.object as CnpgCluster, effect.component);
        case 'pooler':
          return ports.poolers.apply(effect.object as Pooler);
        case 'configMap':
          return ports.configMaps.apply(effect.object as ConfigMap);
        default:
          throw new Error(`cannot apply component ${effect.component}`);
      }
    case 'delete':
      return childPort(ports, effect.ref).delete(effect.ref);
    case 'setOwner':
      return childPort(ports, effect.ref).setOwner(effect.ref, effect.owner);
    case 'releaseOwner':
      return childPort(ports, effect.ref).releaseOwner(effect.ref, effect.ownerUid);
  }
}

/** An event to emit; `announcement` marks a transition's own event rather than a write's report. */
export interface PendingEvent {
  event: KubeEvent;
  announcement: boolean;
}

export interface Execution {
  /** Events of the writes that succeeded and the transition announcements, in order. */
  events: PendingEvent[];
  /** The first write that failed; nothing after it ran. */
  failure?: { effect: Write; error: unknown };
  writes: number;
}

export async function executeEffects(ports: Ports, cluster: PostgresCluster, effects: Effect[]): Promise<Execution> {
  const events: PendingEvent[] = [];
  let writes = 0;
  for (const effect of effects) {
    if (effect.type === 'event') {
      events.push({ event: effect.event, announcement: true });
      continue;
    }
    try {
      await write(ports, cluster, effect);
      writes++;
    } catch (error) {
      return { events, failure: { effect, error }, writes };
    }
    if (effect.event) events.push({ event: effect.event, announcement: false });
  }
  return { events, writes };
}
