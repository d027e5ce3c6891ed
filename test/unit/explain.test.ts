/**
 * `pgfsm explain`, the pure part: for observations in every kind of state, the explanation names the
 * guard that holds the resource (a PostgresCluster or a PostgresDatabase), the observation behind it, where
 * it goes next, the deadline, and a hint when a person can act. The machines and the checks are the real ones.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { databaseMetaOf, restoreDatabaseState } from '../../machines/database-state-path.ts';
import type { Condition, PostgresDatabase } from '../../src/operator/api/schema.ts';
import {
  type ExplainOptions,
  type ExplainTarget,
  parseTarget,
  registerExplain,
  resolveTarget,
} from '../../src/operator/cli/explain.ts';
import { observeDatabase } from '../../src/operator/core/database/observe.ts';
import { reconcileDatabase } from '../../src/operator/core/database/reconcile.ts';
import { projectDatabaseStatus } from '../../src/operator/core/database/status.ts';
import { toSeconds } from '../../src/operator/core/status.ts';
import { assessDatabase } from '../../src/operator/domain/database/assessment.ts';
import type { DatabaseObservation } from '../../src/operator/domain/database/observation.ts';
import { defaultSettings, type Observation, type Settings } from '../../src/operator/domain/observation.ts';
import {
  type DatabaseExplanation,
  type ExplainEvent,
  type Explanation,
  explain,
  explainDatabase,
  formatSeconds,
  renderJson,
  renderText,
} from '../../src/operator/explain/index.ts';
import {
  allDatabaseSamples,
  DATABASE_NAME,
  type DatabaseFacts,
  databaseObservation,
  healthyDatabaseFacts,
} from '../../src/tools/fixtures/database-samples.ts';
import { type Facts, healthyFacts, NAMESPACE, observe } from '../../src/tools/fixtures/observations.ts';
import { MemoryApiServer } from '../../src/tools/memory/api-server.ts';
import { memoryDatabasePorts } from '../../src/tools/memory/database-ports.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../../src/tools/memory/ports.ts';
import { forceDatabaseWorld } from '../paths/database-world.ts';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const MIN = 60_000;

interface World {
  facts?: Partial<Facts>;
  /** `status.state`; no status at all when absent. */
  state?: string;
  /** How long ago the state was entered. */
  sinceAgo?: number;
  conditions?: Condition[];
  settings?: Settings;
  events?: ExplainEvent[];
  tweak?: (o: Observation) => void;
}

function explained(world: World = {}): { x: Explanation; text: string; json: string } {
  const observation = observe({ ...healthyFacts, ...world.facts });
  if (world.state) {
    observation.cluster.status = {
      ...observation.cluster.status,
      state: world.state,
      stateSince: toSeconds(NOW - (world.sinceAgo ?? 3 * MIN + 12_000)),
      observedGeneration: 1,
      ...(world.conditions ? { conditions: world.conditions } : {}),
    };
  }
  world.tweak?.(observation);
  const x = explain({
    observation,
    settings: world.settings ?? defaultSettings,
    now: NOW,
    ...(world.events ? { events: world.events } : {}),
  });
  return { x, text: renderText(x), json: renderJson(x) };
}

const fresh: Partial<Facts> = {
  finalizer: false,
  secret: 'missing',
  cnpg: 'missing',
  rolesState: 'notPushed',
  poolers: 'missing',
  configMap: 'missing',
};

