/**
 * `npm start` as a person (or CI) runs it: the real CLI in a child process, its own control plane,
 * the operator and the simulated CNPG, the examples (clusters and their PostgresDatabases) to Ready, where
 * the databases' connection strings are, the command channel, and a teardown that leaves no process and no
 * temp directory behind. KUBECONFIG points at a file that does not exist, to prove the default path never
 * reads it. Plus the pure pieces: the "ask before a real cluster" decision, command parsing, the switchover
 * annotation watch, the tables and the psql commands of --real.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CNPG_VERSION, type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import type { Change } from '../../src/tools/memory/api-server.ts';
import { parseCommand } from '../../src/tools/sandbox/commands.ts';
import { createOutput } from '../../src/tools/sandbox/output.ts';
import { databaseSummary, summary } from '../../src/tools/sandbox/progress.ts';
import { resultRow, uriPsqlCommand } from '../../src/tools/sandbox/real-node.ts';
import {
  SWITCHOVER_ANNOTATION,
  switchoverRequest,
  watchSwitchoverRequests,
} from '../../src/tools/sandbox/switchover.ts';
import { decideTarget, isYes } from '../../src/tools/sandbox/target.ts';
import { setUpWorld, type World } from './support/e2e.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const CLI = ['--conditions=development', '--import', 'tsx', 'src/tools/cli/main.ts'];
/**
 * What the sandbox is started with as KUBECONFIG: a "production" cluster at an address where nothing
 * listens. Anything that read it would fail to connect (and say 127.0.0.1:9).
 */
const scratch = mkdtempSync(join(tmpdir(), 'pgfsm-sandbox-test-'));
const PROD_KUBECONFIG = join(scratch, 'prod-kubeconfig');
writeFileSync(
  PROD_KUBECONFIG,
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'prod', cluster: { server: 'https://127.0.0.1:9' } }],
    users: [{ name: 'admin', user: { token: 'not-a-real-token' } }],
    contexts: [{ name: 'prod-admin', context: { cluster: 'prod', user: 'admin' } }],
    'current-context': 'prod-admin',
  }),
);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Run {
  child: ChildProcess;
  out: string[];
  text(): string;
  /** Resolves with the first stdout line (from `from` on) matching `pattern`. */
  line(pattern: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  exit: Promise<number | null>;
}

const running: ChildProcess[] = [];

function sandbox(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', KUBECONFIG: PROD_KUBECONFIG, ...env },
  });
  running.push(child);
  const out: string[] = [];
  const err: string[] = [];
  let partial = '';
  const waiters = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    out.push(...parts);
    for (const wake of waiters) wake();
  });
  child.stderr?.on('data', (chunk: Buffer) => err.push(chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const text = () => `${out.join('\n')}\n${partial}${err.length ? `\n[stderr]\n${err.join('')}` : ''}`;
  return {
    child,
    out,
    text,
    exit,
    line: (pattern, timeoutMs = 120_000, from = 0) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = out.slice(from).find((l) => pattern.test(l));
          if (found === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; output so far:\n${text()}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
        void exit.then((code) =>
          setTimeout(() => {
            if (check()) return;
            clearTimeout(timer);
            reject(new Error(`exited (${code}) without a line matching ${pattern}; output:\n${text()}`));
          }, 50),
        );
      }),
  };
}

