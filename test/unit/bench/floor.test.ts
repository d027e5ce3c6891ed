import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { floorReport, type RunFigures } from '../../../bench/api-report.ts';
import { floorAuditPolicy, floorAuthOf, floorWatches, replayRequests } from '../../../bench/floor.ts';
import { WATCH_SHAPES } from '../../../src/operator/kubernetes/watch-sources.ts';

const OPERATOR = 'system:serviceaccount:pgfsm-system:pgfsm';
const T0 = Date.parse('2026-01-01T10:00:00.000Z');

/** An audit.k8s.io/v1 Event line as kube-apiserver writes it, at level Request when `body` is given. */
function line(
  verb: string,
  uri: string,
  resource: string,
  atMs: number,
  options: { body?: unknown; user?: string; stage?: string; name?: string } = {},
) {
  return JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: options.body === undefined ? 'Metadata' : 'Request',
    auditID: `id-${atMs}-${verb}`,
    stage: options.stage ?? 'ResponseComplete',
    requestURI: uri,
    verb,
    user: { username: options.user ?? OPERATOR },
    objectRef: { resource, namespace: 'bench', ...(options.name ? { name: options.name } : {}) },
    requestReceivedTimestamp: new Date(T0 + atMs).toISOString(),
    ...(options.body === undefined ? {} : { requestObject: options.body }),
  });
}

describe('the floor: the operator’s writes, as the replay sends them', () => {
  const status = { metadata: { resourceVersion: '41' }, status: { state: 'Ready' } };
  const event = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'c0.abc', namespace: 'bench' } };
  const child = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c0-endpoints', namespace: 'bench' } };
  const log = [
    line('create', '/apis/events.k8s.io/v1/namespaces/bench/events', 'events', 30, { body: event }),
    line('patch', '/apis/pgfsm.io/v1alpha1/namespaces/bench/postgresclusters/c0/status', 'postgresclusters', 20, {
      body: status,
    }),
    line('create', '/api/v1/namespaces/bench/secrets?fieldManager=pgfsm', 'secrets', 10, { name: 'c0-superuser' }),
    line('patch', '/api/v1/namespaces/bench/configmaps/c0-endpoints?fieldManager=pgfsm', 'configmaps', 40, {
      body: child,
    }),
    // Not the operator's, not a write, the Lease, outside the window, a stage that is not the answer:
    line('patch', '/apis/x/clusters/c0/status', 'clusters', 25, { body: {}, user: 'admin' }),
    line('list', '/api/v1/secrets', 'secrets', 26),
    line('update', '/apis/coordination.k8s.io/v1/namespaces/pgfsm-system/leases/pgfsm-leader', 'leases', 27, {
      body: {},
    }),
    line('create', '/apis/events.k8s.io/v1/namespaces/bench/events', 'events', 5_000, { body: event }),
    line('create', '/apis/events.k8s.io/v1/namespaces/bench/events', 'events', 35, {
      body: event,
      stage: 'ResponseStarted',
    }),
    '',
  ];
  const { requests, synthesized } = replayRequests(log, OPERATOR, T0, T0 + 1_000);

  it('keeps the operator’s writes in the window, in the order they came, timed from the first', () => {
    expect(requests.map((r) => [r.at, r.method, r.uri.split('?')[0]?.split('/').at(-1)])).toEqual([
      [0, 'POST', 'secrets'],
      [10, 'PATCH', 'status'],
      [20, 'POST', 'events'],
      [30, 'PATCH', 'c0-endpoints'],
    ]);
  });

  it('sends each with the content type the operator used: JSON, a merge patch, or an apply', () => {
    expect(requests.map((r) => r.contentType)).toEqual([
      'application/json',
      'application/merge-patch+json',
      'application/json',
      'application/apply-patch+yaml',
    ]);
  });

  it('creates under a new name, and patches without the resourceVersion they were conditional on', () => {
    expect(requests[2]?.body).toEqual({ ...event, metadata: { name: 'c0.abc-floor', namespace: 'bench' } });
    expect(requests[1]?.body).toEqual({ metadata: {}, status: { state: 'Ready' } });
    expect(requests[3]?.body).toEqual(child);
  });

  it('replays a Secret, whose body the audit log never has, as one of the same shape', () => {
    expect(synthesized).toBe(1);
    const secret = requests[0]?.body as { kind: string; type: string; data: Record<string, string> };
    expect(secret.kind).toBe('Secret');
    expect(secret.type).toBe('kubernetes.io/basic-auth');
    expect(Object.keys(secret.data).sort()).toEqual(['password', 'username']);
  });
});

