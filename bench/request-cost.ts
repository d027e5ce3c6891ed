/**
 * What one API request costs the operator process itself, through the shipped Kubernetes adapters
 * (src/operator/kubernetes/rest.ts over Node's HTTP client, authenticated by client-node 1.4.0's KubeConfig,
 * one kept-alive connection pool, as `pgfsm run` makes them): the floor under "operator CPU per cluster to
 * Ready", which is about 20 such writes per cluster plus the watch events they cause. Beside it, the same
 * Event create through client-node's generated EventsV1Api on the same pool: what rest.ts exists to save.
 *
 *   node --conditions=development --import tsx bench/request-cost.ts [--requests 400]
 *
 * On a fresh local control plane: creates one PostgresCluster, then measures this process's CPU
 * (user+system, `process.cpuUsage`) over `--requests` sequential writes of each kind the operator makes
 * most: an Event create (events.k8s.io, as KubernetesEventSink sends it) and a status merge patch
 * (conditional on the resourceVersion, as the PostgresCluster port writes it); and a GET, for scale. Prints
 * µs of CPU per request, one at a time and with IN_FLIGHT (16) at once. Run it on a quiet machine: the API server shares the
 * cores.
 */
import { parseArgs } from 'node:util';
import type { PostgresCluster } from '../src/operator/api/schema.ts';
import { withKeepAlive } from '../src/operator/kubernetes/connection.ts';
import { kubernetesPorts } from '../src/operator/kubernetes/index.ts';
import { startControlPlane } from '../src/tools/control-plane/index.ts';
import { installCrds, PGFSM_CRDS } from '../src/tools/install/manifests.ts';
import { writeSection } from './results-section.ts';
import { formatSpread, spread } from './stats.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '400' } } });
const requests = Number(values.requests);

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const ROUNDS = 3;

interface Kind {
  what: string;
  run: (i: number) => Promise<void>;
  cpuUs: number[];
  wallUs: number[];
  /** Measured with IN_FLIGHT requests at once too (not the status patch: it is conditional on one version). */
  concurrent: boolean;
  cpuUsInFlight: number[];
}

/**
 * The operator's requests are rarely alone: the workers' passes and the Events sent after them overlap. With
 * several in flight Node handles their sockets in one turn of the event loop, and a request costs less.
 */
const IN_FLIGHT = 16;

const kinds: Kind[] = [];

/** Registers a kind of request; `measureAll` times them. */
function kind(what: string, run: (i: number) => Promise<void>, concurrent = true): Kind {
  const k: Kind = { what, run, cpuUs: [], wallUs: [], concurrent, cpuUsInFlight: [] };
  kinds.push(k);
  return k;
}

const median = (values: readonly number[]) => spread(values).median;

/**
 * Every kind, `requests` times each, in ROUNDS rounds that take the kinds in turn: the machine is shared and its
 * speed drifts, so each kind is measured at several moments instead of one, and a figure is the median round.
 */
async function measureAll(): Promise<void> {
  // Warm-up: connections, TLS, the JIT.
  for (const k of kinds) for (let i = 0; i < 30; i++) await k.run(i);
  let n = 30;
  for (let round = 0; round < ROUNDS; round++) {
    for (const k of kinds) {
      const before = cpuMs();
      const started = performance.now();
      for (let i = 0; i < requests; i++) await k.run(n++);
      k.cpuUs.push(((cpuMs() - before) / requests) * 1000);
      k.wallUs.push(((performance.now() - started) / requests) * 1000);
      if (!k.concurrent) continue;
      const end = n + requests;
      const beforeInFlight = cpuMs();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (n < end) await k.run(n++);
        }),
      );
      k.cpuUsInFlight.push(((cpuMs() - beforeInFlight) / requests) * 1000);
    }
  }
}

const range = (values: readonly number[]) => formatSpread(spread(values), (v) => v.toFixed(0));