describe('explain: where the cluster is and what holds it there', () => {
  it('a fresh cluster: no status yet, the machine starts in Pending and adds the finalizer', () => {
    const { x, text } = explained({ facts: fresh });
    expect(x.state).toMatchObject({ stored: null, state: 'Pending', phase: 'Pending', since: null });
    expect(x.tick).toMatchObject({ next: 'Pending', moves: false, via: 'stays while [finalizerMissing]' });
    expect(x.tick.writes).toEqual(['add the finalizer']);
    expect(x.blocker).toMatchObject({ guard: 'finalizerMissing', holds: true, component: null });
    expect(x.whenClear).toEqual({ state: 'Provisioning', when: null });
    expect(x.hints).toContain('no status yet: is pgfsm running and watching namespace team-a?');
    expect(text).toContain('no status yet: the machine starts here');
  });

  it('waiting for CNPG: the phase and readyInstances are in the text, step 2 of 5', () => {
    const { x, text } = explained({
      facts: { cnpg: 'Setting up primary', rolesState: 'notPushed', poolers: 'missing', configMap: 'missing' },
      state: 'Provisioning.Cluster',
    });
    expect(x.state.path).toEqual(['Provisioning', 'Cluster']);
    expect(x.state.step).toEqual({ index: 2, of: 5, sequence: 'the pipeline' });
    expect(x.tick).toMatchObject({ next: 'Provisioning.Cluster', moves: false });
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(cluster)',
      holds: false,
      component: 'cluster',
      condition: 'ClusterReady',
      reason: 'CNPGClusterProvisioning',
      summary: "waiting for CNPG: phase 'Setting up primary', readyInstances 0/3",
    });
    expect(x.whenClear).toEqual({ state: 'Provisioning.ManagedRoles', when: 'componentReady(cluster)' });
    expect(x.observed.cnpg).toMatchObject({
      exists: true,
      phase: 'Setting up primary',
      readyInstances: 0,
      instances: 3,
    });
    expect(text).toContain('Provisioning › Cluster  step 2 of 5 of the pipeline');
    expect(text).toContain("waiting for CNPG: phase 'Setting up primary', readyInstances 0/3");
    expect(text).toContain('Then        Provisioning › ManagedRoles, when componentReady(cluster)');
  });

  it('a healthy phase with too few ready instances still waits, and says 1/3', () => {
    const { x } = explained({ facts: { cnpg: 'scaling' }, state: 'Provisioning.Cluster' });
    expect(x.blocker?.summary).toBe("waiting for CNPG: phase 'Cluster in healthy state', readyInstances 1/3");
    expect(x.blocker?.reason).toBe('CNPGClusterScaling');
  });

  it('a cluster whose stored state is behind the world: the tick says where it goes, computing writes', () => {
    const { x, text } = explained({
      facts: { poolers: 'missing', configMap: 'missing' },
      state: 'Provisioning.Cluster',
    });
    expect(x.tick).toMatchObject({ next: 'Provisioning.Pooler', moves: true });
    expect(x.tick.writes).toEqual(['apply Pooler orders-pooler-rw', 'apply Pooler orders-pooler-ro']);
    expect(x.blocker?.summary).toBe('waiting for the poolers: rw missing, ro missing');
    expect(text).toContain('moves to Provisioning › Pooler');
  });

  it('managed roles waiting for a password Secret: names it, and hints to create it', () => {
    const { x, text } = explained({ facts: { rolesState: 'secretMissing' }, state: 'Provisioning.ManagedRoles' });
    expect(x.tick.next).toBe('Provisioning.ManagedRoles');
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(managedRoles)',
      summary: 'waiting for managed roles: Secret app-password for role app missing',
    });
    expect(x.observed.roles).toEqual([
      { name: 'app', secret: 'app-password', secretExists: false, state: 'waitingForSecret', error: null },
    ]);
    expect(x.hints).toContain('create Secret team-a/app-password with keys username and password (role app)');
    expect(text).toContain('Secret app-password for role app missing');
  });

  it('a role CNPG refuses: Failed.ManagedRoles with its error', () => {
    const { x } = explained({ facts: { rolesState: 'failed' }, state: 'Failed.ManagedRoles' });
    expect(x.blocker).toMatchObject({ guard: 'componentFailed(managedRoles)', holds: true });
    expect(x.whenClear).toEqual({ state: 'Provisioning', when: null });
    expect(x.hints).toContain('CNPG cannot reconcile role app: role is in use');
  });

  it('a CNPG Cluster the API server refused: Failed.Cluster, with its words and what to change', () => {
    const { x } = explained({ facts: { refused: 'cluster' }, state: 'Failed.Cluster' });
    expect(x.blocker).toMatchObject({ guard: 'componentFailed(cluster)', holds: true, reason: 'ClusterSpecRejected' });
    expect(x.hints).toEqual([
      expect.stringMatching(
        /^the API server refused the Cluster write pgfsm would make: change the spec or the class; it said: admission webhook "vcluster\.cnpg\.io" denied the request/,
      ),
    ]);
  });

  it('poolers not ready: ready replicas per type', () => {
    const { x, text } = explained({ facts: { poolers: 'notReady' }, state: 'Provisioning.Pooler' });
    expect(x.state.step).toEqual({ index: 4, of: 5, sequence: 'the pipeline' });
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(pooler)',
      reason: 'PoolerCreating',
      summary: 'waiting for the poolers: rw ready 0/2, ro ready 0/2',
    });
    expect(x.observed.poolers.rw).toMatchObject({ name: 'orders-pooler-rw', readyReplicas: 0, instances: 2 });
    expect(x.whenClear?.state).toBe('Provisioning.ConfigMap');
    expect(text).toContain('rw ready 0/2, ro ready 0/2');
  });

  it('a drifted ConfigMap: the drifted keys', () => {
    const { x } = explained({ facts: { configMap: 'drifted' }, state: 'Provisioning.ConfigMap' });
    expect(x.tick).toMatchObject({ next: 'Provisioning.ConfigMap', writes: ['apply ConfigMap orders-endpoints'] });
    expect(x.blocker?.summary).toBe('waiting for the endpoints ConfigMap: drifted keys CLUSTER_RW_ENDPOINT');
    expect(x.whenClear).toEqual({ state: 'Ready', when: 'componentReady(configMap)' });
  });

  it('Ready: nothing blocks, nothing is written, no deadline', () => {
    const { x, text } = explained({ state: 'Ready', sinceAgo: 2 * 3_600_000 });
    expect(x.tick).toMatchObject({ next: 'Ready', moves: false, via: 'stays while [allReady]', writes: [] });
    expect(x.blocker).toBeNull();
    expect(x.whenClear).toBeNull();
    expect(x.hints).toEqual([]);
    expect(x.deadline).toMatchObject({ applies: false, at: null, leftSeconds: null, exceeded: false });
    expect(text).toContain('Blocked by  nothing: every component is healthy');
    expect(text).toContain('(2h ago)');
  });

  it('Degraded during a switchover: held by cnpgBusy, back to Ready when allReady', () => {
    const { x, text } = explained({ facts: { cnpg: 'Switchover in progress' }, state: 'Degraded' });
    expect(x.blocker).toMatchObject({
      guard: 'cnpgBusy',
      holds: true,
      component: 'cluster',
      reason: 'CNPGSwitchover',
    });
    expect(x.blocker?.summary).toContain("CNPG is busy: phase 'Switchover in progress'");
    expect(x.whenClear).toEqual({ state: 'Ready', when: 'allReady' });
    expect(text).toContain('cnpgBusy holds');
  });

  it('Failed.ClassMissing: hint to create the class, or to recreate the cluster (spec.class is immutable)', () => {
    const { x } = explained({ facts: { classPresent: false }, state: 'Failed.ClassMissing' });
    expect(x.tick.next).toBe('Failed.ClassMissing');
    expect(x.blocker).toMatchObject({ guard: 'classMissing', holds: true, reason: 'ClusterClassNotFound' });
    expect(x.blocker?.summary).toBe('PostgresClusterClass standard not found');
    expect(x.hints).toContain('create PostgresClusterClass standard; the cluster continues on its own');
    expect(x.hints.join('\n')).toContain('or delete this PostgresCluster and create it again naming an existing class');
    expect(x.hints.join('\n')).not.toContain('fix spec.class');
    expect(x.stalled.computed).toBe(true);
    expect(x.deadline.applies).toBe(false);
  });

  it('Failed.InvalidSpec: the hint names the field', () => {
    const { x } = explained({ facts: { specValid: false }, state: 'Failed.InvalidSpec' });
    expect(x.blocker).toMatchObject({ guard: 'specInvalid', holds: true, reason: 'InvalidConfiguration' });
    expect(x.blocker?.facts).toEqual(['field spec.instances']);
    expect(x.hints.some((h) => h.startsWith('fix spec.instances: spec.instances:'))).toBe(true);
  });

  it('a foreign Pooler: Failed.Pooler, with who controls it', () => {
    const { x } = explained({ facts: { poolers: 'foreign' }, state: 'Failed.Pooler' });
    expect(x.blocker).toMatchObject({ guard: 'componentFailed(pooler)', reason: 'PoolerOwnedByOther' });
    expect(x.hints).toContain(
      'Pooler orders-pooler-rw is controlled by Deployment/someone-else: remove it or rename this PostgresCluster',
    );
  });

  it('a CNPG Cluster with another superuser Secret: the Cluster step failed, with what to do', () => {
    const { x } = explained({
      facts: { cnpg: 'released' },
      state: 'Failed.Cluster',
      tweak: (o) => {
        if (o.cnpg) o.cnpg.spec = { ...o.cnpg.spec, superuserSecret: { name: 'orders-secret' } };
      },
    });
    expect(x.blocker).toMatchObject({ guard: 'componentFailed(cluster)', reason: 'ClusterSuperuserSecretMismatch' });
    expect(x.blocker?.summary).toMatch(
      /^the Cluster step failed: CNPG cluster orders uses superuser secret orders-secret, not orders-superuser/,
    );
  });

  it('Suspended: spec.suspend is true', () => {
    const { x } = explained({ facts: { suspend: true }, state: 'Suspended' });
    expect(x.blocker).toMatchObject({ guard: 'suspendRequested', holds: true, component: null });
    expect(x.whenClear).toEqual({ state: 'Provisioning', when: null });
    expect(x.hints).toContain('spec.suspend is true: set it to false to resume reconciliation');
  });

  it('Deleting with children still owned: names each child that carries our owner reference', () => {
    const { x, text } = explained({
      facts: { deletion: true, poolers: 'missing', policy: 'Delete' },
      state: 'Deleting.ApplyPolicy',
    });
    expect(x.cluster.deleting).toBe(true);
    expect(x.state.step).toEqual({ index: 2, of: 3, sequence: 'deletion' });
    expect(x.tick.next).toBe('Deleting.ApplyPolicy');
    expect(x.tick.writes).toEqual([
      'delete Cluster orders',
      'delete Secret orders-superuser',
      'delete ConfigMap orders-endpoints',
    ]);
    expect(x.blocker).toMatchObject({ guard: 'policyApplied', holds: false });
    expect(x.blocker?.facts).toEqual(['Cluster orders', 'Secret orders-superuser', 'ConfigMap orders-endpoints']);
    expect(x.whenClear).toEqual({ state: 'Deleting.RemoveFinalizer', when: 'policyApplied' });
    expect(x.hints[0]).toMatch(/^Cluster orders in team-a still carries our owner reference; pgfsm deletes it/);
    expect(text).toContain('waiting for the Delete policy: Cluster orders, Secret orders-superuser');
  });

  it('Deleting with the poolers still there: waits for poolersGone', () => {
    const { x } = explained({
      facts: { deletion: true },
      state: 'Deleting.Poolers',
      tweak: (o) => {
        // Released children: only the poolers still name the cluster.
        for (const child of [o.cnpg, o.secret, o.configMap]) if (child) child.metadata.ownerReferences = [];
      },
    });
    expect(x.blocker).toMatchObject({ guard: 'poolersGone', holds: false });
    expect(x.blocker?.facts).toEqual(['Pooler orders-pooler-rw', 'Pooler orders-pooler-ro']);
    expect(x.whenClear).toEqual({ state: 'Deleting.ApplyPolicy', when: 'poolersGone' });
  });

  it('a stored state this pgfsm does not know: starts afresh and says so', () => {
    const { x } = explained({ state: 'Provisioning.Database' });
    expect(x.state).toMatchObject({ stored: 'Provisioning.Database', state: 'Pending', since: null });
    expect(x.hints[0]).toContain('status.state Provisioning.Database is not a state of this pgfsm');
  });
});

