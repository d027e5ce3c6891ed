/**
 * Two replicas of `pgfsm run`, as separate processes sharing the Lease (issue 9, item 5): the leader is
 * frozen with SIGSTOP while clusters provision, the standby takes over and writes, the old leader is
 * resumed with SIGCONT (with overdue timers, buffered watch events and maybe a pass cut in the middle),
 * then killed with SIGKILL. Judged from the API server's side, by its audit log: each replica runs as a
 * ServiceAccount of its own, so every write the server accepted names its replica, with the time the
 * server received it. No write of the old leader may arrive after the new leader's first, and every
 * cluster converges under the new leader.
 *
 * The lease timings are short (`--lease-duration 4s --renew-deadline 3s --retry-period 500ms`) so the
 * test stays bounded; the takeover time it measures is printed, not asserted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { createClass, createCluster, getCluster, setUpWorld, sleep, type World, waitFor } from './support/e2e.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SYSTEM = 'pgfsm-system';
const OLD = { sa: 'pgfsm', identity: 'replica-old' };
const NEW = { sa: 'pgfsm-standby', identity: 'replica-new' };
const userOf = (sa: string) => `system:serviceaccount:${SYSTEM}:${sa}`;
const LEASE = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
const CLUSTERS = Array.from({ length: 8 }, (_, i) => `ha-${i}`);

/** `pgfsm run` from the sources, its JSON log lines kept. */
class Replica {
  readonly lines: string[] = [];
  readonly child: ChildProcess;

  constructor(kubeconfig: string, identity: string) {
    this.child = spawn(
      process.execPath,
      [
        '--conditions=development',
        '--import',
        'tsx',
        join(ROOT, 'src', 'operator', 'cli', 'main.ts'),
        'run',
        '--kubeconfig',
        kubeconfig,
        '--metrics-addr',
        '127.0.0.1:0',
        '--identity',
        identity,
        '--lease-namespace',
        SYSTEM,
        '--requeue-delay',
        '1s',
        ...LEASE,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '/nonexistent' } },
    );
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = '';
      stream?.on('data', (chunk: Buffer) => {
        const parts = (partial + chunk.toString()).split('\n');
        partial = parts.pop() ?? '';
        this.lines.push(...parts);
      });
    }
  }

  records(): Array<Record<string, unknown>> {
    return this.lines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  logged(message: string): boolean {
    return this.records().some((r) => r.msg === message);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}

// ---- the audit log: every write of either replica, where the API server received it ---------------------

interface Write {
  user: string;
  verb: string;
  resource: string;
  name: string;
  code: number;
  /** When the API server received the request, in µs since the epoch. */
  receivedUs: number;
}

/** The fields of an audit.k8s.io/v1 Event this test reads. */
interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
}

/** RFC 3339 with up to nanoseconds, as the audit log writes it, in µs since the epoch. */
function micros(timestamp: string): number {
  const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(timestamp);
  if (!match?.[1]) throw new Error(`unexpected audit timestamp ${timestamp}`);
  return Date.parse(`${match[1]}Z`) * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}

function auditedWrites(path: string): Write[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEvent)
    .filter((e) => e.stage === 'ResponseComplete')
    .map((e) => ({
      user: e.user.username,
      verb: e.verb,
      resource: e.objectRef?.subresource
        ? `${e.objectRef.resource}/${e.objectRef.subresource}`
        : (e.objectRef?.resource ?? ''),
      name: e.objectRef?.name ?? '',
      code: e.responseStatus?.code ?? 0,
      receivedUs: micros(e.requestReceivedTimestamp),
    }));
}

const isLease = (w: Write) => w.resource === 'leases';
const landed = (w: Write) => w.code >= 200 && w.code < 300;
const describeWrite = (w: Write) => `${w.verb} ${w.resource} ${w.name} → ${w.code}`;

let cp: ControlPlane;
let world: World;
let dir: string;
let auditLog: string;
const replicas: Replica[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pgfsm-two-replicas-'));
  auditLog = join(dir, 'audit.log');
  const policy = join(dir, 'audit-policy.json');
  // Writes of the two replicas only, at Metadata level (no bodies, so no Secret values), one line each.
  writeFileSync(
    policy,
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [
        {
          level: 'Metadata',
          users: [userOf(OLD.sa), userOf(NEW.sa)],
          verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'],
        },
        { level: 'None' },
      ],
    }),
  );
  cp = await startControlPlane({
    apiServerArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-maxsize=0',
      // Written before the response is sent: a write the client saw answered is in the log.
      '--audit-log-mode=blocking',
    ],
  });
  world = await setUpWorld(cp);
  // The second replica: a ServiceAccount of its own with the same grants as deploy/rbac gives the first.
  await world.core.createNamespacedServiceAccount({ namespace: SYSTEM, body: { metadata: { name: NEW.sa } } });
  const rbac = world.admin.makeApiClient(RbacAuthorizationV1Api);
  const subjects = [{ kind: 'ServiceAccount', name: NEW.sa, namespace: SYSTEM }];
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: NEW.sa },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pgfsm' },
      subjects,
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: SYSTEM,
    body: {
      metadata: { name: `${NEW.sa}-leader-election` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pgfsm-leader-election' },
      subjects,
    },
  });
  await createClass(world, 'standard');
});

