/**
 * `pgfsm explain` against a real API server: the operator (with its RBAC) and the CNPG simulator take
 * clusters through their lifecycle, faults make them stick, and the real CLI, run as a child process
 * with the admin kubeconfig, must name what holds each one.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseExplanation, Explanation } from '../../src/operator/explain/index.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  createClass,
  createCluster,
  createDatabase,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  untilDatabaseState,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it, in its own process; PGFSM_* variables of this shell do not leak in. */
function pgfsm(...args: string[]): Promise<Run> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('PGFSM_') && k !== 'KUBECONFIG'),
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=development', '--import', 'tsx', 'src/tools/cli/main.ts', ...args],
      { cwd: ROOT, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const explain = (target: string, ...args: string[]) =>
  pgfsm('explain', target, '--kubeconfig', cp.kubeconfigPath, ...args);

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('pgfsm explain against a real API server', () => {
  it('names the pooler that never gets ready, with its ready replicas, and the events', async () => {
    world.simulator.poolerNeverReady(NS, 'stuck-pooler-rw');
    await createCluster(world, 'stuck', { class: 'standard', connectionPoolerEnabled: true });
    await untilState(world, 'stuck', 'Provisioning.Pooler');
    // The ro pooler does get ready: only rw holds the cluster.
    const run = await waitFor('ro pooler ready in explain', async () => {
      const r = await explain(`${NS}/stuck`);
      return r.stdout.includes('ro ready 2/2') ? r : undefined;
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('PostgresCluster team-a/stuck');
    expect(run.stdout).toContain('Provisioning › Pooler  step 4 of 5 of the pipeline');
    expect(run.stdout).toContain('stays in Provisioning › Pooler');
    expect(run.stdout).toContain('componentReady(pooler) is false');
    expect(run.stdout).toContain('waiting for the poolers: rw ready 0/2, ro ready 2/2');
    expect(run.stdout).toContain('Then        Provisioning › ConfigMap, when componentReady(pooler)');
    expect(run.stdout).toMatch(/Deadline\s+15m: \d+m\d*s? left/);
    expect(run.stdout).toMatch(/PoolerReady\s+False\s+PoolerCreating/);
    expect(run.stdout).toMatch(/Normal\s+PoolersCreated\s+1\s+Poolers stuck-pooler-rw and stuck-pooler-ro created/);
  });

  it('--output json: one document, the stored state, the missing role Secret and its hint', async () => {
    await createCluster(world, 'roles', {
      class: 'standard',
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
    });
    await untilState(world, 'roles', 'Provisioning.ManagedRoles');
    const run = await explain(`${NS}/roles`, '--output', 'json', '--events', '3');
    expect(run.code).toBe(0);
    const x = JSON.parse(run.stdout) as Explanation;
    expect(x.state).toMatchObject({ stored: 'Provisioning.ManagedRoles', state: 'Provisioning.ManagedRoles' });
    expect(x.state.step).toEqual({ index: 3, of: 5, sequence: 'the pipeline' });
    expect(x.tick).toMatchObject({ next: 'Provisioning.ManagedRoles', moves: false, writes: [] });
    expect(x.blocker).toMatchObject({
      guard: 'componentReady(managedRoles)',
      summary: 'waiting for managed roles: Secret app-password for role app missing',
    });
    expect(x.hints).toContain('create Secret team-a/app-password with keys username and password (role app)');
    expect(x.events.length).toBeGreaterThan(0);
    expect(x.events.length).toBeLessThanOrEqual(3);
    // Only this cluster's events: none of the other cluster's writes.
    expect(x.events.filter((e) => e.message.includes('stuck'))).toEqual([]);
    const times = x.events.map((e) => e.lastSeen ?? '');
    expect(times).toEqual([...times].sort().reverse());
    expect(x.observed.secret).toMatchObject({ name: 'roles-superuser', exists: true, keys: ['password', 'username'] });
    expect(x.eventsError).toBeNull();
  });

  it('pgfsm explain pgdb: a PostgresDatabase whose cluster does not exist, and the hint to create it', async () => {
    await createDatabase(world, 'lonely-app', { cluster: 'lonely', name: 'app', owner: 'app' });
    await untilDatabaseState(world, 'lonely-app', 'Provisioning.Cluster');
    const run = await pgfsm('explain', 'pgdb', 'lonely-app', '-n', NS, '--kubeconfig', cp.kubeconfigPath);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`PostgresDatabase ${NS}/lonely-app`);
    expect(run.stdout).toContain('Provisioning › Cluster  step 1 of 6 of the pipeline');
    expect(run.stdout).toContain('waiting for the PostgresCluster: PostgresCluster lonely missing');
    expect(run.stdout).toContain(`create PostgresCluster ${NS}/lonely`);
    expect(run.stdout).toMatch(/ClusterAvailable\s+False\s+ClusterNotFound/);
    const json = await pgfsm(
      'explain',
      'postgresdatabase',
      `${NS}/lonely-app`,
      '-o',
      'json',
      '--kubeconfig',
      cp.kubeconfigPath,
    );
    expect(json.code).toBe(0);
    const x = JSON.parse(json.stdout) as DatabaseExplanation;
    expect(x.database).toMatchObject({ namespace: NS, name: 'lonely-app', deleting: false });
    expect(x.state).toMatchObject({ stored: 'Provisioning.Cluster', state: 'Provisioning.Cluster' });
    expect(x.blocker).toMatchObject({ guard: 'componentReady(cluster)', reason: 'ClusterNotFound' });
    // A PostgresDatabase of a missing name: exit 1, said as for a cluster.
    const missing = await pgfsm('explain', 'pgdb', 'nope', '-n', NS, '--kubeconfig', cp.kubeconfigPath);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(`pgfsm explain: PostgresDatabase ${NS}/nope not found at ${cp.url}`);
  });

  it('a missing cluster: exit 1 and a clear message', async () => {
    const run = await explain(`${NS}/nope`);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(`pgfsm explain: PostgresCluster team-a/nope not found at ${cp.url}`);
  });

  it('a user without permission: exit 1, the API server’s 403 and the likely cause', async () => {
    await world.core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'nobody' } } });
    const kubeconfig = join(cp.dir, 'nobody.kubeconfig');
    writeFileSync(
      kubeconfig,
      cp.kubeConfigForToken(await cp.tokenFor({ namespace: NS, name: 'nobody' })).exportConfig(),
    );
    const run = await pgfsm('explain', `${NS}/stuck`, '--kubeconfig', kubeconfig);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('pgfsm explain: get PostgresCluster team-a/stuck: HTTP 403 Forbidden');
    expect(run.stderr).toContain("the kubeconfig's user lacks permission for it");
  });

  it('no kubeconfig to be found: exit 1 and what to set', async () => {
    const run = await pgfsm('explain', `${NS}/stuck`, '--kubeconfig', join(cp.dir, 'missing.kubeconfig'));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('pgfsm explain: cannot load kubeconfig');
    expect(run.stderr).toContain('no such file or directory');
  });
});
