/**
 * The raw facts of an observation that a reader needs to act: CNPG's phase and ready instances, each
 * pooler's ready replicas, which role Secrets are missing, which ConfigMap keys drifted, who owns what.
 * Secrets appear as names and key names only: the ports never hand over a value, and nor does this.
 */
import type { Assessment } from '../domain/assessment.ts';
import { cnpgRef } from '../domain/components/cluster.ts';
import { configMapDrift, configMapRef, desiredConfigMap } from '../domain/components/configmap.ts';
import { rolesStatus } from '../domain/components/managed-roles.ts';
import { POOLER_TYPES, type PoolerType, poolerRef } from '../domain/components/pooler.ts';
import { secretRef } from '../domain/components/secret.ts';
import type { KubeObject } from '../domain/objects.ts';
import type { Observation, Settings } from '../domain/observation.ts';
import { describeOwner, ownershipOf } from '../domain/vocabulary.ts';
import type { ObjectFact, ObservedFacts, OwnerFact, PoolerFact, RoleFact } from './types.ts';

function ownerOf(object: KubeObject | undefined, observation: Observation): OwnerFact {
  if (!object) return { ownership: 'none', controller: null };
  const owners = object.metadata.ownerReferences;
  const controller = describeOwner(owners);
  return {
    ownership: ownershipOf(owners, observation.cluster),
    controller: controller === 'nobody' ? null : controller,
  };
}

const objectFact = (name: string, object: KubeObject | undefined, observation: Observation): ObjectFact => ({
  name,
  exists: object !== undefined,
  ...ownerOf(object, observation),
});

function poolerFact(type: PoolerType, observation: Observation, assessment: Assessment): PoolerFact {
  const view = observation.poolers[type];
  const wanted = assessment.config?.pooler?.instances ?? view?.pooler.spec?.instances ?? null;
  return {
    type,
    ...objectFact(poolerRef(observation, type).name, view?.pooler, observation),
    readyReplicas: view ? view.readyReplicas : null,
    instances: wanted,
  };
}

function roleFacts(observation: Observation, assessment: Assessment): RoleFact[] {
  // The stored object may be malformed (the operator reports that as InvalidSpec); skip nameless roles.
  const spec = (
    Array.isArray(observation.cluster.spec?.managedRoles) ? observation.cluster.spec.managedRoles : []
  ).filter((r) => typeof r?.name === 'string');
  const desired = assessment.roles;
  const status = desired ? rolesStatus(observation, desired) : undefined;
  return spec.map((role): RoleFact => {
    const secret = role?.passwordSecretRef?.name ?? null;
    const secretExists = secret === null ? null : observation.roleSecrets[secret] !== undefined;
    const error = status?.failed[role.name] ?? null;
    const state: RoleFact['state'] =
      role.exists === false
        ? 'absent'
        : error !== null
          ? 'failed'
          : desired?.waitingForSecret[role.name]
            ? 'waitingForSecret'
            : status?.reconciled.includes(role.name)
              ? 'reconciled'
              : 'pending';
    return { name: role.name, secret, secretExists, state, error };
  });
}

function driftedKeys(observation: Observation, assessment: Assessment, settings: Settings): string[] {
  if (!observation.configMap || !assessment.config) return [];
  return configMapDrift(observation.configMap, desiredConfigMap(observation, assessment.config, settings));
}

/** The children that still name this PostgresCluster (by uid) among their owners. */
export function stillOwned(observation: Observation): string[] {
  const uid = observation.cluster.metadata.uid;
  const children: Array<KubeObject | undefined> = [
    observation.poolers.rw?.pooler,
    observation.poolers.ro?.pooler,
    observation.cnpg,
    observation.secret,
    observation.configMap,
    observation.backup?.store,
    observation.backup?.sourceStore,
    observation.backup?.scheduled,
    observation.backup?.onDemand,
  ];
  return children
    .filter((c): c is KubeObject => c !== undefined && (c.metadata.ownerReferences ?? []).some((o) => o.uid === uid))
    .map((c) => `${c.kind} ${c.metadata.name}`);
}

export function observedFacts(observation: Observation, assessment: Assessment, settings: Settings): ObservedFacts {
  const { cnpg, secret, configMap } = observation;
  const className = typeof observation.cluster.spec?.class === 'string' ? observation.cluster.spec.class : null;
  return {
    class: { name: className, found: observation.clusterClass !== undefined },
    secret: { ...objectFact(secretRef(observation).name, secret, observation), keys: [...(secret?.keys ?? [])].sort() },
    cnpg: {
      ...objectFact(cnpgRef(observation).name, cnpg, observation),
      phase: cnpg?.status?.phase ?? null,
      phaseReason: cnpg?.status?.phaseReason ?? null,
      // What pgfsm asks for is the bar (CNPG's own count lags a scale-out).
      instances: assessment.config?.instances ?? cnpg?.status?.instances ?? null,
      readyInstances: cnpg ? (cnpg.status?.readyInstances ?? 0) : null,
      currentPrimary: cnpg?.status?.currentPrimary ?? null,
    },
    roles: roleFacts(observation, assessment),
    poolers: {
      enabled: assessment.config ? assessment.config.pooler !== undefined : null,
      rw: poolerFact('rw', observation, assessment),
      ro: poolerFact('ro', observation, assessment),
    },
    configMap: {
      ...objectFact(configMapRef(observation).name, configMap, observation),
      driftedKeys: driftedKeys(observation, assessment, settings),
    },
    stillOwned: stillOwned(observation),
  };
}

export const poolerFacts = (facts: ObservedFacts): PoolerFact[] => POOLER_TYPES.map((t) => facts.poolers[t]);