describe('explain: the progress deadline', () => {
  const waiting = { facts: { poolers: 'notReady' as const }, state: 'Provisioning.Pooler' };

  it('time left = deadline − time in state', () => {
    const { x, text } = explained({ ...waiting, sinceAgo: 3 * MIN + 12_000 });
    expect(x.deadline).toEqual({
      applies: true,
      progressDeadlineSeconds: 900,
      at: '2026-11-30T12:11:48Z',
      leftSeconds: 708,
      exceeded: false,
    });
    expect(x.stalled.computed).toBe(false);
    expect(text).toContain('15m: 11m48s left (2026-11-30T12:11:48Z)');
  });

  it('past the deadline: exceeded, Stalled, and a hint naming the blocker', () => {
    const stalled: Condition = {
      type: 'Stalled',
      status: 'True',
      reason: 'ProvisioningPoolerDeadlineExceeded',
      message: 'No progress',
      lastTransitionTime: toSeconds(NOW - 5 * MIN),
    };
    const { x, text } = explained({ ...waiting, sinceAgo: 20 * MIN, conditions: [stalled] });
    expect(x.deadline).toMatchObject({ leftSeconds: -300, exceeded: true });
    expect(x.stalled).toEqual({ computed: true, condition: 'True', reason: 'ProvisioningPoolerDeadlineExceeded' });
    expect(x.hints).toContain(
      'no progress in Provisioning.Pooler past the progress deadline: waiting for the poolers: rw ready 0/2, ro ready 0/2',
    );
    expect(text).toContain('exceeded 5m ago');
    expect(text).toMatch(/Stalled\s+True\s+ProvisioningPoolerDeadlineExceeded\s+5m\s+No progress/);
  });

  it('a shorter --progress-deadline is what the math uses', () => {
    const settings = { ...defaultSettings, progressDeadlineMs: 2 * MIN };
    const { x } = explained({ ...waiting, sinceAgo: 3 * MIN, settings });
    expect(x.deadline).toMatchObject({ progressDeadlineSeconds: 120, leftSeconds: -60, exceeded: true });
  });

  it('formats ages the way kubectl does', () => {
    expect([0, 45, 192, 3600, 7500, 90_061, -300].map(formatSeconds)).toEqual([
      '0s',
      '45s',
      '3m12s',
      '1h',
      '2h5m',
      '1d1h',
      '5m',
    ]);
  });
});

