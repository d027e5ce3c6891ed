/** `pgfsm run` options: defaults, flags, environment variables, and what they become. */
import { existsSync, readFileSync } from 'node:fs';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { operatorProgram } from '../../../src/operator/cli/program.ts';
import {
  leaseNamespaceOf,
  type RunOptions,
  registerRun,
  settingsOf,
  startingFields,
} from '../../../src/operator/cli/run.ts';
import { buildInfo } from '../../../src/operator/driver/build-info.ts';

const ENV = [
  'PGFSM_NAMESPACE',
  'PGFSM_WORKERS',
  'PGFSM_REQUEUE_DELAY',
  'PGFSM_LEADER_ELECT',
  'PGFSM_METRICS_ADDR',
  'PGFSM_LEASE_NAME',
  'POD_NAMESPACE',
];
afterEach(() => {
  for (const name of ENV) delete process.env[name];
});

/** Parses `args` as `pgfsm run …` without running the operator. */
async function parse(...args: string[]): Promise<RunOptions> {
  const program = new Command().exitOverride();
  let parsed: RunOptions | undefined;
  registerRun(program)
    .exitOverride()
    .configureOutput({ writeErr: () => {} })
    .action((options: RunOptions) => {
      parsed = options;
    });
  await program.parseAsync(['node', 'pgfsm', 'run', ...args]);
  if (!parsed) throw new Error('action not called');
  return parsed;
}

describe('pgfsm run options', () => {
  it('has the documented defaults', async () => {
    const options = await parse();
    expect(options).toMatchObject({
      workers: 2,
      requeueDelay: 15_000,
      progressDeadline: 900_000,
      clusterDomain: 'cluster.local',
      metricsAddr: ':8080',
      leaderElect: true,
      leaseName: 'pgfsm-leader',
      logLevel: 'info',
    });
    expect(options.namespace).toBeUndefined();
    expect(settingsOf(options)).toEqual({
      clusterDomain: 'cluster.local',
      requeueDelayMs: 15_000,
      progressDeadlineMs: 900_000,
    });
  });

  it('takes flags, with durations such as 30s and 1h', async () => {
    const options = await parse(
      '--namespace=team-a',
      '--workers=4',
      '--requeue-delay=30s',
      '--progress-deadline=1h',
      '--leader-elect=false',
      '--lease-namespace=ops',
      '--identity=me',
      '--metrics-addr=127.0.0.1:9090',
    );
    expect(options).toMatchObject({
      namespace: 'team-a',
      workers: 4,
      requeueDelay: 30_000,
      progressDeadline: 3_600_000,
      leaderElect: false,
      leaseNamespace: 'ops',
      identity: 'me',
      metricsAddr: '127.0.0.1:9090',
    });
  });

  it('reads the environment when a flag is absent; a flag wins over it', async () => {
    process.env.PGFSM_NAMESPACE = 'from-env';
    process.env.PGFSM_WORKERS = '3';
    process.env.PGFSM_REQUEUE_DELAY = '5s';
    process.env.PGFSM_LEADER_ELECT = 'false';
    expect(await parse()).toMatchObject({ namespace: 'from-env', workers: 3, requeueDelay: 5000, leaderElect: false });
    expect(await parse('--workers', '5')).toMatchObject({ workers: 5 });
  });

  it('rejects bad values', async () => {
    await expect(parse('--requeue-delay=15')).rejects.toThrow(/invalid duration/);
    await expect(parse('--workers=0')).rejects.toThrow(/at least 1/);
    await expect(parse('--leader-elect=maybe')).rejects.toThrow(/true or false/);
  });

  it('puts the lease in the given namespace, else the pod namespace, else the watched one', () => {
    expect(leaseNamespaceOf({ leaseNamespace: 'ops', namespace: 'team-a' })).toBe('ops');
    process.env.POD_NAMESPACE = 'pgfsm-system';
    expect(leaseNamespaceOf({ namespace: 'team-a' })).toBe('pgfsm-system');
    delete process.env.POD_NAMESPACE;
    // Inside a pod (CI runners can be one) the ServiceAccount's namespace comes before the fallbacks.
    if (existsSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace')) return;
    expect(leaseNamespaceOf({ namespace: 'team-a' })).toBe('team-a');
    expect(leaseNamespaceOf({})).toBe('default');
  });

  it("starts its log with pgfsm's version, Node's and XState's", async () => {
    const options = await parse('--namespace=team-a,team-b');
    const at = { server: 'https://api:6443', identity: 'pod-1', leaseNamespace: 'pgfsm-system' };
    expect(startingFields(options, at, { version: '1.2.3', nodeVersion: 'v20.19.0', xstate: '5.33.3' })).toEqual({
      version: '1.2.3',
      nodeVersion: 'v20.19.0',
      xstate: '5.33.3',
      server: 'https://api:6443',
      namespace: 'team-a,team-b',
      workers: 2,
      identity: 'pod-1',
      leaderElect: true,
      lease: 'pgfsm-system/pgfsm-leader',
    });
    // By default the process's own build.
    expect(startingFields(options, at)).toMatchObject({
      version: buildInfo().version,
      nodeVersion: process.version,
      xstate: buildInfo().xstate,
    });
  });
});

describe('pgfsm --version', () => {
  it("prints the version of pgfsm's package.json", async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    let out = '';
    const program = operatorProgram()
      .exitOverride()
      .configureOutput({ writeOut: (s) => (out += s) });
    await expect(program.parseAsync(['node', 'pgfsm', '--version'])).rejects.toMatchObject({
      code: 'commander.version',
    });
    expect(out).toBe(`${pkg.version}\n`);
  });
});