const cp = await startControlPlane({ controllerManager: false, cnpg: false });
try {
  await installCrds(cp.kubeConfig, PGFSM_CRDS);
  const kc = withKeepAlive(cp.kubeConfig);
  const ports = kubernetesPorts(kc, { reportingInstance: 'bench' });
  const { CoreV1Api, CustomObjectsApi } = await import('@kubernetes/client-node');
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'bench' } } });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const at = { group: 'pgfsm.io', version: 'v1alpha1', namespace: 'bench', plural: 'postgresclusters' };
  await custom.createNamespacedCustomObject({
    ...at,
    body: { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'db' }, spec: { class: 'x' } },
  });
  let cluster = (await ports.clusters.get({ namespace: 'bench', name: 'db' })) as PostgresCluster;

  console.log(
    `${requests} sequential requests of each kind, ${ROUNDS} rounds, kube-apiserver ${cp.serverVersion} on loopback`,
  );
  const event = kind('Event create (events.k8s.io)', async (i) => {
    await ports.events.emit(cluster, { type: 'Normal', reason: 'Bench', action: 'Bench', message: `event ${i}` });
  });
  const status = kind(
    'status merge patch (conditional)',
    async (i) => {
      const written = await ports.clusters.writeStatus(cluster, { ...(cluster.status ?? {}), state: `s${i}` });
      if (written) cluster = written;
    },
    false,
  );
  const get = kind('GET (the read a cache saves)', async () => {
    await ports.clusters.get({ namespace: 'bench', name: 'db' });
  });
  const { EventsV1Api, V1MicroTime } = await import('@kubernetes/client-node');
  const events = kc.makeApiClient(EventsV1Api);
  /** The Event the two comparisons below send: what the sink sends, named by the API server. */
  const eventBody = (i: number) => ({
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { generateName: 'db-', namespace: 'bench' },
    eventTime: new V1MicroTime(),
    reportingController: 'pgfsm',
    reportingInstance: 'bench',
    action: 'Bench',
    reason: 'Bench',
    type: 'Normal',
    note: `event ${i}`,
    regarding: { apiVersion: cluster.apiVersion, kind: cluster.kind, namespace: 'bench', name: 'db' },
  });
  const generated = kind('Event create through client-node’s EventsV1Api', async (i) => {
    await events.createNamespacedEvent({ namespace: 'bench', body: eventBody(i) });
  });
  // The floor under both: Node's own HTTPS client on the same pooled connection, its options and headers
  // built once, the answer drained unread: what any Node client pays per request, before authentication.
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const bare: import('node:https').RequestOptions = {};
  await kc.applyToHTTPSOptions(bare);
  const { request } = await import('node:https');
  const bareEvent = kind(
    'Event create, bare node:https (the floor)',
    (i) =>
      new Promise<void>((resolve, reject) => {
        const body = JSON.stringify(eventBody(i));
        const sent = request(
          server,
          {
            ...bare,
            method: 'POST',
            path: '/apis/events.k8s.io/v1/namespaces/bench/events',
            headers: { ...bare.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
          },
        );
        sent.on('error', reject);
        sent.end(body);
      }),
  );
  await measureAll();
  const inFlight = (k: Kind) => (k.concurrent ? range(k.cpuUsInFlight) : '—');
  const lines = kinds.map((k) => `| ${k.what} | ${range(k.cpuUs)} | ${range(k.wallUs)} | ${inFlight(k)} |`);
  for (const k of kinds) {
    console.log(
      `${k.what.padEnd(46)} ${range(k.cpuUs).padStart(16)} µs CPU per request, ${inFlight(k)} with ${IN_FLIGHT} in flight`,
    );
  }
  const cpu = (k: Kind) => median(k.cpuUs);
  const floor = `20 writes per cluster at these costs: ${((20 * (cpu(event) + cpu(status))) / 2 / 1000).toFixed(1)} ms of CPU (half Events, half status-sized writes), before any watch event, log line or pass; a GET: ${(cpu(get) / 1000).toFixed(2)} ms; the same Event through client-node's generated client: ${(cpu(generated) / cpu(event)).toFixed(2)}× the CPU, through bare node:https: ${(cpu(bareEvent) / cpu(event)).toFixed(2)}×; an Event with ${IN_FLIGHT} in flight costs ${(median(event.cpuUsInFlight) / cpu(event)).toFixed(2)}× what it costs alone: the operator's requests overlap in part, so each costs between the two`;
  console.log(floor);
  const { cpus, loadavg } = await import('node:os');
  writeSection(
    new URL('./results.md', import.meta.url).pathname,
    'requests',
    [
      '## What one API request costs the operator',
      '',
      `Written by \`node --conditions=development --import tsx bench/request-cost.ts --requests ${requests}\` on ${new Date().toISOString()}.`,
      '',
      `- machine: ${cpus().length} cores, ${cpus()[0]?.model ?? ''}; Node ${process.version}; load average at the end ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' / ')}`,
      `- the shipped adapters (rest.ts over node:https, authenticated by client-node 1.4.0’s KubeConfig, kept-alive connections) against a fresh local kube-apiserver, one request at a time after 30 to warm up, then (all but the status patch) the same number with ${IN_FLIGHT} in flight; CPU is this process’s user+system; each cell the median (min–max) of ${ROUNDS} rounds that take the kinds in turn`,
      '',
      `| request | µs of CPU | µs wall | µs of CPU, ${IN_FLIGHT} in flight |`,
      '|---|---|---|---|',
      ...lines,
      '',
      `${floor}. The requests alone are the floor under "operator CPU per cluster to Ready" in the API section: about 20 writes per cluster, each one needed (a child, a status, an Event), at what a request costs here; the watch events those writes come back as, and the passes, come on top.`,
    ].join('\n'),
  );
} finally {
  await cp.stop();
}