describe('explain: conditions, events, JSON and secrets', () => {
  const events: ExplainEvent[] = [
    {
      type: 'Normal',
      reason: 'PoolersCreated',
      message: 'Poolers orders-pooler-rw and orders-pooler-ro created',
      count: 1,
      lastSeen: toSeconds(NOW - 90_000),
      reportingController: 'pgfsm',
    },
    {
      type: 'Warning',
      reason: 'PoolerReconciliationFailed',
      message: 'apply Pooler failed',
      count: 4,
      lastSeen: toSeconds(NOW - 10 * MIN),
      reportingController: 'pgfsm',
    },
  ];

  it('prints conditions with the age of their last transition and events with age, type, reason, count', () => {
    const condition: Condition = {
      type: 'PoolerReady',
      status: 'False',
      reason: 'PoolerCreating',
      message: 'rw pooler has 0/2 ready instances',
      lastTransitionTime: toSeconds(NOW - 7 * MIN),
    };
    const { x, text } = explained({
      facts: { poolers: 'notReady' },
      state: 'Provisioning.Pooler',
      conditions: [condition],
      events,
    });
    expect(x.conditions).toEqual([{ ...condition, ageSeconds: 420 }]);
    expect(x.events.map((e) => [e.reason, e.ageSeconds])).toEqual([
      ['PoolersCreated', 90],
      ['PoolerReconciliationFailed', 600],
    ]);
    expect(text).toContain('PoolerReady  False   PoolerCreating  7m   rw pooler has 0/2 ready instances');
    expect(text).toMatch(/1m30s\s+Normal\s+PoolersCreated\s+1\s+Poolers orders-pooler-rw and orders-pooler-ro created/);
    expect(text).toMatch(/10m\s+Warning\s+PoolerReconciliationFailed\s+4\s+apply Pooler failed/);
  });

  /** The keys of every object in a JSON value, by path; array elements share their array's path. */
  function keysByPath(value: unknown, at = '', out = new Map<string, Set<string>>()) {
    if (Array.isArray(value)) for (const v of value) keysByPath(v, `${at}[]`, out);
    else if (value !== null && typeof value === 'object') {
      out.set(at, (out.get(at) ?? new Set()).add(Object.keys(value).join(',')));
      for (const [k, v] of Object.entries(value)) keysByPath(v, `${at}.${k}`, out);
    }
    return out;
  }

  it('--output json is one document with the same keys in every state', () => {
    const worlds: World[] = [
      { facts: fresh },
      { facts: { cnpg: 'Setting up primary' }, state: 'Provisioning.Cluster', events },
      { state: 'Ready' },
      { facts: { classPresent: false }, state: 'Failed.ClassMissing' },
      { facts: { deletion: true, poolers: 'missing' }, state: 'Deleting.ApplyPolicy' },
      { facts: { suspend: true }, state: 'Suspended' },
    ];
    const documents = worlds.map((w) => explained(w));
    const all = new Map<string, Set<string>>();
    for (const { x, json } of documents) {
      const parsed = JSON.parse(json);
      expect(parsed).toEqual(x);
      // Nullable parts (blocker, whenClear, step) are null or whole; everything else is always there.
      const paths = keysByPath(parsed);
      for (const always of ['', '.cluster', '.state', '.tick', '.deadline', '.stalled', '.observed']) {
        expect(paths.has(always)).toBe(true);
      }
      keysByPath(parsed, '', all);
    }
    // One key list per path, whatever the state: that is what "stable" means for a script.
    for (const [path, lists] of all) expect([path, [...lists]]).toEqual([path, [[...lists][0]]]);
    expect(Object.keys(JSON.parse(documents[1]?.json ?? '{}'))).toEqual([
      'cluster',
      'now',
      'state',
      'tick',
      'blocker',
      'whenClear',
      'deadline',
      'stalled',
      'hints',
      'observed',
      'conditions',
      'events',
      'eventsError',
    ]);
    expect([...(all.get('.events[]') ?? [])]).toEqual([
      'type,reason,message,count,lastSeen,reportingController,ageSeconds',
    ]);
  });

  it('never prints a secret value: Secrets appear as names and key names only', () => {
    const leak = 'hunter2-not-printed';
    const { x, text, json } = explained({
      facts: { rolesState: 'secretMissing' },
      state: 'Provisioning.ManagedRoles',
      // Even if an adapter slipped values into a view, explain reads key names only.
      tweak: (o) => {
        Object.assign(o.secret ?? {}, { data: { password: leak }, stringData: { password: leak } });
      },
    });
    expect(x.observed.secret.keys).toEqual(['password', 'username']);
    expect(text).toContain('orders-superuser: keys password, username');
    expect(text).not.toContain(leak);
    expect(json).not.toContain(leak);
  });
});

interface DatabaseWorld {
  facts?: Partial<DatabaseFacts>;
  /** `status.state`, with the status the projection publishes in it; no status at all when absent. */
  state?: string;
  sinceAgo?: number;
  settings?: Settings;
  tweak?: (o: DatabaseObservation) => void;
  /** Conditions a pass stored besides the projection's (a failed write's). */
  conditions?: Condition[];
}

