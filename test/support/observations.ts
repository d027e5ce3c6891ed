/**
 * Observations for tests, built from a few named facts about the world. The objects are the ones a
 * correct pgfsm would have written (built with the domain's own desired-object builders), then the
 * facts perturb them: missing, drifted, failed, not ready, released.
 */
import type { PostgresCluster, PostgresClusterClass } from '../../src/api/schema.ts';
import { desiredCnpgCluster } from '../../src/domain/components/cluster.ts';
import { CnpgPhase } from '../../src/domain/components/cnpg-phases.ts';
import { desiredConfigMap } from '../../src/domain/components/configmap.ts';
import { desiredRoles } from '../../src/domain/components/managed-roles.ts';
import { desiredPooler, POOLER_TYPES } from '../../src/domain/components/pooler.ts';
import { mergeConfig } from '../../src/domain/config.ts';
import { childNames, FINALIZER, ownerReferenceTo } from '../../src/domain/names.ts';
import type { CnpgCluster, OwnerReference, PoolerView, SecretView } from '../../src/domain/objects.ts';
import { defaultSettings, type Observation, type Settings } from '../../src/domain/observation.ts';

export interface Facts {
  finalizer: boolean;
  deletion: boolean;
  suspend: boolean;
  policy: 'Delete' | 'Retain';
  classPresent: boolean;
  specValid: boolean;
  poolerEnabled: boolean;
  /** Managed roles in the spec (each with a password Secret). */
  roles: string[];
  secret: 'missing' | 'ready' | 'noKey' | 'orphan' | 'released';
  /** `healthy`, `missing`, `drifted`, `scaling`, `released`, or a CNPG phase sentence. */
  cnpg: string;
  rolesState: 'reconciled' | 'pending' | 'failed' | 'secretMissing' | 'notPushed';
  poolers: 'missing' | 'notReady' | 'ready' | 'drifted' | 'foreign';
  configMap: 'missing' | 'ready' | 'drifted' | 'released' | 'foreign';
}

export const healthyFacts: Facts = {
  finalizer: true,
  deletion: false,
  suspend: false,
  policy: 'Retain',
  classPresent: true,
  specValid: true,
  poolerEnabled: true,
  roles: ['app'],
  secret: 'ready',
  cnpg: 'healthy',
  rolesState: 'reconciled',
  poolers: 'ready',
  configMap: 'ready',
};

export const NAMESPACE = 'team-a';
/** A controller that is not pgfsm. */
export const FOREIGN_OWNER: OwnerReference = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  name: 'someone-else',
  uid: 'uid-foreign',
  controller: true,
};
export const CLUSTER_UID = 'uid-orders';

export function makeClass(overrides: Partial<PostgresClusterClass['spec']> = {}): PostgresClusterClass {
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresClusterClass',
    metadata: { name: 'standard', uid: 'uid-class' },
    spec: {
      provisioner: 'postgresql.cnpg.io',
      config: { instances: 3, storage: '10Gi', postgresVersion: '17', postgresqlConfig: { max_connections: '200' } },
      cnpg: { primaryUpdateMethod: 'switchover', connectionPooler: { instances: 2, mode: 'transaction' } },
      ...overrides,
    },
  };
}

export function makeCluster(facts: Facts, name = 'orders'): PostgresCluster {
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: {
      name,
      namespace: NAMESPACE,
      uid: CLUSTER_UID,
      generation: 1,
      finalizers: facts.finalizer ? [FINALIZER] : [],
      ...(facts.deletion ? { deletionTimestamp: '2026-11-30T00:00:00Z' } : {}),
    },
    spec: {
      class: 'standard',
      ...(facts.specValid ? {} : { instances: 0 }),
      connectionPoolerEnabled: facts.poolerEnabled,
      managedRoles: facts.roles.map((role) => ({ name: role, passwordSecretRef: { name: `${role}-password` } })),
      clusterDeletionPolicy: facts.policy,
      suspend: facts.suspend,
    },
  };
}

const secretView = (name: string, keys: string[], owners: OwnerReference[] = []): SecretView => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: NAMESPACE, ownerReferences: owners },
  keys,
});

