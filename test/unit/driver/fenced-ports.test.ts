/**
 * Fencing (issue 9, item 5): every write of a pass asks the leadership first, and a replica that no longer
 * holds the lease by its own monotonic clock refuses it before anything is sent.
 *
 * Two parts: the wrapper over a recording Ports (each write refused with `notLeader` and never reaching the
 * port; reads pass), and the real LeaseElector against a small fake API server with an injected clock: a
 * leader whose clock jumps past the renew deadline, as after a SIGSTOP, refuses its very next write and has
 * stepped down by then, although none of its timers has fired.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { classOf, PortError, retryFor } from '../../../src/operator/core/errors.ts';
import type { Ports } from '../../../src/operator/core/ports.ts';
import type { CnpgCluster, ConfigMap, ObjectRef, Pooler } from '../../../src/operator/domain/objects.ts';
import { fencedPorts } from '../../../src/operator/driver/fenced-ports.ts';
import { LeaseElector } from '../../../src/operator/kubernetes/leader.ts';

// ---- a Ports that records every call --------------------------------------------------------------

const PORTS = ['clusters', 'classes', 'secrets', 'cnpgClusters', 'poolers', 'configMaps', 'events'] as const;

function recordingPorts(calls: string[]): Ports {
  const port = (name: string) =>
    new Proxy(
      {},
      {
        get: (_, method) => async () => {
          calls.push(`${name}.${String(method)}`);
          return undefined;
        },
      },
    );
  return {
    ...Object.fromEntries(PORTS.map((name) => [name, port(name)])),
    clock: { now: () => 0 },
  } as unknown as Ports;
}

const cluster = { metadata: { name: 'a', namespace: 'ns', uid: 'u1' } } as PostgresCluster;
const ref: ObjectRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'a-endpoints' };
const owner = { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', name: 'a', uid: 'u1' };
const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } };

/** Every write of every port, by the name of the method the wrapper must fence. */
const WRITES: Record<string, (p: Ports) => Promise<unknown>> = {
  'clusters.addFinalizer': (p) => p.clusters.addFinalizer(cluster, 'f'),
  'clusters.removeFinalizer': (p) => p.clusters.removeFinalizer(cluster, 'f'),
  'clusters.writeStatus': (p) => p.clusters.writeStatus(cluster, { state: 'Ready' } as PostgresCluster['status'] & {}),
  'secrets.create': (p) => p.secrets.create({ ref, username: 'u', labels: {}, owner } as never),
  'secrets.delete': (p) => p.secrets.delete(ref),
  'secrets.setOwner': (p) => p.secrets.setOwner(ref, owner),
  'secrets.releaseOwner': (p) => p.secrets.releaseOwner(ref, 'u1'),
  'cnpgClusters.apply': (p) => p.cnpgClusters.apply(object as unknown as CnpgCluster, 'cluster'),
  'cnpgClusters.delete': (p) => p.cnpgClusters.delete(ref),
  'cnpgClusters.setOwner': (p) => p.cnpgClusters.setOwner(ref, owner),
  'cnpgClusters.releaseOwner': (p) => p.cnpgClusters.releaseOwner(ref, 'u1'),
  'poolers.apply': (p) => p.poolers.apply(object as unknown as Pooler),
  'poolers.delete': (p) => p.poolers.delete(ref),
  'poolers.setOwner': (p) => p.poolers.setOwner(ref, owner),
  'poolers.releaseOwner': (p) => p.poolers.releaseOwner(ref, 'u1'),
  'configMaps.apply': (p) => p.configMaps.apply(object as ConfigMap),
  'configMaps.delete': (p) => p.configMaps.delete(ref),
  'configMaps.setOwner': (p) => p.configMaps.setOwner(ref, owner),
  'configMaps.releaseOwner': (p) => p.configMaps.releaseOwner(ref, 'u1'),
  'events.emit': (p) => p.events.emit(cluster, { type: 'Normal', reason: 'R', action: 'A', message: 'm' }),
};

