/** Observation facts as short phrases, per component: what the blocker line and the text output print. */
import type { Component } from '../domain/vocabulary.ts';
import { poolerFacts } from './facts.ts';
import type { ObjectFact, ObservedFacts } from './types.ts';

/** What a reader calls each component when it is waited for. */
export const LEAD: Record<Component, string> = {
  secret: 'the superuser Secret',
  cluster: 'CNPG',
  managedRoles: 'managed roles',
  pooler: 'the poolers',
  configMap: 'the endpoints ConfigMap',
};

/** Each component's pipeline step, as the machine names it (`Provisioning.<Step>`, `Failed.<Step>`). */
export const STEP_OF: Record<Component, string> = {
  secret: 'Secret',
  cluster: 'Cluster',
  managedRoles: 'ManagedRoles',
  pooler: 'Pooler',
  configMap: 'ConfigMap',
};

/** Only worth saying when it is not ours: an orphan is adopted, a foreign one blocks for good. */
const control = (o: ObjectFact) =>
  o.exists && o.ownership !== 'ours' ? [`${o.name} controlled by ${o.controller ?? 'nobody'}`] : [];

const secretFacts = ({ secret }: ObservedFacts) =>
  secret.exists
    ? [`Secret ${secret.name} keys: ${secret.keys.join(', ') || 'none'}`, ...control(secret)]
    : [`Secret ${secret.name} missing`];

export function cnpgFacts({ cnpg }: ObservedFacts): string[] {
  if (!cnpg.exists) return [`CNPG Cluster ${cnpg.name} missing`];
  const reason = cnpg.phaseReason ? ` (${cnpg.phaseReason})` : '';
  return [
    `phase '${cnpg.phase ?? 'none'}'${reason}`,
    `readyInstances ${cnpg.readyInstances ?? 0}/${cnpg.instances ?? '?'}`,
    ...control(cnpg),
  ];
}

function roleFacts({ roles }: ObservedFacts): string[] {
  const open = roles.flatMap((r) => {
    if (r.state === 'waitingForSecret') return [`Secret ${r.secret} for role ${r.name} missing`];
    if (r.state === 'failed') return [`role ${r.name} failed: ${r.error}`];
    if (r.state === 'pending') return [`role ${r.name} not reconciled by CNPG yet`];
    return [];
  });
  if (open.length > 0) return open;
  return [`${roles.filter((r) => r.state === 'reconciled').length} role(s) reconciled`];
}

function poolerPhrases(facts: ObservedFacts): string[] {
  const poolers = poolerFacts(facts);
  if (facts.poolers.enabled === false) {
    const left = poolers.filter((p) => p.exists).map((p) => `${p.type} pooler ${p.name} still exists`);
    return left.length ? [...left, 'the pooler is disabled'] : ['the pooler is disabled'];
  }
  return poolers.flatMap((p) =>
    p.exists ? [`${p.type} ready ${p.readyReplicas ?? 0}/${p.instances ?? '?'}`, ...control(p)] : [`${p.type} missing`],
  );
}

function configMapFacts({ configMap }: ObservedFacts): string[] {
  if (!configMap.exists) return [`ConfigMap ${configMap.name} missing`];
  const drift = configMap.driftedKeys.length ? [`drifted keys ${configMap.driftedKeys.join(', ')}`] : [];
  return [...drift, ...control(configMap)];
}

export function componentFacts(component: Component, facts: ObservedFacts): string[] {
  switch (component) {
    case 'secret':
      return secretFacts(facts);
    case 'cluster':
      return cnpgFacts(facts);
    case 'managedRoles':
      return roleFacts(facts);
    case 'pooler':
      return poolerPhrases(facts);
    case 'configMap':
      return configMapFacts(facts);
  }
}
