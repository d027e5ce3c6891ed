/**
 * The tick payloads the graph traversal tries in every state: named worlds, from nothing at all through
 * first provisioning to a healthy cluster, plus one deviation at a time from the healthy world. Together
 * they make every guard of the machine both pass and fail somewhere.
 */
import { CnpgPhase } from '../../src/domain/components/cnpg-phases.ts';
import type { TickEvent } from '../../src/domain/observation.ts';
import { type Facts, healthyFacts, tickOf } from '../support/observations.ts';

export type SampleTick = TickEvent & { sample: string; facts: Facts };

const nothing: Partial<Facts> = {
  secret: 'missing',
  cnpg: 'missing',
  rolesState: 'notPushed',
  poolers: 'missing',
  configMap: 'missing',
};

/** First provisioning, step by step. */
export const progression: Array<[string, Partial<Facts>]> = [
  ['fresh', { ...nothing, finalizer: false }],
  ['finalizer only', nothing],
  ['secret ready', { ...nothing, secret: 'ready' }],
  ['cnpg no phase yet', { ...nothing, secret: 'ready', cnpg: '' }],
  ['cnpg setting up primary', { ...nothing, secret: 'ready', cnpg: CnpgPhase.FirstPrimary }],
  ['cnpg healthy, roles not pushed', { poolers: 'missing', configMap: 'missing', rolesState: 'notPushed' }],
  ['roles pending', { poolers: 'missing', configMap: 'missing', rolesState: 'pending' }],
  ['roles reconciled', { poolers: 'missing', configMap: 'missing' }],
  ['poolers not ready', { poolers: 'notReady', configMap: 'missing' }],
  ['poolers ready', { configMap: 'missing' }],
  ['healthy', {}],
];

/** One thing wrong with an otherwise healthy world. */
export const deviations: Array<[string, Partial<Facts>]> = [
  ['switchover', { cnpg: CnpgPhase.Switchover }],
  ['failing over', { cnpg: CnpgPhase.FailOver }],
  ['applying configuration', { cnpg: CnpgPhase.ApplyingConfiguration }],
  ['cnpg scaling', { cnpg: 'scaling' }],
  ['cnpg drifted', { cnpg: 'drifted' }],
  ['cnpg unrecoverable', { cnpg: CnpgPhase.Unrecoverable }],
  ['cnpg waiting for user', { cnpg: CnpgPhase.WaitingForUser }],
  ['secret deleted', { secret: 'missing' }],
  ['secret without password', { secret: 'noKey' }],
  ['secret orphaned', { secret: 'orphan' }],
  ['role password secret missing', { rolesState: 'secretMissing' }],
  ['role cannot be reconciled', { rolesState: 'failed' }],
  ['poolers drifted', { poolers: 'drifted' }],
  ['pooler of someone else', { poolers: 'foreign' }],
  ['configmap drifted', { configMap: 'drifted' }],
  ['configmap deleted', { configMap: 'missing' }],
  ['configmap of someone else', { configMap: 'foreign' }],
  ['finalizer removed', { finalizer: false }],
  ['suspended', { suspend: true }],
  ['class missing', { classPresent: false }],
  ['spec invalid', { specValid: false }],
  ['deletion requested', { deletion: true }],
  ['deletion, poolers gone', { deletion: true, poolers: 'missing' }],
  [
    'deletion, children released (Retain)',
    { deletion: true, poolers: 'missing', secret: 'released', cnpg: 'released', configMap: 'released' },
  ],
  [
    'deletion, children deleted (Delete)',
    { deletion: true, policy: 'Delete', poolers: 'missing', secret: 'missing', cnpg: 'missing', configMap: 'missing' },
  ],
];

const sample = (name: string, facts: Partial<Facts>): SampleTick => {
  const all = { ...healthyFacts, ...facts };
  return { ...tickOf(all), sample: name, facts: all };
};

export const progressionSamples = progression.map(([name, facts]) => sample(name, facts));
export const allSamples = [...progressionSamples, ...deviations.map(([name, facts]) => sample(name, facts))];