afterEach(() => {
  for (const child of running.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Everything the sandbox said it started is gone: processes, temp directories, the metrics port. */
async function expectNothingLeft(output: string) {
  const pids = [...output.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
  expect(pids).toHaveLength(5); // etcd, kube-apiserver, kube-controller-manager, CloudNativePG, pgfsm run
  for (const pid of pids) expect(alive(pid), `pid ${pid} still running`).toBe(false);
  const dirs = [...output.matchAll(/removed (\/\S+)/g)].map((m) => m[1] ?? '');
  expect(dirs.some((d) => d.includes('pgfsm-cp-'))).toBe(true);
  expect(dirs.some((d) => d.includes('pgfsm-sandbox-'))).toBe(true);
  for (const dir of dirs) expect(existsSync(dir), `${dir} still exists`).toBe(false);
  const metrics = output.match(/metrics (http:\/\/\S+)/)?.[1];
  expect(metrics).toBeDefined();
  await expect(fetch(metrics ?? '')).rejects.toThrow();
}

const transitionsOf = (output: string, cluster: string) =>
  output.split('\n').filter((l) => new RegExp(`^\\+\\d\\d:\\d\\d  ${cluster}\\s+\\S+ → `).test(l));

/** The examples' PostgresDatabases (examples/databases.yaml): one per cluster, owner app, a read-only reader. */
const DATABASES = [
  { key: 'team-a/inventory-app', cluster: 'inventory', host: 'inventory-rw.team-a.svc.cluster.local' },
  { key: 'team-a/orders-app', cluster: 'orders', host: 'orders-pooler-rw.team-a.svc.cluster.local' },
];

/** What the sandbox prints to read a database's connection string: the owner's Secret, its `uri`. */
const uriCommand = (secret: string) => `kubectl get secret -n team-a ${secret} -o jsonpath='{.data.uri}' | base64 -d`;

/** The databases came to Ready through the pipeline, after their clusters published their endpoints. */
function expectDatabasesReady(output: string) {
  for (const { key } of DATABASES) {
    const lines = transitionsOf(output, key);
    expect(lines[0], output).toMatch(/∅ → (Pending|Provisioning\.\w+)\s/);
    expect(lines.at(-1), output).toMatch(/Provisioning\.\w+ → Ready\s+\(AllComponentsReady\)/);
  }
  expect(output).toContain('All 2 example clusters and their 2 databases are Ready');
  expect(output).toMatch(/DATABASE\s+STATE\s+PHASE\s+CLUSTER\s+DB\s+OWNER\s+ENDPOINT\s+CONNECTION SECRETS/);
  expect(output).toMatch(
    /team-a\/inventory-app\s+Ready\s+Ready\s+inventory\s+app\s+app\s+inventory-rw:5432\s+inventory-app-app, inventory-app-reader/,
  );
  expect(output).toMatch(
    /team-a\/orders-app\s+Ready\s+Ready\s+orders\s+app\s+app\s+orders-pooler-rw:5432\s+orders-app-app, orders-app-reader/,
  );
  // Where the connection strings are, said to be simulated: no PostgreSQL answers, the grants were recorded.
  expect(output).toContain("PostgreSQL is simulated: the PostgresDatabases' grants are recorded in that log, not run");
  expect(output).toMatch(/Connection strings \(PostgreSQL is simulated here: nothing answers .+ recorded, not run\)/);
  expect(output).toMatch(/^ {2}export KUBECONFIG=\/\S+\/kubeconfig$/m);
  for (const { cluster } of DATABASES) {
    expect(output).toContain(
      `# team-a/${cluster}-app: database app, owner app: Secret team-a/${cluster}-app-app (reader, readOnly: ${cluster}-app-reader)`,
    );
    expect(output.split('\n')).toContain(`  ${uriCommand(`${cluster}-app-app`)}`);
  }
}

describe('pgfsm sandbox (npm start)', () => {
  it('--exit-when-ready: brings both examples and their databases to Ready, prints their transitions, the summaries and where the connection strings are, cleans up', async () => {
    const run = sandbox(['sandbox', '--exit-when-ready', '--metrics-port', '0']);
    const code = await run.exit;
    const output = run.text();
    expect(code, output).toBe(0);
    expect(output).toContain(`not using KUBECONFIG=${PROD_KUBECONFIG}`);
    expect(output).not.toMatch(/127\.0\.0\.1:9(?!\d)|ECONNREFUSED/);
    // CloudNativePG's real webhooks judged the examples' Clusters and Poolers on their way to Ready.
    expect(output).toMatch(
      new RegExp(
        `CloudNativePG ${CNPG_VERSION.replaceAll('.', '\\.')} webhooks active at https://127\\.0\\.0\\.1:\\d+ \\(pid \\d+\\)`,
      ),
    );
    for (const cluster of ['team-a/inventory', 'team-a/orders']) {
      const lines = transitionsOf(output, cluster);
      // The first pass adds the finalizer and follows it (core/follow.ts) to the Secret and the CNPG Cluster;
      // a write that conflicted ends it sooner.
      expect(lines[0], output).toMatch(/∅ → (Pending|Provisioning\.(Secret|Cluster))\s/);
      // Usually from Provisioning.ConfigMap; a status write that conflicted leaves that step unstored, and the
      // pass after it stores Ready straight from the step before.
      expect(lines.at(-1), output).toMatch(
        /Provisioning\.(ConfigMap|Pooler|ManagedRoles|Cluster) → Ready\s+\(AllComponentsReady\)/,
      );
    }
    expectDatabasesReady(output);
    expect(output).toMatch(/CLUSTER\s+STATE\s+PHASE\s+READY\s+PRIMARY\s+POOLER\s+ENDPOINTS CONFIGMAP/);
    expect(output).toMatch(/team-a\/inventory\s+Ready\s+Ready\s+1\/1\s+inventory-1\s+-\s+inventory-endpoints/);
    expect(output).toMatch(/team-a\/orders\s+Ready\s+Ready\s+3\/3\s+orders-1\s+rw\+ro serving\s+orders-endpoints/);
    expect(output).toContain('operator stopped; lease pgfsm-system/pgfsm-leader released');
    expect(output).toContain('Sandbox stopped; nothing left running.');
    await expectNothingLeft(output);
  });

  it('--exit-when-ready past --timeout: says which clusters and databases are not Ready and why, exits 1, cleans up', async () => {
    const run = sandbox(['sandbox', '--exit-when-ready', '--timeout', '3s', '--metrics-port', '0']);
    const code = await run.exit;
    const output = run.text();
    expect(code, output).toBe(1);
    expect(output).toContain('Not all examples were Ready after 3 s:');
    expect(output).toMatch(/team-a\/orders: Provisioning\.Cluster \(CNPGCluster\w+: .+\)/);
    // The databases are waited for too: each is listed, with what it waits for once the operator has seen it.
    for (const { key } of DATABASES)
      expect(output).toMatch(new RegExp(`${key}: (\\(no status\\)|(Pending|Provisioning\\.\\w+) \\(\\w+: .+\\))`));
    expect(output).toContain('stopping (timed out)');
    await expectNothingLeft(output);
  });

  it('interactive: switchovers from stdin and from `pgfsm sandbox switchover`, then Ctrl-C tears down', async () => {
    const run = sandbox(['sandbox', '--metrics-port', '0']);
    await run.line(/All 2 example clusters and their 2 databases are Ready/);
    const kubeconfig = (await run.line(/export KUBECONFIG=/)).split('=')[1] ?? '';
    await run.line(/q\s+stop the sandbox/);

    // Each printed command reads a Secret whose uri connects as the application: user app, database app, the
    // host the cluster published. The password is in the Secret only, never in what the sandbox printed.
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    for (const { cluster, host } of DATABASES) {
      const printed = run.out.find((l) => l.includes(`get secret -n team-a ${cluster}-app-app -o jsonpath`)) ?? '';
      expect(printed.trim()).toBe(uriCommand(`${cluster}-app-app`));
      const secret = await core.readNamespacedSecret({ name: `${cluster}-app-app`, namespace: 'team-a' });
      const value = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
      const uri = new URL(value('uri'));
      expect([uri.protocol, uri.username, uri.hostname, uri.port, uri.pathname]).toEqual([
        'postgresql:',
        'app',
        host,
        '5432',
        '/app',
      ]);
      expect(decodeURIComponent(uri.password)).toBe(value('password'));
      expect(value('password').length).toBeGreaterThan(8);
      expect(run.text()).not.toContain(value('password'));
    }
    // The grants went to the stand-in: recorded in the operator's log, one per database, nothing run.
    const operatorLog = run.text().match(/log (\/\S+operator\.log)/)?.[1] ?? '';
    const recorded = readFileSync(operatorLog, 'utf8')
      .split('\n')
      .filter((l) => l.includes('grants recorded, not run'))
      .map((l) => JSON.parse(l) as { cluster: string; database: string; owner: string; users: string[] });
    for (const { cluster } of DATABASES) {
      expect(recorded).toContainEqual(
        expect.objectContaining({ cluster, database: 'app', owner: 'app', users: ['reader (readOnly)'] }),
      );
    }

    // 1. Typed on stdin.
    let mark = run.out.length;
    run.child.stdin?.write('s orders\n');
    await run.line(/── CNPG switches over the primary of team-a\/orders/, 10_000, mark);
    await run.line(/team-a\/orders\s+Ready → Degraded\s+\(CNPGSwitchover\)/, 30_000, mark);
    await run.line(/team-a\/orders\s+Degraded → Ready\s+\(AllComponentsReady\)/, 30_000, mark);

    // 2. From another terminal: the CLI sets the annotation the sandbox watches.
    mark = run.out.length;
    const request = sandbox(['sandbox', 'switchover', 'team-a/orders', '--kubeconfig', kubeconfig]);
    expect(await request.exit, request.text()).toBe(0);
    expect(request.text()).toContain(`annotation ${SWITCHOVER_ANNOTATION}`);
    await run.line(/team-a\/orders\s+Ready → Degraded\s+\(CNPGSwitchover\)/, 30_000, mark);
    await run.line(/team-a\/orders\s+Degraded → Ready\s+\(AllComponentsReady\)/, 30_000, mark);

    // Commands that are not understood are said so, and change nothing.
    mark = run.out.length;
    run.child.stdin?.write('frobnicate\nt\n');
    await run.line(/unknown command "frobnicate"/, 10_000, mark);
    await run.line(/team-a\/orders\s+Ready\s+Ready\s+3\/3/, 10_000, mark);
    await run.line(/team-a\/orders-app\s+Ready\s+Ready\s+orders\s+app\s+app\s+orders-pooler-rw:5432/, 10_000, mark);

    run.child.kill('SIGINT');
    const code = await run.exit;
    const output = run.text();
    expect(code, output).toBe(0);
    expect(output).toContain('stopping (SIGINT)');
    expect(output).toContain('operator stopped; lease pgfsm-system/pgfsm-leader released');
    expect(output).toContain('CNPG simulator stopped');
    expect(output).toContain('Sandbox stopped; nothing left running.');
    expect(existsSync(kubeconfig)).toBe(false);
    await expectNothingLeft(output);
  });
});

describe('pgfsm sandbox --use-current-context', () => {
  let cp: ControlPlane | undefined;
  let world: World | undefined;

  afterAll(async () => {
    await world?.stop();
    await cp?.stop();
  });

  it('refuses without a terminal to confirm on, after saying which cluster, and touches nothing', async () => {
    const run = sandbox(['sandbox', '--use-current-context']);
    const code = await run.exit;
    const output = run.text();
    expect(code, output).toBe(2);
    expect(output).toMatch(/context\s+prod-admin/);
    expect(output).toMatch(/server\s+https:\/\/127\.0\.0\.1:9/);
    expect(output).toContain('Refusing to change this cluster without confirmation');
    expect(output).toContain('--yes');
    expect(output).not.toContain('control plane');
    expect(output).not.toMatch(/ECONNREFUSED|applying/);
  });

  it('with --yes: uses that cluster and its (here: test-played) CNPG, without a control plane of its own', async () => {
    cp = await startControlPlane();
    // The cluster already runs "CNPG": the CRDs and the simulator, played by this test.
    world = await setUpWorld(cp);
    const run = sandbox(['sandbox', '--use-current-context', '--yes', '--exit-when-ready', '--metrics-port', '0'], {
      KUBECONFIG: cp.kubeconfigPath,
    });
    const code = await run.exit;
    const output = run.text();
    expect(code, output).toBe(0);
    expect(output).toContain(`server   ${cp.url}`);
    expect(output).not.toContain('starting a local control plane');
    expect(output).not.toContain('CNPG simulator');
    expect(output).toMatch(/team-a\/orders\s+Ready\s+Ready\s+3\/3/);
    expect(output).toContain('All 2 example clusters are Ready');
    // An operator on this machine cannot reach the `-rw` Services its grants connect to: no PostgresDatabase.
    expect(output).toContain(
      'not applying the PostgresDatabases (team-a/inventory-app, team-a/orders-app): their grants connect to ' +
        "each cluster's -rw Service, which the operator, on this machine, cannot reach",
    );
    expect(output).not.toMatch(/PostgresDatabase team-a|DATABASE\s+STATE|Connection strings/);
    const databases = (await cp.kubeConfig.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: 'pgfsm.io',
      version: 'v1alpha1',
      namespace: 'team-a',
      plural: 'postgresdatabases',
    })) as { items: unknown[] };
    expect(databases.items).toEqual([]);
    expect(output).toContain('left in the cluster');
    // The operator ran as its own process, with the context's credentials, and is gone.
    const operatorPid = Number(output.match(/pgfsm run \(pid (\d+)\), identity \S+, your credentials/)?.[1]);
    expect(operatorPid, output).toBeGreaterThan(0);
    expect(alive(operatorPid)).toBe(false);
    // It said nothing is deleted: the examples are still there.
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    expect((await core.readNamespacedConfigMap({ name: 'orders-endpoints', namespace: 'team-a' })).data).toBeDefined();
  });
});

describe('ask before touching a real cluster', () => {
  it('is the local control plane unless asked; asks on a terminal; refuses without one unless --yes', () => {
    for (const yes of [false, true]) {
      for (const interactive of [false, true]) {
        expect(decideTarget({ useCurrentContext: false, yes, interactive })).toBe('local');
      }
    }
    expect(decideTarget({ useCurrentContext: true, yes: false, interactive: true })).toBe('ask');
    expect(decideTarget({ useCurrentContext: true, yes: false, interactive: false })).toBe('refuse');
    expect(decideTarget({ useCurrentContext: true, yes: true, interactive: false })).toBe('proceed');
    expect(decideTarget({ useCurrentContext: true, yes: true, interactive: true })).toBe('proceed');
  });

  it('takes only an explicit yes', () => {
    for (const answer of ['y', 'Y', 'yes', ' YES ']) expect(isYes(answer)).toBe(true);
    for (const answer of ['', 'n', 'no', 'yep', 'sure', 'y y']) expect(isYes(answer)).toBe(false);
  });
});

describe('sandbox pieces', () => {
  it('parses the stdin commands', () => {
    expect(parseCommand('s orders', 'team-a')).toEqual({ kind: 'switchover', namespace: 'team-a', name: 'orders' });
    expect(parseCommand('  switchover   other/db ', 'team-a')).toEqual({
      kind: 'switchover',
      namespace: 'other',
      name: 'db',
    });
    expect(parseCommand('s', 'team-a').kind).toBe('unknown');
    expect(parseCommand('s a b', 'team-a').kind).toBe('unknown');
    expect(parseCommand('t', 'team-a')).toEqual({ kind: 'status' });
    expect(parseCommand('q', 'team-a')).toEqual({ kind: 'quit' });
    expect(parseCommand('help', 'team-a')).toEqual({ kind: 'help' });
    expect(parseCommand('   ', 'team-a')).toEqual({ kind: 'none' });
    expect(parseCommand('q now', 'team-a').kind).toBe('unknown');
  });

  it('acts on a changed switchover annotation only, not on one already there', () => {
    const cluster = (name: string, value?: string) => ({
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { namespace: 'team-a', name, ...(value ? { annotations: { [SWITCHOVER_ANNOTATION]: value } } : {}) },
    });
    let listener: ((change: Change) => void) | undefined;
    const triggered: string[] = [];
    const stop = watchSwitchoverRequests(
      {
        list: <T>() => [cluster('old', 'earlier')] as T[],
        onChange: (l) => {
          listener = l;
          return () => {
            listener = undefined;
          };
        },
      },
      (namespace, name) => triggered.push(`${namespace}/${name}`),
    );
    const send = (type: Change['type'], object: ReturnType<typeof cluster>) =>
      listener?.({ type, object, statusOnly: false });
    send('modified', cluster('old', 'earlier')); // unchanged
    send('added', cluster('new', 'at-creation')); // created with it: not a request
    send('modified', cluster('new', 'at-creation'));
    expect(triggered).toEqual([]);
    send('modified', cluster('old', 'now'));
    send('modified', cluster('new', 'later'));
    send('modified', cluster('new', 'later')); // a status write: same value
    expect(triggered).toEqual(['team-a/old', 'team-a/new']);
    stop();
    expect(listener).toBeUndefined();
    expect(switchoverRequest('team-a', 'orders', 0).metadata?.annotations).toEqual({
      [SWITCHOVER_ANNOTATION]: '1970-01-01T00:00:00.000Z',
    });
  });

  it('aligns the summary table', () => {
    const rows = summary(
      [
        {
          apiVersion: 'pgfsm.io/v1alpha1',
          kind: 'PostgresCluster',
          metadata: { namespace: 'team-a', name: 'orders' },
          spec: { class: 'standard' },
          status: {
            state: 'Degraded',
            phase: 'Degraded',
            instances: 3,
            readyInstances: 2,
            connectionPoolerStatus: { enabled: true },
          },
        },
        undefined,
      ],
      createOutput(() => {}, false),
    );
    expect(rows).toEqual([
      'CLUSTER        STATE     PHASE     READY  PRIMARY  POOLER         ENDPOINTS CONFIGMAP',
      'team-a/orders  Degraded  Degraded  2/3    -        rw+ro serving  -',
    ]);
  });

  it('aligns the databases table: the owner Secret first, the endpoint by its Service', () => {
    const rows = databaseSummary(
      [
        {
          apiVersion: 'pgfsm.io/v1alpha1',
          kind: 'PostgresDatabase',
          metadata: { namespace: 'team-a', name: 'orders-app' },
          spec: { cluster: 'orders', name: 'app', owner: 'app', users: [{ name: 'reader', access: 'readOnly' }] },
          status: {
            state: 'Ready',
            phase: 'Ready',
            endpoint: { host: 'orders-pooler-rw.team-a.svc.cluster.local', port: '5432', pooled: true },
            secrets: [
              { user: 'app', secretName: 'orders-app-app', access: 'owner' },
              { user: 'reader', secretName: 'orders-app-reader', access: 'readOnly' },
            ],
          },
        },
        {
          apiVersion: 'pgfsm.io/v1alpha1',
          kind: 'PostgresDatabase',
          metadata: { namespace: 'team-a', name: 'new' },
          spec: { cluster: 'inventory', name: 'new', owner: 'owner' },
        },
      ],
      createOutput(() => {}, false),
    );
    expect(rows).toEqual([
      'DATABASE           STATE   PHASE  CLUSTER    DB   OWNER  ENDPOINT               CONNECTION SECRETS',
      'team-a/orders-app  Ready   Ready  orders     app  app    orders-pooler-rw:5432  orders-app-app, orders-app-reader',
      'team-a/new         (none)  -      inventory  new  owner  -                      -',
    ]);
  });

  it("--real's application command: psql given the Secret's uri alone, PGHOSTADDR the Service's address", () => {
    expect(uriPsqlCommand({ namespace: 'team-a', secret: 'orders-app-app', ip: '10.96.0.12', sql: 'SELECT 1' })).toBe(
      "PGHOSTADDR=10.96.0.12 nsenter --net=/run/netns/pgfsmnode psql \"$(npm run -s node -- kubectl get secret -n team-a orders-app-app -o jsonpath='{.data.uri}' | base64 -d)\" -c 'SELECT 1'",
    );
    const answer = [
      ' current_user | current_database ',
      '--------------+------------------',
      ' app          | app',
      '(1 row)',
      '',
    ];
    expect(resultRow(answer.join('\n'))).toEqual(['app', 'app']);
    expect(resultRow('psql: error: connection refused')).toBeUndefined();
  });
});
