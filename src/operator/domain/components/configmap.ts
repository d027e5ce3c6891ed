/** The endpoints ConfigMap consumers read: connection endpoints, never a secret value. */
import type { MergedConfig } from '../config.ts';
import { type Effect, type KubeEvent, normal } from '../effects.ts';
import type { ConfigMap, ObjectRef } from '../objects.ts';
import type { Observation, Settings } from '../observation.ts';
import { heldByOther, type Judgment, judgment, verdict } from '../verdict.ts';
import {
  CONDITION_OF,
  childLabels,
  childNames,
  DEFAULT_PORT,
  EventReason,
  mayAdopt,
  notAdoptableMessage,
  ownerReferenceTo,
  ownershipOf,
  Reason,
  SUPERUSER_NAME,
} from '../vocabulary.ts';
import { poolersServing } from './pooler.ts';

export const EndpointKey = {
  rw: 'CLUSTER_RW_ENDPOINT',
  ro: 'CLUSTER_RO_ENDPOINT',
  r: 'CLUSTER_R_ENDPOINT',
  port: 'DEFAULT_CLUSTER_PORT',
  superUserName: 'SUPER_USER_NAME',
  superUserSecretRef: 'SUPER_USER_SECRET_REF',
  poolerRw: 'CLUSTER_POOLER_RW_ENDPOINT',
  poolerRo: 'CLUSTER_POOLER_RO_ENDPOINT',
} as const;

export const configMapRef = (observation: Observation): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: observation.cluster.metadata.namespace,
  name: childNames(observation.cluster.metadata.name).configMap,
});

/**
 * The endpoints, as service FQDNs. CNPG names its services `<cluster>-rw|-ro|-r` and a pooler's service
 * after the pooler; pooler endpoints are published only once both poolers serve.
 */
export function desiredConfigMap(observation: Observation, config: MergedConfig, settings: Settings): ConfigMap {
  const { cluster } = observation;
  const ns = cluster.metadata.namespace;
  const names = childNames(cluster.metadata.name);
  const fqdn = (service: string) => `${service}.${ns}.svc.${settings.clusterDomain}`;
  const data: Record<string, string> = {
    [EndpointKey.rw]: fqdn(`${names.cnpgCluster}-rw`),
    [EndpointKey.ro]: fqdn(`${names.cnpgCluster}-ro`),
    [EndpointKey.r]: fqdn(`${names.cnpgCluster}-r`),
    [EndpointKey.port]: DEFAULT_PORT,
    [EndpointKey.superUserName]: SUPERUSER_NAME,
    [EndpointKey.superUserSecretRef]: names.secret,
  };
  if (poolersServing(observation, config)) {
    data[EndpointKey.poolerRw] = fqdn(names.poolerRw);
    data[EndpointKey.poolerRo] = fqdn(names.poolerRo);
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: names.configMap,
      namespace: ns,
      labels: childLabels(cluster.metadata.name),
      ownerReferences: [ownerReferenceTo(cluster)],
    },
    data,
  };
}

/**
 * Our keys whose value differs or that should not be there. Keys other writers added are theirs:
 * server-side apply leaves them alone, so counting them would report drift forever.
 */
export function configMapDrift(observed: ConfigMap, desired: ConfigMap): string[] {
  const o = observed.data ?? {};
  const d = desired.data ?? {};
  return Object.values(EndpointKey)
    .filter((k) => o[k] !== d[k])
    .sort();
}

const POOLER_KEYS = [EndpointKey.poolerRw, EndpointKey.poolerRo] as const;

/**
 * Whether the drift is only the pooler endpoints coming or going as a whole — what pgfsm itself wrote before
 * the poolers began or stopped serving — rather than someone's edit: `published` when both are to be added,
 * `withdrawn` when both, as pgfsm writes them, are to be removed; undefined for anything else.
 */