const READS: Record<string, (p: Ports) => Promise<unknown>> = {
  'clusters.get': (p) => p.clusters.get({ namespace: 'ns', name: 'a' }),
  'classes.get': (p) => p.classes.get('standard'),
  'secrets.get': (p) => p.secrets.get(ref),
  'cnpgClusters.get': (p) => p.cnpgClusters.get(ref),
  'poolers.get': (p) => p.poolers.get(ref),
  'poolers.view': (p) => p.poolers.view(ref),
  'configMaps.get': (p) => p.configMaps.get(ref),
};

describe('fencedPorts', () => {
  it('refuses every write with notLeader, before it reaches the port, while the replica does not lead', async () => {
    const calls: string[] = [];
    const fenced = fencedPorts(recordingPorts(calls), { identity: 'replica-a', isLeader: () => false });
    for (const [name, write] of Object.entries(WRITES)) {
      const error = await write(fenced).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(PortError);
      expect(classOf(error), name).toBe('notLeader');
      expect((error as Error).message, name).toContain('replica-a does not hold the leader lease');
    }
    expect(calls).toEqual([]);
  });

  it('lets every write through while the replica leads, and every read whether it leads or not', async () => {
    const calls: string[] = [];
    let leading = true;
    const fenced = fencedPorts(recordingPorts(calls), { identity: 'replica-a', isLeader: () => leading });
    for (const write of Object.values(WRITES)) await write(fenced);
    expect(calls).toEqual(Object.keys(WRITES));
    calls.length = 0;
    leading = false;
    for (const read of Object.values(READS)) await read(fenced);
    expect(calls).toEqual(Object.keys(READS));
  });

  it('asks the leadership at each write, not once: leadership lost between two writes refuses the second', async () => {
    const calls: string[] = [];
    let leading = true;
    const fenced = fencedPorts(recordingPorts(calls), { identity: 'replica-a', isLeader: () => leading });
    await fenced.configMaps.apply(object as ConfigMap);
    leading = false;
    await expect(fenced.clusters.writeStatus(cluster, {} as never)).rejects.toMatchObject({ errorClass: 'notLeader' });
    expect(calls).toEqual(['configMaps.apply']);
  });

  it('a refused write is not retried hot: the cluster comes back after the requeue delay, if this replica leads', () => {
    expect(retryFor('notLeader')).toBe('afterDelay');
  });
});

// ---- the LeaseElector's own clock ---------------------------------------------------------------------

/** The Lease endpoints of an API server, in memory: get (404 until created), create, replace. */
function fakeLeaseServer() {
  let lease: Record<string, unknown> | undefined;
  let version = 0;
  const writes: string[] = [];
  let reads = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const reply = (code: number, payload: unknown) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (req.method === 'GET') {
        reads++;
        if (lease) reply(200, lease);
        else reply(404, { kind: 'Status', apiVersion: 'v1', code: 404, reason: 'NotFound' });
        return;
      }
      writes.push(req.method ?? '');
      const sent = JSON.parse(body) as { metadata: Record<string, unknown> };
      lease = { ...sent, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
      lease.metadata = { ...sent.metadata, resourceVersion: String(++version) };
      reply(req.method === 'POST' ? 201 : 200, lease);
    });
  });
  /** Another replica's write, straight to the store: it now holds the lease. */
  const takenBy = (identity: string) => {
    const spec = (lease?.spec ?? {}) as Record<string, unknown>;
    lease = {
      ...lease,
      spec: { ...spec, holderIdentity: identity, leaseTransitions: Number(spec.leaseTransitions) + 1 },
    };
  };
  return { server, writes, takenBy, reads: () => reads };
}

