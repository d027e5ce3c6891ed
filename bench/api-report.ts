/**
 * The report of the API server bench (api-server.bench.ts): the figures one run produces, the table of them
 * over sizes and repetitions (each row says what it covers), and the details of the last repetition of each
 * size (requests by kind and what each is for, reactions, CPU by process).
 */
import { cpus } from 'node:os';
import { fractionOf, type ProfileSplit, type Share } from './cpu-profile.ts';
import type { FloorFigures } from './floor.ts';
import { formatSpread, quantile, spread } from './stats.ts';

/** The reference design polls each waiting step every 15 s: a change waits 7.5 s on average for the next poll. */
export const REFERENCE_POLL_MS = 15_000;
/** After the last cluster is Ready: the operator's trailing requests for that step (events) are counted too. */
export const SETTLE_MS = 3_000;
/** The operator's key in `RunFigures.cpuByProcessMs`. */
export const OPERATOR = 'pgfsm run';

/** The figures of one run (one size, one repetition). */
export interface RunFigures {
  size: number;
  allReadyMs: number;
  readyP50Ms: number;
  readyP99Ms: number;
  requestsPerCluster: number;
  requestsPerClusterNoLease: number;
  /** The operator's `create events` requests over the same window ÷ N: the Events a cluster costs to Ready. */
  eventsPerCluster: number;
  breakdown: Array<[string, number]>;
  breakdownByCode: Array<[string, number]>;
  statusPatchesAudit: number;
  statusPatchesMetric: number;
  cpuPerClusterMs: number;
  /** The part of it the kernel spent for the operator (system time): its sockets, TCP over loopback. */
  systemCpuPerClusterMs: number;
  apiServerCpuPerClusterMs: number;
  etcdCpuPerClusterMs: number;
  /** CPU ms of every process over the window to Ready (control plane, operator, this process). */
  cpuByProcessMs: Record<string, number>;
  /** The window to Ready, ms (first create → SETTLE_MS after the last Ready). */
  windowMs: number;
  simulatorCpuPerClusterMs: number;
  /** Reconcile passes of the operator over the window to Ready ÷ N, from its own metrics. */
  passesPerCluster: number;
  peakRssMb: number;
  rssAfterMb: number;
  idleWindowS: number;
  idlePerMinute: number;
  idleKinds: Array<[string, number]>;
  leasePerMinute: number;
  /** Watches opened again in the idle window (the server ends each after its timeout), per minute. */
  watchesPerMinute: number;
  reactions: number[];
  reactionsMissed: number;
  flaps: number;
  notReady: number;
  simulatorWrites: number;
  load: [number, number];
  /** A repetition run with the operator under `--cpu-prof`: where its main thread's CPU went, to Ready. */
  profile?: ProfileSplit;
  /** A repetition run beside the floor clients (floor.ts): what the operator's traffic costs a bare client. */
  floor?: FloorFigures;
  /** The batch taken to Ready and deleted before the window (`--warm-up`); absent without one. */
  warmUp?: {
    clusters: number;
    /** Operator CPU over the batch's creates to its last Ready (plus the settle time), ÷ its size: cold. */
    cpuPerClusterMs: number;
    readyAfterMs: number;
  };
}

/** The others' CPU over the window to Ready ÷ the cores: the time their work alone takes the machine. */
function othersBusyMs(r: RunFigures): number {
  const { [OPERATOR]: _operator, ...others } = r.cpuByProcessMs;
  return total(others) / cpus().length;
}