describe('the floor’s audit policy', () => {
  it('keeps the operator’s write bodies, but a Secret’s never: Secrets match the Metadata rule first', () => {
    const policy = floorAuditPolicy(OPERATOR, [{ level: 'Metadata', users: ['admin'] }]) as {
      rules: Array<{ level: string; users?: string[]; verbs?: string[]; resources?: unknown[] }>;
    };
    const [secrets, writes, rest, admin, none] = policy.rules;
    expect(secrets).toEqual({
      level: 'Metadata',
      users: [OPERATOR],
      resources: [{ group: '', resources: ['secrets'] }],
    });
    expect(writes).toEqual({ level: 'Request', users: [OPERATOR], verbs: ['create', 'patch', 'update'] });
    expect(rest).toEqual({ level: 'Metadata', users: [OPERATOR] });
    expect(admin?.users).toEqual(['admin']);
    expect(none).toEqual({ level: 'None' });
  });
});

describe('the floor’s watches and identity', () => {
  it('opens one watch per kind the operator watches, across namespaces, metadata only and selected where it asks so', () => {
    const watches = floorWatches();
    expect(watches).toHaveLength(Object.keys(WATCH_SHAPES).length);
    expect(watches).toContainEqual({ path: '/api/v1/secrets', metadataOnly: true });
    expect(watches).toContainEqual({
      path: '/apis/apps/v1/deployments',
      metadataOnly: false,
      labelSelector: 'cnpg.io/poolerName',
    });
    expect(watches).toContainEqual({ path: '/apis/pgfsm.io/v1alpha1/postgresclusterclasses', metadataOnly: false });
  });

  it('authenticates as the kubeconfig’s user: its token, or its client certificate', () => {
    const kc = (user: object) => {
      const config = new KubeConfig();
      config.loadFromOptions({
        clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: Buffer.from('CA').toString('base64') }],
        users: [{ name: 'u', ...user }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      return config;
    };
    expect(floorAuthOf(kc({ token: 't0k' }))).toEqual({ ca: 'CA', token: 't0k' });
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    expect(floorAuthOf(kc({ certData: b64('CERT'), keyData: b64('KEY') }))).toEqual({
      ca: 'CA',
      cert: 'CERT',
      key: 'KEY',
    });
    expect(() => floorAuthOf(kc({ username: 'a', password: 'b' }))).toThrow(/token or with inline client/);
  });
});

describe('the floor’s report', () => {
  const run = (cpuPerClusterMs: number, watchCpuMs: number) =>
    ({
      size: 100,
      cpuPerClusterMs,
      floor: {
        watchCpuMs,
        watch: { events: 2000, bytes: 100 * 1024 * 50, ended: 0 },
        replay: { cpuMs: 1400, wallMs: 12_000, codes: { '200': 1000, '201': 1000 }, connections: 3 },
        requests: 2000,
        synthesized: 100,
      },
    }) as unknown as RunFigures;

  it('puts the floor beside the operator’s CPU of the same repetitions, each against its own floor', () => {
    const text = floorReport([run(30, 400), run(26, 200)], [{ size: 100, cpuPerClusterMs: 31 } as RunFigures]);
    const row = (name: string) => text.split('\n').find((l) => l.startsWith(`| ${name} |`));
    expect(row('repetitions')).toContain('| 2 |');
    expect(row('floor: watch')).toContain('| 3.0 (2.0–4.0) |');
    expect(row('floor: replay')).toContain('| 14.0 |');
    expect(row('**floor: both**')).toContain('| 17.0 (16.0–18.0) |');
    expect(row('pgfsm run, the same repetitions')).toContain('| 28.0 (26.0–30.0) |');
    // 30 − 18 and 26 − 16: each repetition against its own floor.
    expect(row('pgfsm above the floor')).toContain('| 11.0 (10.0–12.0) |');
    expect(row('watch events per cluster')).toContain('| 20.0 |');
    expect(row('connections the replay opened')).toContain('| 3.0 |');
    expect(row('pgfsm run, the table’s median')).toContain('| 31.0 |');
    expect(text).toContain('100 clusters: 1000 × 200, 1000 × 201');
  });

  it('is empty when no repetition ran beside the floor clients', () => {
    expect(floorReport([{ ...run(30, 400), floor: undefined } as RunFigures], [])).toBe('');
  });
});