function poolerEndpointsChange(observation: Observation, observed: ConfigMap, desired: ConfigMap, drift: string[]) {
  const o = observed.data ?? {};
  const d = desired.data ?? {};
  if (drift.length === 0 || drift.some((k) => !(POOLER_KEYS as readonly string[]).includes(k))) return undefined;
  if (POOLER_KEYS.every((k) => d[k] !== undefined && o[k] === undefined)) return 'published';
  // The pooler services' names under the domain of the CNPG Cluster's, as desiredConfigMap builds them.
  const names = childNames(observation.cluster.metadata.name);
  const domain = (d[EndpointKey.rw] ?? '').slice(`${names.cnpgCluster}-rw`.length);
  const ours: Record<string, string> = {
    [EndpointKey.poolerRw]: `${names.poolerRw}${domain}`,
    [EndpointKey.poolerRo]: `${names.poolerRo}${domain}`,
  };
  if (POOLER_KEYS.every((k) => d[k] === undefined && o[k] === ours[k])) return 'withdrawn';
  return undefined;
}

/**
 * Missing: create it (the endpoints are published). Foreign, or orphaned and not handed over (`mayAdopt`): a
 * person's, never applied over. Orphaned and handed over (by a person, or by the Retain deletion that released
 * it): adopt it. Differing: update it when the poolers began or stopped serving, otherwise repair our keys.
 * `poolerEnabled` (the spec asks for a pooler) only says why pooler endpoints are withdrawn.
 */
export function judgeConfigMap(observation: Observation, desired: ConfigMap, poolerEnabled?: boolean): Judgment {
  const { configMap, cluster } = observation;
  const name = desired.metadata.name;
  const apply = (event: KubeEvent): Effect => ({ type: 'apply', component: 'configMap', object: desired, event });
  if (!configMap) {
    // Published before (the stored status says so): someone deleted it, and the person reading the Events
    // learns that from this one — the pass that re-creates it at once never leaves Ready in the status.
    const lost = cluster.status?.conditions?.some((c) => c.type === CONDITION_OF.configMap && c.status === 'True');
    const event = lost
      ? normal(EventReason.EndpointsRepaired, 'CreateConfigMap', `ConfigMap ${name} was deleted; published again`)
      : normal(EventReason.EndpointsPublished, 'CreateConfigMap', `Endpoints published in ConfigMap ${name}`);
    return judgment(
      verdict('Provisioning', Reason.ConfigMapPending, `ConfigMap ${name} does not exist yet`),
      apply(event),
    );
  }
  const ownership = ownershipOf(configMap.metadata.ownerReferences, cluster);
  if (ownership === 'foreign') {
    return judgment(heldByOther(Reason.ConfigMapOwnedByOther, `ConfigMap ${name}`, configMap.metadata.ownerReferences));
  }
  if (ownership === 'orphan' && !mayAdopt(configMap.metadata)) {
    return judgment(
      verdict(
        'Failed',
        Reason.ConfigMapNotAdoptable,
        notAdoptableMessage(`ConfigMap ${name}`, 'ConfigMap', configMap.metadata, cluster),
      ),
    );
  }
  const drift = configMapDrift(configMap, desired);
  const what = drift.length ? `keys ${drift.join(', ')} differ` : 'adopting it';
  if (ownership === 'orphan') {
    return judgment(
      verdict('Provisioning', Reason.ConfigMapDrifted, `ConfigMap ${name}: ${what}`),
      apply(normal(EventReason.EndpointsAdopted, 'AdoptConfigMap', `Adopted the existing ConfigMap ${name}`)),
    );
  }
  if (drift.length > 0) {
    const change = poolerEndpointsChange(observation, configMap, desired, drift);
    const why =
      change === 'published'
        ? 'the poolers serve'
        : poolerEnabled === false
          ? 'the pooler is switched off'
          : 'the poolers are not serving';
    const event = change
      ? normal(
          EventReason.EndpointsUpdated,
          'UpdateConfigMap',
          `ConfigMap ${name} updated: pooler endpoints ${change === 'published' ? 'added' : 'removed'}, ${why}`,
        )
      : normal(
          EventReason.EndpointsRepaired,
          'RepairConfigMap',
          `ConfigMap ${name} repaired: ${drift.join(', ')} set back to what pgfsm publishes`,
        );
    return judgment(verdict('Provisioning', Reason.ConfigMapDrifted, `ConfigMap ${name}: ${what}`), apply(event));
  }
  return judgment(verdict('Ready', Reason.ConfigMapReconciled, 'Endpoints ConfigMap is up to date'));
}