/** The observation a world described by `facts` would give. */
export function observe(facts: Facts, settings: Settings = defaultSettings): Observation {
  const cluster = makeCluster(facts);
  const clusterClass = facts.classPresent ? makeClass() : undefined;
  const names = childNames(cluster.metadata.name);
  const owner = ownerReferenceTo(cluster);
  const roleSecrets: Record<string, SecretView | undefined> = {};
  for (const role of facts.roles) {
    if (facts.rolesState !== 'secretMissing') {
      roleSecrets[`${role}-password`] = secretView(`${role}-password`, ['username', 'password']);
    }
  }
  const observation: Observation = { cluster, clusterClass, poolers: {}, roleSecrets };

  const secretOwners = facts.secret === 'orphan' || facts.secret === 'released' ? [] : [owner];
  if (facts.secret !== 'missing') {
    observation.secret = secretView(
      names.secret,
      facts.secret === 'noKey' ? ['username'] : ['username', 'password'],
      secretOwners,
    );
  }

  // Desired objects need a valid merged config; for invalid specs build them from the valid variant.
  const validFacts = { ...facts, specValid: true, classPresent: true };
  const merged = mergeConfig({ ...observation, cluster: makeCluster(validFacts), clusterClass: makeClass() });
  if (!merged.ok) throw new Error(`fixture config invalid: ${merged.message}`);
  const config = merged.config;

  if (facts.cnpg !== 'missing') {
    const cnpg: CnpgCluster = structuredClone(desiredCnpgCluster(observation, config));
    if (facts.cnpg === 'released') cnpg.metadata.ownerReferences = [];
    if (facts.cnpg === 'drifted') cnpg.spec.instances = 1;
    const phase =
      facts.cnpg === 'healthy' || facts.cnpg === 'drifted' || facts.cnpg === 'scaling' || facts.cnpg === 'released'
        ? CnpgPhase.Healthy
        : facts.cnpg;
    // CNPG adds parameters of its own; they must never count as drift.
    cnpg.spec.postgresql = {
      ...cnpg.spec.postgresql,
      parameters: { ...cnpg.spec.postgresql?.parameters, shared_buffers: '128MB' },
    };
    const ready = facts.cnpg === 'scaling' ? 1 : phase === CnpgPhase.Healthy ? config.instances : 0;
    cnpg.status = {
      phase,
      instances: config.instances,
      readyInstances: ready,
      currentPrimary: `${names.cnpgCluster}-1`,
    };
    observation.cnpg = cnpg;
    const roles = desiredRoles(observation, config).roles;
    if (facts.rolesState !== 'notPushed' && facts.rolesState !== 'secretMissing') cnpg.spec.managed = { roles };
    const roleNames = roles.map((r) => r.name);
    cnpg.status.managedRolesStatus = {
      byStatus: {
        reconciled: facts.rolesState === 'reconciled' ? roleNames : [],
        'pending-reconciliation': facts.rolesState === 'pending' ? roleNames : [],
        reserved: ['postgres', 'streaming_replica'],
      },
      cannotReconcile: facts.rolesState === 'failed' ? { [roleNames[0] ?? 'app']: ['role is in use'] } : {},
    };
  }

  if (facts.poolerEnabled && config.pooler && facts.poolers !== 'missing') {
    const poolerConfig = config.pooler;
    const views: Partial<Record<'rw' | 'ro', PoolerView>> = {};
    for (const type of POOLER_TYPES) {
      const pooler = structuredClone(desiredPooler(observation, poolerConfig, type));
      if (facts.poolers === 'drifted') pooler.spec.instances = 1;
      if (facts.poolers === 'foreign') pooler.metadata.ownerReferences = [FOREIGN_OWNER];
      pooler.status = { instances: pooler.spec.instances ?? 1 };
      views[type] = { pooler, readyReplicas: facts.poolers === 'notReady' ? 0 : (pooler.spec.instances ?? 1) };
    }
    observation.poolers = views;
  }

  if (facts.configMap !== 'missing') {
    const configMap = structuredClone(desiredConfigMap(observation, config, settings));
    if (facts.configMap === 'drifted') configMap.data = { ...configMap.data, CLUSTER_RW_ENDPOINT: 'somewhere.else' };
    if (facts.configMap === 'released') configMap.metadata.ownerReferences = [];
    if (facts.configMap === 'foreign') configMap.metadata.ownerReferences = [FOREIGN_OWNER];
    observation.configMap = configMap;
  }
  return observation;
}

export const tickOf = (facts: Facts, now = Date.parse('2026-11-30T12:00:00Z'), settings = defaultSettings) => ({
  type: 'tick' as const,
  now,
  observation: observe(facts, settings),
  settings,
});