/** A PostgresDatabase world of the path tests' fixtures, its status projected as the operator would store it. */
function explainedDatabase(world: DatabaseWorld = {}): { x: DatabaseExplanation; text: string; json: string } {
  const observation = databaseObservation({ ...healthyDatabaseFacts, ...world.facts });
  world.tweak?.(observation);
  const settings = world.settings ?? defaultSettings;
  if (world.state) {
    const since = NOW - (world.sinceAgo ?? 3 * MIN + 12_000);
    const snapshot = restoreDatabaseState(world.state) ?? expect.fail(`${world.state} is no state`);
    observation.database.status = projectDatabaseStatus({
      state: world.state,
      meta: databaseMetaOf(snapshot),
      assessment: assessDatabase({ type: 'tick', now: since, observation, settings }),
      generation: 1,
      previous: undefined,
      now: since,
      since,
      settings,
    });
    const replaced = new Set(world.conditions?.map((c) => c.type));
    const kept = (observation.database.status.conditions ?? []).filter((c) => !replaced.has(c.type));
    observation.database.status.conditions = [...kept, ...(world.conditions ?? [])];
  }
  const x = explainDatabase({ observation, settings, now: NOW });
  return { x, text: renderText(x), json: renderJson(x) };
}

const nothingYet: Partial<DatabaseFacts> = {
  secrets: 'missing',
  roles: 'notPushed',
  cnpgDatabase: 'missing',
  privileges: false,
};

/** An orphan Secret of the role's name that nobody handed over: no owner, no pgfsm.io/adopt. */
const orphanSecrets = (o: DatabaseObservation) => {
  for (const view of Object.values(o.secrets)) {
    if (view) view.metadata = { ...view.metadata, ownerReferences: [], annotations: {} };
  }
};

