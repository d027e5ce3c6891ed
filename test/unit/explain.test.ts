/**
 * `pgfsm explain`, the pure part: for observations in every kind of state, the explanation names the
 * guard that holds the cluster, the observation behind it, where it goes next, the deadline, and a
 * hint when a person can act. The machine and the health checks are the real ones.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import type { Condition } from '../../src/operator/api/schema.ts';
import { type ExplainOptions, parseTarget, registerExplain } from '../../src/operator/cli/explain.ts';
import { toSeconds } from '../../src/operator/core/status.ts';
import { defaultSettings, type Observation, type Settings } from '../../src/operator/domain/observation.ts';
import {
  type ExplainEvent,
  type Explanation,
  explain,
  formatSeconds,
  renderJson,
  renderText,
} from '../../src/operator/explain/index.ts';
import { type Facts, healthyFacts, observe } from '../../src/tools/fixtures/observations.ts';

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

  it('Failed.ClassMissing: hint to create the class or fix spec.class', () => {
    const { x } = explained({ facts: { classPresent: false }, state: 'Failed.ClassMissing' });
    expect(x.tick.next).toBe('Failed.ClassMissing');
    expect(x.blocker).toMatchObject({ guard: 'classMissing', holds: true, reason: 'ClusterClassNotFound' });
    expect(x.blocker?.summary).toBe('PostgresClusterClass standard not found');
    expect(x.hints).toContain('create PostgresClusterClass standard or fix spec.class');
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
      reason: 'PoolerCreationStarted',
      message: 'Pooler orders-pooler-rw created',
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
      ['PoolerCreationStarted', 90],
      ['PoolerReconciliationFailed', 600],
    ]);
    expect(text).toContain('PoolerReady  False   PoolerCreating  7m   rw pooler has 0/2 ready instances');
    expect(text).toMatch(/1m30s\s+Normal\s+PoolerCreationStarted\s+1\s+Pooler orders-pooler-rw created/);
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

describe('pgfsm explain: the command line', () => {
  async function parse(...args: string[]): Promise<{ key: unknown; options: ExplainOptions }> {
    const program = new Command().exitOverride();
    let parsed: { key: unknown; options: ExplainOptions } | undefined;
    registerExplain(program)
      .exitOverride()
      .configureOutput({ writeErr: () => {} })
      .action((key: unknown, options: ExplainOptions) => {
        parsed = { key, options };
      });
    await program.parseAsync(['node', 'pgfsm', 'explain', ...args]);
    if (!parsed) throw new Error('action not called');
    return parsed;
  }

  it('takes <namespace>/<name> and has the documented defaults', async () => {
    const { key, options } = await parse('team-a/orders');
    expect(key).toEqual({ namespace: 'team-a', name: 'orders' });
    expect(options).toMatchObject({ output: 'text', events: 10, progressDeadline: 900_000 });
  });

  it('parses --output, --events, --progress-deadline', async () => {
    const { options } = await parse('team-a/orders', '-o', 'json', '--events', '3', '--progress-deadline', '5m');
    expect(options).toMatchObject({ output: 'json', events: 3, progressDeadline: 300_000 });
  });

  it('rejects a target without a namespace and an unknown output', async () => {
    expect(() => parseTarget('orders')).toThrow('expected <namespace>/<name>');
    await expect(parse('orders')).rejects.toThrow();
    await expect(parse('team-a/orders', '--output', 'yaml')).rejects.toThrow();
  });
});