afterAll(async () => {
  for (const replica of replicas) {
    replica.signal('SIGCONT');
    await replica.kill();
  }
  await world?.stop();
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function startReplica(sa: string, identity: string): Promise<Replica> {
  const kubeconfig = join(dir, `${identity}.kubeconfig`);
  const kc =
    sa === OLD.sa ? world.operatorKc : cp.kubeConfigForToken(await cp.tokenFor({ namespace: SYSTEM, name: sa }));
  writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
  const replica = new Replica(kubeconfig, identity);
  replicas.push(replica);
  return replica;
}

const readyz = async (replica: Replica) => {
  const port = replica.records().find((r) => typeof r.port === 'number')?.port;
  if (port === undefined) return undefined;
  return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined;
};

describe('two replicas, the leader frozen', () => {
  it('no write of the frozen leader lands after the new leader’s first, and every cluster converges', async () => {
    const old = await startReplica(OLD.sa, OLD.identity);
    await waitFor('the first replica leading', async () => old.logged('started leading') || undefined, 60_000);
    const standby = await startReplica(NEW.sa, NEW.identity);
    await waitFor('the standby’s caches synced', () => readyz(standby), 60_000);
    expect(standby.logged('started leading')).toBe(false);

    for (const name of CLUSTERS) await createCluster(world, name, { class: 'standard', connectionPoolerEnabled: true });
    // Freeze the leader in the middle of provisioning: some clusters have a status, most are not Ready yet.
    await waitFor('the leader provisioning', async () => {
      for (const name of CLUSTERS) if ((await getCluster(world, name))?.status?.state) return true;
      return undefined;
    });
    old.signal('SIGSTOP');
    const frozenUs = Date.now() * 1000;

    const firstNewWrite = await waitFor(
      'the new leader’s first write',
      async () => auditedWrites(auditLog).find((w) => w.user === userOf(NEW.sa) && !isLease(w)),
      30_000,
    );
    // Let the new leader get on with it, then wake the old one up with everything it had pending.
    await sleep(1_000);
    old.signal('SIGCONT');
    await waitFor('the old leader to notice', async () => old.logged('stopped leading') || undefined, 15_000);
    await sleep(2_000);
    await old.kill();

    await waitFor(
      'every cluster Ready',
      async () => {
        for (const name of CLUSTERS) if ((await getCluster(world, name))?.status?.state !== 'Ready') return undefined;
        return true;
      },
      60_000,
    ).catch(async (error: unknown) => {
      const states = await Promise.all(
        CLUSTERS.map(async (n) => `${n}: ${(await getCluster(world, n))?.status?.state}`),
      );
      throw new Error(`${String(error)}\n${states.join('\n')}\nnew leader:\n${standby.lines.slice(-40).join('\n')}`);
    });

    const writes = auditedWrites(auditLog);
    const byOld = writes.filter((w) => w.user === userOf(OLD.sa) && !isLease(w));
    const byNew = writes.filter((w) => w.user === userOf(NEW.sa) && !isLease(w));
    // The scenario happened: the old leader wrote before the freeze, the new one after taking over.
    expect(byOld.filter(landed).length).toBeGreaterThan(0);
    expect(byNew.filter(landed).length).toBeGreaterThan(0);
    // The fence: nothing of the old leader reached the API server once the new leader had begun, not
    // even a write that a resourceVersion precondition would have refused.
    const late = byOld.filter((w) => w.receivedUs >= firstNewWrite.receivedUs);
    expect(late.map(describeWrite)).toEqual([]);

    // How the old leader stopped: writes it refused itself after resuming (the fence), if any came up.
    const refused = old.lines.filter((line) => line.includes('does not hold the leader lease')).length;
    const acquired = writes.find((w) => w.user === userOf(NEW.sa) && isLease(w) && landed(w));
    const seconds = (us: number) => `${(us / 1e6).toFixed(1)} s`;
    console.log(
      `two replicas (${LEASE.join(' ')}): takeover ${acquired ? seconds(acquired.receivedUs - frozenUs) : '?'} ` +
        `after SIGSTOP, first write of the new leader ${seconds(firstNewWrite.receivedUs - frozenUs)} after; ` +
        `old leader: ${byOld.length} writes, the last ${seconds(Math.max(...byOld.map((w) => w.receivedUs)) - frozenUs)} ` +
        `from the freeze, ${refused} log lines of writes refused after resuming; new leader: ${byNew.length} writes`,
    );
  });
});