describe('explain a PostgresDatabase: where it is and what holds it there', () => {
  it('a fresh database: no status yet, Pending adds the finalizer; the missing cluster is named already', () => {
    const { x, text } = explainedDatabase({ facts: { ...nothingYet, finalizer: false, cluster: 'missing' } });
    expect(x.database).toEqual({
      namespace: 'team-a',
      name: 'orders-app',
      uid: 'uid-orders-app',
      generation: 1,
      observedGeneration: null,
      deleting: false,
    });
    expect(x.state).toMatchObject({ stored: null, state: 'Pending', phase: 'Pending', since: null });
    expect(x.tick).toMatchObject({ next: 'Pending', moves: false, via: 'stays while [finalizerMissing]' });
    expect(x.tick.writes).toEqual(['add the finalizer']);
    expect(x.blocker).toMatchObject({ guard: 'finalizerMissing', holds: true, component: null });
    expect(x.whenClear).toEqual({ state: 'Provisioning', when: null });
    expect(x.hints).toContain('no status yet: is pgfsm running and watching namespace team-a?');
    expect(text.split('\n')[0]).toBe('PostgresDatabase team-a/orders-app  (generation 1, status observed never)');
  });

  it('the PostgresCluster it names does not exist: waits in Provisioning.Cluster, hints to create it', () => {
    const { x, text } = explainedDatabase({
      facts: { ...nothingYet, cluster: 'missing' },
      state: 'Provisioning.Cluster',
    });
    expect(x.state.step).toEqual({ index: 1, of: 6, sequence: 'the pipeline' });
    expect(x.tick).toMatchObject({ next: 'Provisioning.Cluster', moves: false, writes: [] });
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(cluster)',
      holds: false,
      component: 'cluster',
      condition: 'ClusterAvailable',
      reason: 'ClusterNotFound',
      summary: 'waiting for the PostgresCluster: PostgresCluster orders missing',
    });
    expect(x.whenClear).toEqual({ state: 'Provisioning.Claims', when: 'componentReady(cluster)' });
    expect(x.hints).toEqual([
      'create PostgresCluster team-a/orders: this PostgresDatabase waits for it (spec.cluster cannot be changed)',
    ]);
    expect(x.observed.cluster).toMatchObject({ name: 'orders', exists: false, published: false });
    expect(text).toContain('Provisioning › Cluster  step 1 of 6 of the pipeline');
    expect(text).toMatch(/ClusterAvailable\s+False\s+ClusterNotFound/);
  });

  it('a cluster that has not published its endpoints: points at explaining the cluster', () => {
    const { x } = explainedDatabase({
      facts: { ...nothingYet, cluster: 'unpublished' },
      state: 'Provisioning.Cluster',
    });
    expect(x.blocker?.reason).toBe('ClusterNotPublished');
    expect(x.hints).toEqual([
      'PostgresCluster orders is not Ready yet (Provisioning): pgfsm explain team-a/orders says why',
    ]);
  });

  it('the pooler turned on: the Secrets follow the cluster, the writes name them', () => {
    const { x } = explainedDatabase({ facts: { cluster: 'pooled', secrets: 'stale' }, state: 'Provisioning.Secrets' });
    expect(x.tick.writes).toEqual(['apply Secret orders-app-app', 'apply Secret orders-app-reader']);
    expect(x.blocker).toMatchObject({ guard: 'componentReady(secrets)', reason: 'SecretsFollowingCluster' });
    expect(x.blocker?.facts).toEqual(['Secret orders-app-app: host differ', 'Secret orders-app-reader: host differ']);
    expect(x.observed.cluster).toMatchObject({ pooled: true, rw: 'orders-pooler-rw.team-a.svc.cluster.local' });
    expect(x.hints).toEqual([]);
  });

  it('a Secret of a role’s name nobody handed over: the hint is the adopt command of its condition', () => {
    const { x } = explainedDatabase({ tweak: orphanSecrets, state: 'Failed.Secrets' });
    expect(x.blocker).toMatchObject({ guard: 'componentFailed(secrets)', holds: true, reason: 'SecretOwnedByOther' });
    expect(x.whenClear).toEqual({ state: 'Provisioning', when: null });
    const command = 'kubectl annotate -n team-a secret orders-app-app pgfsm.io/adopt=true';
    expect(x.blocker?.message).toContain(`To hand it over: ${command}`);
    expect(x.hints).toEqual([expect.stringContaining(`hand it over: ${command}; otherwise delete it`)]);
    expect(x.observed.secrets[0]).toMatchObject({ name: 'orders-app-app', ownership: 'orphan', handedOver: false });
  });

  it('Secrets another controller holds: one hint per Secret', () => {
    const { x } = explainedDatabase({ facts: { secrets: 'foreign' }, state: 'Failed.Secrets' });
    expect(x.hints).toEqual([
      'Secret orders-app-app is controlled by Deployment/someone-else: remove it or rename this PostgresDatabase',
      'Secret orders-app-reader is controlled by Deployment/someone-else: remove it or rename this PostgresDatabase',
    ]);
  });

  it('a role another, older database holds: RoleClaimed names the holder, the hints what to change', () => {
    const { x, text } = explainedDatabase({ facts: { claims: 'role' }, state: 'Failed.Claims' });
    expect(x.blocker).toMatchObject({
      guard: 'componentFailed(claims)',
      condition: 'ClaimsHeld',
      reason: 'RoleClaimed',
    });
    expect(x.blocker?.message).toContain('role app is held by PostgresDatabase billing-app');
    expect(x.observed.roles.map((r) => [r.name, r.state, r.heldBy])).toEqual([
      ['app', 'claimed', 'PostgresDatabase billing-app'],
      ['reader', 'reconciled', null],
    ]);
    expect(x.observed.claims).toMatchObject({ database: 'app', roles: ['reader'] });
    expect(x.hints).toEqual([
      'role app is held by PostgresDatabase billing-app: create this PostgresDatabase again with another ' +
        'spec.owner (it cannot be changed), or delete PostgresDatabase billing-app (it holds it until it is gone)',
    ]);
    expect(text).toContain('app (owner): held by PostgresDatabase billing-app');
  });

  it('a database name another, older database holds: DatabaseClaimed, and no CNPG Database is made', () => {
    const { x } = explainedDatabase({
      facts: { claims: 'database', cnpgDatabase: 'missing', privileges: false },
      state: 'Failed.Claims',
    });
    expect(x.blocker).toMatchObject({ reason: 'DatabaseClaimed' });
    expect(x.blocker?.message).toContain('database app is held by PostgresDatabase billing-app');
    expect(x.hints).toEqual([
      'database app is held by PostgresDatabase billing-app: create this PostgresDatabase again with another ' +
        'spec.name (it cannot be changed), or delete PostgresDatabase billing-app (it holds it until it is gone)',
    ]);
  });

  it('a Secret name another database holds (on another cluster): SecretClaimed', () => {
    const { x } = explainedDatabase({ facts: { claims: 'secret' }, state: 'Failed.Claims' });
    expect(x.blocker).toMatchObject({ reason: 'SecretClaimed' });
    expect(x.blocker?.message).toContain('secret orders-app-reader is held by PostgresDatabase orders');
  });

  it('a role the cluster’s own spec holds: the hint names the cluster’s spec.managedRoles', () => {
    const { x } = explainedDatabase({
      state: 'Failed.Claims',
      tweak: (o) => {
        if (o.cluster) o.cluster.spec = { ...o.cluster.spec, managedRoles: [{ name: 'reader' }] };
      },
    });
    expect(x.blocker?.reason).toBe('RoleClaimed');
    expect(x.observed.roles.find((r) => r.name === 'reader')).toMatchObject({
      state: 'claimed',
      heldBy: "PostgresCluster orders's spec.managedRoles",
    });
    expect(x.hints).toContain(
      "role reader is held by PostgresCluster orders's spec.managedRoles: rename or remove user reader in spec.users, " +
        "or remove reader from PostgresCluster orders's spec.managedRoles",
    );
  });

  it('a role CNPG cannot create: Failed.Roles with CNPG’s words', () => {
    const { x } = explainedDatabase({ facts: { roles: 'failed' }, state: 'Failed.Roles' });
    expect(x.blocker?.reason).toBe('RolesReconciliationFailed');
    expect(x.hints).toContain('CNPG cannot reconcile role reader: could not create role');
    expect(x.hints).toContain('CNPG needs a human: kubectl -n team-a describe clusters.postgresql.cnpg.io orders');
  });

  it('roles not pushed yet: waits for the PostgresCluster, which is the only writer of the list', () => {
    const { x } = explainedDatabase({
      facts: { roles: 'notPushed', cnpgDatabase: 'missing', privileges: false },
      state: 'Provisioning.Roles',
    });
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(roles)',
      summary:
        'waiting for the roles: role app not pushed by PostgresCluster orders yet, role reader not pushed by PostgresCluster orders yet',
    });
    expect(x.whenClear).toEqual({ state: 'Provisioning.Database', when: 'componentReady(roles)' });
    expect(x.hints).toEqual([]);
  });

  it('a CNPG Database CNPG refuses, and one of someone else', () => {
    const refused = explainedDatabase({ facts: { cnpgDatabase: 'refused' }, state: 'Failed.Database' }).x;
    expect(refused.blocker?.reason).toBe('DatabaseNotApplied');
    expect(refused.observed.cnpgDatabase).toMatchObject({ applied: false, message: 'owner role does not exist' });
    expect(refused.hints).toEqual([
      'CNPG cannot apply it: kubectl -n team-a describe databases.postgresql.cnpg.io orders-app',
    ]);
    const foreign = explainedDatabase({ facts: { cnpgDatabase: 'foreign' }, state: 'Failed.Database' }).x;
    expect(foreign.hints).toEqual([
      'CNPG Database orders-app is controlled by Deployment/someone-else: pgfsm does not take it over; remove it or rename this PostgresDatabase',
    ]);
  });

  it('privileges not granted: the tick would grant over SQL, and says so without a password', () => {
    const { x } = explainedDatabase({ facts: { privileges: false }, state: 'Provisioning.Privileges' });
    expect(x.tick.writes).toEqual(['grant privileges in database app over SQL']);
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(privileges)',
      reason: 'PrivilegesPending',
      summary: 'waiting for the privileges: not granted yet: reader (readOnly)',
    });
    expect(x.whenClear).toEqual({ state: 'Ready', when: 'componentReady(privileges)' });
    expect(x.observed.privileges).toMatchObject({ granted: false, recorded: null, users: ['reader (readOnly)'] });
  });

  it('a failed grant recorded on its condition: the hint names the -rw Service it connects to', () => {
    const { x } = explainedDatabase({
      facts: { privileges: false },
      state: 'Provisioning.Privileges',
      conditions: [
        {
          type: 'PrivilegesApplied',
          status: 'False',
          reason: 'PrivilegesFailed',
          message: 'connect ECONNREFUSED',
          lastTransitionTime: toSeconds(NOW),
        },
      ],
    });
    expect(x.hints).toEqual([
      'the last grant over SQL failed: connect ECONNREFUSED — pgfsm connects to orders-rw in team-a as the ' +
        'superuser: check that the operator can reach it',
    ]);
  });

  it('Ready: nothing blocks, nothing is written, no deadline, no hint', () => {
    const { x, text } = explainedDatabase({ state: 'Ready', sinceAgo: 2 * 3_600_000 });
    expect(x.tick).toMatchObject({ next: 'Ready', moves: false, via: 'stays while [allReady]', writes: [] });
    expect(x.blocker).toBeNull();
    expect(x.hints).toEqual([]);
    expect(x.deadline.applies).toBe(false);
    expect(x.observed.privileges.granted).toBe(true);
    expect(text).toContain('Blocked by  nothing: every component is healthy');
    expect(text).toContain(
      'orders-rw.team-a.svc.cluster.local:5432 (direct), read-only orders-ro.team-a.svc.cluster.local',
    );
  });

  it('Failed.InvalidSpec: the hint names the field', () => {
    const { x } = explainedDatabase({ facts: { specValid: false }, state: 'Failed.InvalidSpec' });
    expect(x.blocker).toMatchObject({ guard: 'specInvalid', holds: true, reason: 'InvalidSpec' });
    expect(x.blocker?.facts).toEqual(['field spec.owner']);
    expect(x.hints).toEqual(['fix spec.owner: spec.owner must be a plain PostgreSQL identifier']);
    expect(x.stalled.computed).toBe(true);
  });

  it('deletion under Retain: waits for the cluster to take the roles out of its list', () => {
    const { x } = explainedDatabase({ facts: { deletion: true, cnpgDatabase: 'missing' }, state: 'Deleting.Roles' });
    expect(x.database.deleting).toBe(true);
    expect(x.state.step).toEqual({ index: 2, of: 4, sequence: 'deletion' });
    expect(x.blocker).toMatchObject({ guard: 'rolesLetGo', holds: false });
    expect(x.blocker?.summary).toBe(
      'waiting for PostgresCluster orders to take role(s) app, reader out of its managed roles (they stay in PostgreSQL)',
    );
    expect(x.whenClear).toEqual({ state: 'Deleting.Secrets', when: 'rolesLetGo' });
    expect(x.hints).toEqual([]);
  });

  it('being deleted, the pipeline’s hints are gone: a missing cluster is nothing to create any more', () => {
    const { x } = explainedDatabase({
      facts: { deletion: true, cluster: 'missing', cnpgDatabase: 'missing' },
      state: 'Deleting.Secrets',
    });
    expect(x.observed.cluster.exists).toBe(false);
    expect(x.hints.some((h) => h.startsWith('create PostgresCluster'))).toBe(false);
    expect(x.tick.writes).toEqual(['release Secret orders-app-app', 'release Secret orders-app-reader']);
  });

  it('deletion under Delete: the Secrets are deleted, each named while it carries our owner reference', () => {
    const { x } = explainedDatabase({
      facts: { deletion: true, policy: 'Delete', cnpgDatabase: 'missing', roles: 'dropped' },
      state: 'Deleting.Secrets',
    });
    expect(x.tick.writes).toEqual(['delete Secret orders-app-app', 'delete Secret orders-app-reader']);
    expect(x.blocker).toMatchObject({ guard: 'secretsCleanedUp', holds: false });
    expect(x.blocker?.facts).toEqual(['Secret orders-app-app', 'Secret orders-app-reader']);
    expect(x.whenClear).toEqual({ state: 'Deleting.RemoveFinalizer', when: 'secretsCleanedUp' });
    expect(x.observed.deletionPolicy).toBe('Delete');
    expect(x.hints[0]).toMatch(/^Secret orders-app-app in team-a still carries our owner reference; pgfsm deletes it/);
  });

  it('past the progress deadline: Stalled, and the hint names the blocker', () => {
    const { x } = explainedDatabase({
      facts: { ...nothingYet, cluster: 'unpublished' },
      state: 'Provisioning.Cluster',
      sinceAgo: 20 * MIN,
    });
    expect(x.deadline).toMatchObject({ applies: true, leftSeconds: -300, exceeded: true });
    expect(x.stalled).toMatchObject({ computed: true });
    expect(x.hints).toContain(
      'no progress in Provisioning.Cluster past the progress deadline: waiting for the PostgresCluster: ' +
        'PostgresCluster orders (Provisioning) has not published its endpoints',
    );
  });

  it('--output json: one document, the resource under `database`, the same keys as a cluster’s after it', () => {
    const worlds: DatabaseWorld[] = [
      { facts: { ...nothingYet, finalizer: false, cluster: 'missing' } },
      { facts: { claims: 'role' }, state: 'Failed.Claims' },
      { state: 'Ready' },
      { facts: { deletion: true, cnpgDatabase: 'missing' }, state: 'Deleting.Roles' },
    ];
    const keyLists = new Set<string>();
    for (const world of worlds) {
      const { x, json } = explainedDatabase(world);
      const parsed = JSON.parse(json);
      expect(parsed).toEqual(x);
      keyLists.add(Object.keys(parsed).join(','));
      keyLists.add(Object.keys(parsed.observed).join(','));
    }
    expect([...keyLists]).toEqual([
      'database,now,state,tick,blocker,whenClear,deadline,stalled,hints,observed,conditions,events,eventsError',
      'cluster,claims,inPostgres,secrets,roles,cnpgDatabase,privileges,deletionPolicy,stillOwned',
    ]);
    const cluster = Object.keys(JSON.parse(explained({ state: 'Ready' }).json));
    expect(cluster.slice(1)).toEqual([...keyLists][0]?.split(',').slice(1));
  });

  it('never prints a secret value: the Secrets are key names and the values that are no secret', () => {
    const leak = 'hunter2-not-printed';
    const { text, json } = explainedDatabase({
      state: 'Ready',
      tweak: (o) => {
        for (const view of Object.values(o.secrets)) Object.assign(view ?? {}, { data: { password: leak } });
      },
    });
    expect(text).toContain('keys dbname, host, jdbc-uri, password, pgpass, port, uri, username');
    expect(text).not.toContain(leak);
    expect(json).not.toContain(leak);
  });
});