let server: Server | undefined;
let elector: LeaseElector | undefined;
afterEach(async () => {
  await elector?.stop();
  elector = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

async function leaderWithClock(clock: { now: number }, retryPeriodMs = 300_000) {
  const fake = fakeLeaseServer();
  server = fake.server;
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  const { port } = fake.server.address() as AddressInfo;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'pgfsm', token: 'test' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'pgfsm' }],
    currentContext: 'fake',
  });
  const changes: string[] = [];
  // Long periods: no deadline timer fires during the test (nor a renewal, by default); only the clock moves.
  elector = new LeaseElector(kc, {
    namespace: 'pgfsm-system',
    name: 'pgfsm-leader',
    identity: 'replica-a',
    leaseDurationMs: 600_000,
    renewDeadlineMs: 400_000,
    retryPeriodMs,
    clock: () => clock.now,
  });
  elector.start({
    onStartedLeading: (continued) => changes.push(continued ? 'continued' : 'started'),
    onStoppedLeading: () => changes.push('stopped'),
  });
  await expect.poll(() => changes).toEqual(['started']);
  return { elector, changes, writes: fake.writes, takenBy: fake.takenBy, reads: fake.reads };
}

describe('LeaseElector: the renew deadline on its own monotonic clock', () => {
  it('a leader resumed past its renew deadline refuses its first write and steps down, before any timer fires', async () => {
    const clock = { now: 1_000 };
    const { elector, changes } = await leaderWithClock(clock);
    const calls: string[] = [];
    const fenced = fencedPorts(recordingPorts(calls), elector);

    // Within the deadline, counted from when the acquiring write was sent (at 1 000): writes go through.
    clock.now = 1_000 + 399_999;
    await fenced.clusters.writeStatus(cluster, {} as never);
    expect(calls).toEqual(['clusters.writeStatus']);
    expect(elector.isLeader()).toBe(true);

    // The process was paused past the deadline: on resuming, its first write is refused, and the
    // replica has stopped leading by the time the refusal comes back.
    clock.now = 1_000 + 400_000;
    await expect(fenced.cnpgClusters.apply(object as unknown as CnpgCluster, 'cluster')).rejects.toMatchObject({
      errorClass: 'notLeader',
    });
    expect(changes).toEqual(['started', 'stopped']);
    expect(calls).toEqual(['clusters.writeStatus']);
    expect(elector.isLeader()).toBe(false);
  });

  it('the deadline counts from the last successful renewal, not from when leadership began', async () => {
    const clock = { now: 0 };
    // Renewals every 50 ms of real time, each stamped with the injected clock.
    const { elector, writes } = await leaderWithClock(clock, 50);
    const acquired = writes.length;
    clock.now = 300_000;
    await expect.poll(() => writes.length).toBeGreaterThan(acquired);
    // Past the deadline of the acquisition (at 0), within that of the renewal sent at 300 000.
    clock.now = 650_000;
    expect(elector.isLeader()).toBe(true);
  });

  it('a term after one that ended only for want of a renewal continues it; one after another holder does not', async () => {
    const clock = { now: 0 };
    const { elector, changes, writes, takenBy, reads } = await leaderWithClock(clock, 50);
    // No renewal got through for the renew deadline (a pause here): it steps down. The lease still names it,
    // so when its next renewal does get through nobody else can have led meanwhile.
    clock.now = 400_000;
    expect(elector.isLeader()).toBe(false);
    await expect.poll(() => changes).toEqual(['started', 'stopped', 'continued']);

    // Another replica takes the lease while this one cannot renew: once that lease has expired, this one
    // takes it as a new term.
    const before = writes.length;
    takenBy('replica-b');
    clock.now = 800_000;
    expect(elector.isLeader()).toBe(false);
    expect(changes).toEqual(['started', 'stopped', 'continued', 'stopped']);
    // It sees the other holder's record (from now on it counts how long that stays unchanged) and leaves it.
    const seen = reads();
    await expect.poll(() => reads()).toBeGreaterThan(seen + 1);
    expect(writes.length).toBe(before);
    clock.now = 800_000 + 600_000;
    await expect.poll(() => changes).toEqual(['started', 'stopped', 'continued', 'stopped', 'started']);
  });
});