/** Seconds from one second up, so that the cells of one row (times to Ready of 9 to 14 s) share their unit. */
const ms = (v: number) => (v >= 1_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
const one = (v: number) => v.toFixed(1);
const mb = (v: number) => `${Math.round(v)} MB`;
const whole = (v: number) => String(Math.round(v));

interface Row {
  figure: string;
  value: (r: RunFigures) => number;
  format: (v: number) => string;
  note: string;
}

function rows(): Row[] {
  return [
    {
      figure: 'all Ready after',
      value: (r) => r.allReadyMs,
      format: ms,
      note: 'first create sent → last cluster seen Ready by a watch (status.state)',
    },
    {
      figure: '… soonest if pgfsm cost nothing',
      value: othersBusyMs,
      format: ms,
      note:
        "the CPU every other process spent over the same window (API server, etcd, simulator, CNPG's webhooks, " +
        "kube-controller-manager) ÷ the machine's cores: a fleet cannot be Ready sooner than the machine takes to " +
        'do their work, with pgfsm costing nothing and no core ever idle. An over-estimate by what they spent in ' +
        `the ${SETTLE_MS / 1000} s after the last Ready (little: the fleet is idle then)`,
    },
    {
      figure: 'time to Ready p50',
      value: (r) => r.readyP50Ms,
      format: ms,
      note: "per cluster: its create's response → the watch event showing it Ready",
    },
    { figure: 'time to Ready p99', value: (r) => r.readyP99Ms, format: ms, note: 'same, 99th percentile' },
    {
      figure: 'API requests per cluster to Ready',
      value: (r) => r.requestsPerCluster,
      format: one,
      note: `audit log, operator's user, distinct requests from the first create to ${SETTLE_MS / 1000} s after the last Ready, ÷ N; everything included (Lease, lists, watches)`,
    },
    {
      figure: '… of which not the Lease',
      value: (r) => r.requestsPerClusterNoLease,
      format: one,
      note: 'same window without requests on leases',
    },
    {
      figure: 'Events per cluster to Ready',
      value: (r) => r.eventsPerCluster,
      format: one,
      note:
        "the operator's `create events` requests over the same window ÷ N: what it tells a person on the way " +
        '(the children it created, Ready); an Event repeated within its series is a patch, not counted',
    },
    {
      figure: 'operator CPU per cluster to Ready',
      value: (r) => r.cpuPerClusterMs,
      format: one,
      note:
        'ms; utime+stime of the `pgfsm run` process over the same window ÷ N (start-up excluded); when the run has a ' +
        'warm-up (next row), after it: the cost of a cluster to an operator that has been running, its code compiled',
    },
    {
      figure: '… the warm-up batch, cold',
      value: (r) => r.warmUp?.cpuPerClusterMs ?? Number.NaN,
      format: one,
      note:
        'ms; the same for the batch of clusters taken to Ready and deleted before the window (`--warm-up`, each ' +
        "repetition's first clusters after `pgfsm run` started): V8 compiling and optimising the operator's code is " +
        'in it, once per process start',
    },
    {
      figure: '… of which in the kernel',
      value: (r) => r.systemCpuPerClusterMs,
      format: one,
      note: "ms; the stime part: the kernel's work for the operator's sockets (on loopback that includes delivering what it sends); the rest is user space: Node's HTTP and TLS, JSON, the passes",
    },
    {
      figure: 'reconcile passes per cluster to Ready',
      value: (r) => r.passesPerCluster,
      format: one,
      note: "the operator's `controller_runtime_reconcile_total` over the same window ÷ N: a pass per change it was told of that could matter",
    },
    {
      figure: 'kube-apiserver CPU per cluster',
      value: (r) => r.apiServerCpuPerClusterMs,
      format: one,
      note: 'ms; the API server over the same window ÷ N: all clients (operator, simulator, this bench, CNPG webhooks)',
    },
    {
      figure: 'etcd CPU per cluster',
      value: (r) => r.etcdCpuPerClusterMs,
      format: one,
      note: 'ms; etcd over the same window ÷ N',
    },
    {
      figure: 'simulator + bench CPU per cluster',
      value: (r) => r.simulatorCpuPerClusterMs,
      format: one,
      note: 'ms; this process (CNPG simulator, the creates, the watch) over the same window ÷ N',
    },
    {
      figure: 'operator CPU ÷ simulator CPU',
      value: (r) => r.cpuPerClusterMs / r.simulatorCpuPerClusterMs,
      format: (v) => v.toFixed(2),
      note: "operator CPU per cluster ÷ simulator + bench CPU per cluster, the same window on the same cores. The machine's speed moves every CPU row by up to a third from one run to the next; the simulator's code is fixed and shares the machine's moods, so this ratio moves much less (0.93–1.15 over two days' runs in which the operator's figure ran 22–44 ms): compare two versions of the operator by it, one run after the other",
    },
    {
      figure: 'operator peak RSS',
      value: (r) => r.peakRssMb,
      format: mb,
      note: 'VmHWM of `pgfsm run` when all are Ready (peak since the process started)',
    },
    {
      figure: 'operator RSS at the end',
      value: (r) => r.rssAfterMb,
      format: mb,
      note: 'VmRSS after the idle minute and the reactions',
    },
    {
      figure: 'idle requests per minute (not the Lease)',
      value: (r) => r.idlePerMinute,
      format: one,
      note: 'audit log, operator user, all Ready and nothing changing, over the idle window scaled to a minute; the informers’ watches apart (next rows)',
    },
    {
      figure: 'watches opened again per minute',
      value: (r) => r.watchesPerMinute,
      format: one,
      note: 'same window: an informer opens its watch again when the API server ends it after its timeout (a few minutes, jittered)',
    },
    {
      figure: 'Lease requests per minute',
      value: (r) => r.leasePerMinute,
      format: one,
      note: 'same window, leases only (leader election renewals)',
    },
    {
      figure: 'reaction p50',
      value: (r) => quantile(r.reactions, 0.5),
      format: ms,
      note: "audit log, both at the API server: simulator's Cluster status patch (switchover) received → operator's next postgresclusters/status patch of that cluster answered; one Ready cluster changes among the idle fleet. From the simulator's patch received, not answered: the API server may answer it after the operator's write (a reaction then read below zero), so this includes the API server's work on the simulator's write: an upper bound of what the operator adds",
    },
    {
      figure: 'reaction p99',
      value: (r) => quantile(r.reactions, 0.99),
      format: ms,
      note: 'same, 99th percentile (nearest rank: with fewer than 100 changes, the largest)',
    },
    {
      figure: 'reference 15 s poll ÷ reaction p50',
      value: (r) => REFERENCE_POLL_MS / 2 / quantile(r.reactions, 0.5),
      format: (v) => `${Math.round(v)}×`,
      note: 'the reference design notices a change at its next 15 s poll: 7.5 s on average (and at the median) ÷ our p50',
    },
    {
      figure: 'reference 15 s poll ÷ reaction p99',
      value: (r) => (REFERENCE_POLL_MS * 0.99) / quantile(r.reactions, 0.99),
      format: (v) => `${Math.round(v)}×`,
      note: "the poll's p99 (14.85 s) ÷ our p99",
    },
    {
      figure: 'Ready clusters that left Ready',
      value: (r) => r.flaps,
      format: whole,
      note: 'watch events Ready → not Ready from the creates to the end of the idle window (before any switchover): flaps',
    },
  ];
}

export function table(results: RunFigures[], sizes: number[]): string {
  const header = `| figure | ${sizes.map((s) => `${s} clusters`).join(' | ')} | what it covers |`;
  const line = `|---|${sizes.map(() => '---|').join('')}---|`;
  const body = rows().map((row) => {
    const cells = sizes.map((size) =>
      formatSpread(spread(results.filter((r) => r.size === size).map(row.value)), row.format),
    );
    return `| ${row.figure} | ${cells.join(' | ')} | ${row.note} |`;
  });
  return [header, line, ...body].join('\n');
}

/**
 * What a request of the operator is for, as its code reads (src/operator/driver/cache-reads.ts and the
 * kubernetes adapters); a kind not listed says so, and then it is the thing to look into.
 */
export function explain(row: string): string {
  const [verb = '', resource = '', code = ''] = row.split(' ');
  const [plural = '', sub = ''] = resource.split('/');
  if (plural === 'leases') return 'leader election: read and renew the Lease';
  if (code === '409')
    return 'a write refused: a conflict on a stale resourceVersion, or already exists (the pass runs again)';
  if (verb === 'list' || verb === 'watch') return 'an informer listing or (re)opening its watch';
  if (plural === 'events' && verb === 'create')
    return 'an Event: one per announcement (transition, creation of a child…)';
  if (plural === 'events') return 'an Event series update (a repeated announcement)';
  if (plural === 'postgresclusters' && sub === 'status')
    return 'the status, written about once per state passed through';
  if (plural === 'postgresclusters' && verb === 'patch') return "the PostgresCluster's metadata: the finalizer";
  if (plural === 'postgresclusterclasses' && verb === 'patch')
    return 'the class-in-use finalizer on a class (once per class, not per cluster)';
  if (plural === 'postgresclusters' && verb === 'get') return 'a fresh read of a cluster (e.g. one being deleted)';
  if (verb === 'get' && code === '404') return 'a read at write time, before an apply, of a child not there yet';
  if (plural === 'secrets' && verb === 'get')
    return "a Secret's key names: one GET per new resourceVersion (cached as metadata only)";
  if (plural === 'configmaps' && verb === 'get')
    return "a ConfigMap's data: one GET per new resourceVersion (cached as metadata only)";
  if (verb === 'get') return 'a read at write time, before an apply, of an existing child';
  if (plural === 'secrets' && verb === 'create') return 'the superuser Secret (created, never applied)';
  if (verb === 'patch' && code === '201') return 'a child created by server-side apply';
  if (verb === 'patch') return 'a child changed by apply or an owner patch';
  return 'not expected: look into it';
}

const total = (byProcess: Record<string, number>) => Object.values(byProcess).reduce((a, b) => a + b, 0);

export function details(results: RunFigures[], sizes: number[]): string {
  const out: string[] = [];
  for (const size of sizes) {
    const runs = results.filter((r) => r.size === size);
    const last = runs[runs.length - 1];
    if (!last) continue;
    out.push(
      `### ${size} clusters (last repetition)`,
      '',
      `Requests to Ready by verb, resource and response code (${Math.round(last.requestsPerCluster * size)} in all, ${one(last.requestsPerCluster)} per cluster):`,
      '',
      '| request | count | per cluster | what for |',
      '|---|---|---|---|',
      ...last.breakdownByCode.map(([k, n]) => `| ${k} | ${n} | ${(n / size).toFixed(2)} | ${explain(k)} |`),
      '',
      `Cross-check: PATCH postgresclusters/status in the audit log ${last.statusPatchesAudit}, in the API server's \`apiserver_request_total\` ${last.statusPatchesMetric} (only the operator makes them).`,
      '',
      `Idle, ${last.idleWindowS.toFixed(0)} s, all Ready, not the Lease nor a watch: ${last.idleKinds.length === 0 ? 'no request' : last.idleKinds.map(([k, n]) => `${k} × ${n}`).join(', ')}.`,
      '',
      `Reactions: ${last.reactions.length} measured${last.reactionsMissed ? `, ${last.reactionsMissed} without an operator write within 30 s` : ''}: ${last.reactions.map((v) => Math.round(v)).join(', ')} ms.`,
      `CPU over the window to Ready (${(last.windowMs / 1000).toFixed(1)} s): ` +
        Object.entries(last.cpuByProcessMs)
          .map(([n, v]) => `${n} ${(v / 1000).toFixed(1)} s`)
          .join(', ') +
        `; in all ${(total(last.cpuByProcessMs) / last.windowMs).toFixed(2)} of the machine's ${cpus().length} cores on average (the rest: other load).`,
      `Simulator writes to Ready: ${last.simulatorWrites} (${(last.simulatorWrites / size).toFixed(1)} per cluster).` +
        (last.notReady ? ` Not Ready at the deadline: ${last.notReady}.` : ''),
      `Load average (1 min) at the start and end of the repetitions: ${runs.map((r) => `${r.load[0].toFixed(1)}→${r.load[1].toFixed(1)}`).join(', ')}.`,
      '',
    );
  }
  return out.join('\n');
}

const SHARES: Array<[Share, string]> = [
  ['transport', "Node's HTTP client, TLS and sockets: what every request and watch event costs whoever makes it"],
  ['v8', 'V8 and Node around it: garbage collection, promise jobs, timers, native code outside JavaScript'],
  ['pgfsm', "pgfsm's own JavaScript: the adapters (with the JSON they parse and build), the driver, the passes"],
  ['library', 'libraries: client-node (authentication), prom-client, XState, TypeBox, pino'],
];

/**
 * Where the profiled repetition's operator spent its main thread's CPU to Ready, priced at the unprofiled
 * repetitions' median CPU per cluster: the floor under that figure is what no change to pgfsm's JavaScript
 * can remove.
 */
export function profileReport(run: RunFigures, measured: RunFigures[]): string {
  const split = run.profile;
  if (!split) return '';
  const same = measured.filter((r) => r.size === run.size).map((r) => r.cpuPerClusterMs);
  const median = spread(same).median;
  const startUp = fractionOf(split, 'start-up');
  const price = (share: number) => (Number.isFinite(median) ? `${(share * median).toFixed(1)} ms` : '—');
  const processMs = run.cpuByProcessMs[OPERATOR] ?? Number.NaN;
  /** pgfsm's and the libraries' JavaScript as a share of the whole process's CPU (the profile sees the main thread). */
  const ours = ((fractionOf(split, 'pgfsm') + fractionOf(split, 'library')) * split.busyMs) / processMs;
  return [
    `### Where the operator's CPU goes (${run.size} clusters, one more repetition under \`--cpu-prof\`)`,
    '',
    `The operator's main thread over the window to Ready, each sample charged to the code it was taken in (bench/cpu-profile.ts says what such a split can and cannot see: JSON.parse and JSON.stringify count as the pgfsm code that calls them). Profiling slows the operator (${one(run.cpuPerClusterMs)} ms of CPU per cluster in this repetition, against the table's median of ${one(median)} ms), so read the shares, priced here at that median. The main thread had JavaScript or V8 on its stack for ${(split.busyMs / 1000).toFixed(1)} s of the process's ${(processMs / 1000).toFixed(1)} s; the rest ran with no JavaScript on the stack (the kernel's work for the sockets, native work in the event loop, V8's helper threads)${startUp > 0 ? `; start-up took ${(startUp * 100).toFixed(1)} % of the main thread` : ''}.`,
    '',
    `So pgfsm's own JavaScript and its libraries had at most ${(ours * 100).toFixed(1)} % of the process's CPU: ${price(ours)} per cluster at the median. The other ${price(1 - ours)} are Node's HTTP, TLS and socket code, V8's garbage collection and promise jobs, and the work outside JavaScript (pgfsm's share includes the JSON.parse and JSON.stringify of every body the API server sends or takes). What the same traffic costs a client that does nothing else is measured apart: the floor, below, when the run has \`--floor\`.`,
    '',
    '| what the code is | share of the main thread | at the median CPU per cluster |',
    '|---|---|---|',
    ...SHARES.map(
      ([share, text]) =>
        `| ${text} | ${(fractionOf(split, share) * 100).toFixed(1)} % | ${price(fractionOf(split, share))} |`,
    ),
    '',
    'In detail:',
    '',
    '| code | share | ms of main-thread CPU |',
    '|---|---|---|',
    ...split.groups
      .filter((g) => g.ms / split.busyMs >= 0.002)
      .map((g) => `| ${g.name} | ${((g.ms / split.busyMs) * 100).toFixed(1)} % | ${Math.round(g.ms)} |`),
    '',
  ].join('\n');
}

/**
 * The floor repetitions: what the operator's watches and writes to Ready cost a client that does nothing else
 * (floor-client.ts), beside what `pgfsm run` spent in the same repetitions and the table's median.
 */
export function floorReport(floorRuns: RunFigures[], measured: RunFigures[]): string {
  const runs = floorRuns.filter((r) => r.floor);
  if (runs.length === 0) return '';
  const sizes = [...new Set(runs.map((r) => r.size))];
  const per = (run: RunFigures, value: number) => value / run.size;
  const watch = (r: RunFigures) => per(r, r.floor?.watchCpuMs ?? Number.NaN);
  const replay = (r: RunFigures) => per(r, r.floor?.replay.cpuMs ?? Number.NaN);
  const both = (r: RunFigures) => watch(r) + replay(r);
  const rows: Array<[string, (size: number) => string, string]> = [
    ['repetitions', (n) => String(runs.filter((r) => r.size === n).length), 'each on a fresh control plane'],
    ...(
      [
        ['floor: watch', watch, 'ms of CPU per cluster: the watch events of the window, read and parsed'],
        ['floor: replay', replay, 'ms of CPU per cluster: the writes, sent; their answers drained unread'],
        ['**floor: both**', both, 'what the operator’s traffic to Ready costs a Node client that does nothing else'],
        ['pgfsm run, the same repetitions', (r) => r.cpuPerClusterMs, 'ms of CPU per cluster, the window to Ready'],
        [
          'pgfsm above the floor',
          (r) => r.cpuPerClusterMs - both(r),
          'ms per cluster, each repetition against its own floor: the caches, passes, machine, status, events and logs; the answers it reads',
        ],
        [
          'watch events per cluster',
          (r) => per(r, r.floor?.watch.events ?? Number.NaN),
          'what the watch client parsed over the window',
        ],
        ['… KiB per cluster', (r) => per(r, (r.floor?.watch.bytes ?? Number.NaN) / 1024), 'their size'],
        [
          'writes replayed per cluster',
          (r) => per(r, r.floor?.requests ?? Number.NaN),
          'the operator’s, the Lease apart',
        ],
        [
          'connections the replay opened',
          (r) => r.floor?.replay.connections ?? Number.NaN,
          'while timed, each a TLS handshake',
        ],
      ] as Array<[string, (r: RunFigures) => number, string]>
    ).map(([name, value, what]): [string, (size: number) => string, string] => [
      name,
      (n) => formatSpread(spread(runs.filter((r) => r.size === n).map(value)), one),
      what,
    ]),
    [
      'pgfsm run, the table’s median',
      (n) => formatSpread(spread(measured.filter((r) => r.size === n).map((r) => r.cpuPerClusterMs)), one),
      'ms of CPU per cluster: the repetitions of the table, without the floor’s audit level and watch client',
    ],
  ];
  const last = (n: number) => runs.filter((r) => r.size === n).at(-1)?.floor;
  const answers = sizes
    .map((n) => {
      const codes = Object.entries(last(n)?.replay.codes ?? {}).map(([code, count]) => `${count} × ${code}`);
      return `${n} clusters: ${codes.join(', ') || 'none'}`;
    })
    .join('; ');
  const synthesized = last(sizes.at(-1) ?? 0)?.synthesized ?? 0;
  return [
    `### The floor: the operator's traffic without the operator (${sizes.join(', ')} clusters, repetitions of their own)`,
    '',
    "Two client processes of bench/floor-client.ts made the operator's API traffic to Ready and nothing else: Node's own HTTPS client with one keep-alive agent (at most 64 connections, as the operator's), JSON.parse of every watch event, JSON.stringify of every body, no cache, no decision, every answer drained unread. Each repetition runs the fleet as the table's do, but with the operator's writes audited at level Request (their bodies, for the replay), which slows the API server, and the watch client beside the operator: compare the floor with the operator's CPU of the same repetitions.",
    '',
    "- **watch** opened the operator's watches (each watched kind, all namespaces, metadata only where the operator asks for it) before the first create, and parsed the events the operator received, as they came, over the same window.",
    `- **replay** then sent the operator's writes of that window (the Lease apart), with the bodies the API server's audit log recorded, each at its original offset from the first: the same pace, so as many in flight at once. Creates went under new names; patches without the resourceVersion the operator made them conditional on, so that they land (changing nothing) and answer with the object, as the operator's did${synthesized > 0 ? '; Secrets, whose bodies the audit log never keeps, as Secrets of the same shape' : ''}. Answers (last repetition): ${answers}. Before it was timed, up to 200 of the writes went once as dry runs (\`dryRun=All\`), 64 at a time, so that V8 had compiled the client's code, as it has the operator's, and the pool's connections were open. A connection opened while timed (the pool growing past the warm-up's, or one the server closed) is counted in the row below, each a TLS handshake in the floor, as the operator's own are in its CPU. The replay runs after the fleet is Ready, when the machine is quieter than while the operator sent those writes (the simulator idle, the API server serving the replay alone): if contention makes a request cost more, this half of the floor is, if anything, low.`,
    '',
    `| figure | ${sizes.map((n) => `${n} clusters`).join(' | ')} | what it covers |`,
    `|---|${sizes.map(() => '---').join('|')}|---|`,
    ...rows.map(([name, cell, what]) => `| ${name} | ${sizes.map(cell).join(' | ')} | ${what} |`),
    '',
  ].join('\n');
}