describe('explain a PostgresDatabase agrees with the operator', () => {
  const key = { namespace: NAMESPACE, name: DATABASE_NAME };

  /** The real database core, a few passes on the in-memory API holding the sample's world, then explain. */
  async function settle(observation: DatabaseObservation) {
    const clock = new ManualClock(NOW - 10 * MIN);
    const api = new MemoryApiServer(() => clock.now());
    const ports = memoryDatabasePorts(api, memoryPorts(api, clock, new MemoryEventSink(clock)));
    for (let pass = 0; pass < 4; pass++) {
      clock.set(NOW - (10 - pass) * MIN);
      forceDatabaseWorld(api, observation);
      await reconcileDatabase(key, { ports, settings: defaultSettings });
    }
    forceDatabaseWorld(api, observation);
    const stored = api.get<PostgresDatabase>({ kind: 'PostgresDatabase', ...key });
    if (!stored) return undefined;
    const x = explainDatabase({
      observation: await observeDatabase(ports, stored),
      settings: defaultSettings,
      now: NOW,
    });
    return { stored, x };
  }

  it.each(allDatabaseSamples.map((s) => [s.sample, s] as const))(
    '%s: the state stored, and the condition of the blocking step, are what explain says',
    async (_name, sample) => {
      const settled = await settle(sample.observation);
      // Deleted: the finalizer went, and the world forced again holds a new object with no status yet.
      if (!settled?.stored.status) return;
      const { stored, x } = settled;
      expect(x.state.stored).toBe(stored.status?.state);
      expect(x.state.state).toBe(stored.status?.state);
      if (x.blocker?.condition) {
        const condition = stored.status?.conditions?.find((c) => c.type === x.blocker?.condition);
        // The pipeline's own step carries the check's reason; a later step may be blocked by an earlier one.
        if (!condition?.reason.startsWith('WaitingFor')) expect(condition?.reason).toBe(x.blocker.reason);
      }
      expect(x.stalled.computed).toBe(stored.status?.conditions?.find((c) => c.type === 'Stalled')?.status === 'True');
      // Ready: nothing blocks it. Anywhere else a tick leaves it where it is, something does, and explain names it.
      const ready = stored.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      if (ready) expect(x.blocker).toBeNull();
      else if (x.tick.next === x.state.state) expect(x.blocker?.summary).toMatch(/\w/);
    },
  );
});

