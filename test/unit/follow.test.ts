/**
 * A pass that follows its own writes (core/follow.ts) must tick on what a fresh read of the world would
 * give: the answers it folds in are checked here against the observation of the world those writes make.
 */

import { describe, expect, it } from 'vitest';
import { initialTransition } from 'xstate';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { encodeState, restoreState } from '../../machines/state-path.ts';
import { tickMachine } from '../../machines/tick.ts';
import type { WriteAnswer } from '../../src/operator/core/execute.ts';
import { observedAfter } from '../../src/operator/core/follow.ts';
import { assessTick } from '../../src/operator/domain/assessment.ts';
import type { Write } from '../../src/operator/domain/effects.ts';
import { FINALIZER } from '../../src/operator/domain/vocabulary.ts';
import { switchedOff } from '../../src/tools/fixtures/backups.ts';
import { type Facts, healthyFacts, observe, tickOf } from '../../src/tools/fixtures/observations.ts';

const fresh = () => initialTransition(postgresClusterMachine)[0];
const writesOf = (facts: Facts) =>
  tickMachine(fresh(), tickOf(facts)).effects.filter((e) => e.type !== 'event') as Write[];

/** The state and effects of the tick after the first, on `observation`, from the state the first reached. */
function nextTick(facts: Facts, observation: ReturnType<typeof observe>) {
  const first = tickMachine(fresh(), tickOf(facts));
  const reached = restoreState(encodeState(first.taken.value));
  if (!reached) throw new Error('unrestorable state');
  const { taken, effects } = tickMachine(reached, { ...tickOf(facts), observation });
  return { state: encodeState(taken.value), effects };
}

const newCluster: Facts = {
  ...healthyFacts,
  finalizer: false,
  poolerEnabled: false,
  roles: [],
  secret: 'missing',
  cnpg: 'missing',
  configMap: 'missing',
};

describe('observedAfter', () => {
  it('adds the finalizer at the version the write answered, and the next tick is the one a fresh read gives', () => {
    const facts = newCluster;
    const [write] = writesOf(facts);
    expect(write?.type).toBe('addFinalizer');
    const before = observe(facts);
    const cluster = { ...before.cluster, metadata: { ...before.cluster.metadata, resourceVersion: '8' } };
    const after = observedAfter(before, cluster, [{ effect: write as Write, answer: '8' }]);
    expect(after?.cluster.metadata.finalizers).toEqual([FINALIZER]);
    expect(after?.cluster.metadata.resourceVersion).toBe('8');
    // What was observed is not changed in place: the pass's first tick keeps its own view.
    expect(before.cluster.metadata.finalizers).toEqual([]);
    const read = observe({ ...facts, finalizer: true });
    expect(nextTick(facts, after as never)).toEqual(nextTick(facts, read));
    expect(nextTick(facts, read).effects.map((e) => e.type)).toContain('createSecret');
  });

  it('takes the Secret as created, and the next tick is the one a fresh read gives', () => {
    const facts = { ...newCluster, finalizer: true };
    const [write] = writesOf(facts);
    expect(write?.type).toBe('createSecret');
    const read = observe({ ...facts, secret: 'ready' });
    const after = observedAfter(observe(facts), observe(facts).cluster, [
      { effect: write as Write, answer: read.secret },
    ]);
    expect(after?.secret).toEqual(read.secret);
    expect(nextTick(facts, after as never)).toEqual(nextTick(facts, read));
  });

  it('takes the ConfigMap as stored, and the next tick is the one a fresh read gives: Ready', () => {
    const facts = { ...healthyFacts, configMap: 'missing' as const };
    const [write] = writesOf(facts);
    expect(write).toMatchObject({ type: 'apply', component: 'configMap' });
    const read = observe({ ...facts, configMap: 'ready' });
    const after = observedAfter(observe(facts), observe(facts).cluster, [
      { effect: write as Write, answer: read.configMap },
    ]);
    expect(nextTick(facts, after as never)).toEqual(nextTick(facts, read));
    expect(nextTick(facts, read).state).toBe('Ready');
  });

  it('a switched-off cluster whose ScheduledBackup and ObjectStore were deleted ticks on without them', () => {
    const before = switchedOff(tickOf(healthyFacts).observation, true);
    const writes = assessTick({ ...tickOf(healthyFacts), observation: before }).backup?.schedule ?? [];
    expect(writes.map((w) => w.type)).toEqual(['delete', 'delete']);
    const after = observedAfter(
      before,
      before.cluster,
      writes.map((effect) => ({ effect: effect as Write, answer: undefined })),
    );
    expect(after?.backup).toEqual({ secrets: before.backup?.secrets });
    expect(assessTick({ ...tickOf(healthyFacts), observation: after as never }).backup).toBeUndefined();
    // A deletion of the cluster is not followed: it waits for a read to show its children gone.
    const deleting = {
      ...before,
      cluster: {
        ...before.cluster,
        metadata: { ...before.cluster.metadata, deletionTimestamp: '2026-12-07T12:00:00Z' },
      },
    };
    expect(
      observedAfter(deleting, deleting.cluster, [{ effect: writes[0] as Write, answer: undefined }]),
    ).toBeUndefined();
  });

  it('stops at a write whose answer does not say what the world holds', () => {
    const observation = observe(newCluster);
    const { cluster } = observation;
    const secret = writesOf({ ...newCluster, finalizer: true })[0] as Write;
    const cnpg = writesOf({ ...newCluster, finalizer: true, secret: 'ready' })[0] as Write;
    expect(secret.type).toBe('createSecret');
    expect(cnpg).toMatchObject({ type: 'apply', component: 'cluster' });
    const cases: Array<[string, WriteAnswer[]]> = [
      ['no write', []],
      ['a finalizer nothing was written for', [{ effect: { type: 'addFinalizer' }, answer: undefined }]],
      ['a create whose answer was lost and a read showed landed', [{ effect: secret, answer: undefined }]],
      [
        'a create answered with another object',
        [{ effect: secret, answer: { ...observe(healthyFacts).secret, metadata: { name: 'other', namespace: 'x' } } }],
      ],
      ['the CNPG Cluster applied', [{ effect: cnpg, answer: undefined }]],
      ['a finalizer removed', [{ effect: { type: 'removeFinalizer' }, answer: '9' }]],
    ];
    for (const [what, answers] of cases) expect(observedAfter(observation, cluster, answers), what).toBeUndefined();
    // Nor past such a write when an earlier one could be folded in.
    expect(
      observedAfter(observation, cluster, [
        { effect: { type: 'addFinalizer' }, answer: '8' },
        { effect: { type: 'removeFinalizer' }, answer: '9' },
      ]),
    ).toBeUndefined();
  });
});