describe('pgfsm explain: the command line', () => {
  async function parse(...args: string[]): Promise<{ key: ExplainTarget; options: ExplainOptions }> {
    const program = new Command().exitOverride();
    let parsed: { key: ExplainTarget; options: ExplainOptions } | undefined;
    // The real command, parsing and resolving the target; only what it runs with it is the test's.
    registerExplain(program, async (key, options) => {
      parsed = { key, options };
    })
      .exitOverride()
      .configureOutput({ writeErr: () => {} });
    await program.parseAsync(['node', 'pgfsm', 'explain', ...args]);
    if (!parsed) throw new Error('action not called');
    return parsed;
  }

  it('takes <namespace>/<name> for a PostgresCluster and has the documented defaults', async () => {
    const { key, options } = await parse('team-a/orders');
    expect(key).toEqual({ kind: 'PostgresCluster', namespace: 'team-a', name: 'orders' });
    expect(options).toMatchObject({ output: 'text', events: 10, progressDeadline: 900_000 });
  });

  it('parses --output, --events, --progress-deadline', async () => {
    const { options } = await parse('team-a/orders', '-o', 'json', '--events', '3', '--progress-deadline', '5m');
    expect(options).toMatchObject({ output: 'json', events: 3, progressDeadline: 300_000 });
  });

  it('takes a kind and a name, as kubectl does: postgresdatabase, pgdb, postgrescluster, pgc', async () => {
    const database = { kind: 'PostgresDatabase', namespace: 'team-a', name: 'orders-app' };
    expect((await parse('postgresdatabase', 'orders-app', '-n', 'team-a')).key).toEqual(database);
    expect((await parse('pgdb', 'orders-app', '--namespace', 'team-a')).key).toEqual(database);
    expect((await parse('pgdb/orders-app', '-n', 'team-a')).key).toEqual(database);
    expect((await parse('postgresdatabases', 'team-a/orders-app')).key).toEqual(database);
    expect((await parse('PostgresDatabase', 'orders-app', '-n', 'team-a', '-o', 'json')).options.output).toBe('json');
    expect((await parse('pgc', 'orders', '-n', 'team-a')).key).toEqual({
      kind: 'PostgresCluster',
      namespace: 'team-a',
      name: 'orders',
    });
    // No namespace: the kubeconfig context's, decided once connected.
    expect((await parse('pgdb', 'orders-app')).key).toEqual({ kind: 'PostgresDatabase', name: 'orders-app' });
  });

  it('rejects a target without a namespace, an unknown kind or output, and namespaces that disagree', async () => {
    expect(() => parseTarget('orders')).toThrow('expected <namespace>/<name>');
    await expect(parse('orders')).rejects.toThrow();
    await expect(parse('team-a/orders', '--output', 'yaml')).rejects.toThrow();
    await expect(parse('postgresdatabase')).rejects.toThrow();
    await expect(parse('widgets', 'orders')).rejects.toThrow();
    await expect(parse('pgdb', 'team-a/orders-app', '-n', 'team-b')).rejects.toThrow();
    expect(() => resolveTarget('team-a/orders', undefined, 'team-b')).toThrow('-n says team-b');
    expect(() => resolveTarget('pgdb', 'Orders_App')).toThrow('not a PostgresDatabase name');
    expect(() => resolveTarget('pgdb', 'a/b/c')).toThrow();
  });
});
