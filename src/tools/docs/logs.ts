/**
 * The operator's log lines about clusters, captured from the real controller: it is driven through one
 * pass of each kind (a transition with events, a failed pass, a cluster gone, a pass that threw) with
 * the real JSON logger writing into memory, and every line's message, level and keys are recorded.
 */
import { Writable } from 'node:stream';
import { storableStates } from '../../../machines/state-path.ts';
import { READY_STATE } from '../../../machines/states.ts';
import type { PostgresCluster } from '../../operator/api/schema.ts';
import { PortError } from '../../operator/core/errors.ts';
import type { ClusterKey } from '../../operator/core/ports.ts';
import type { ReconcileOutcome } from '../../operator/core/reconcile.ts';
import { Controller } from '../../operator/driver/controller.ts';
import { createLogger, REDACTED_PATHS } from '../../operator/driver/logger.ts';
import type { ObjectSource, WatchSources } from '../../operator/driver/sources.ts';
import type { Timers } from '../../operator/driver/workqueue.ts';
import { code, table } from './markdown.ts';

/** Keys pino writes on every line. */
export const BASE_KEYS = ['level', 'time', 'pid', 'hostname', 'msg'] as const;

/**
 * What each key means. Written by hand (a key's meaning is not in the code); the generator fails when
 * the controller logs a key that is not described here.
 */
export const KEY_MEANINGS: Record<string, string> = {
  level: '`trace`, `debug`, `info`, `warn`, `error` or `fatal` (a name, not pino’s number)',
  time: 'ISO 8601 timestamp',
  pid: 'process id',
  hostname: 'the pod name',
  msg: 'what happened (the Message column above)',
  namespace: 'namespace of the PostgresCluster',
  name: 'name of the PostgresCluster',
  state: 'the statechart state the pass reached, as stored in `status.state`',
  transition: '`From→To` when the pass changed the state (`∅` for a cluster seen for the first time)',
  reason:
    'on `event` lines the event’s reason; on failures the error class (`conflict`, `forbidden`, `invalid`, …) or `ReconcileThrew`',
  action: 'the event’s action (what was done, e.g. `CreateCNPGCluster`, `BecomeReady`)',
  detail: 'the event’s message',
  error: 'the error message, at most 1024 characters',
  err: 'the error thrown, serialised by pino (`type`, `message`, `stack`)',
  requeue:
    'when the cluster is looked at again: `none`, `immediate` (a conflict), `after` (with `ms`), `transient`, ' +
    '`throttled` (a 429, with the `retryAfterMs` it asked for) or `backoff` (see Retries below)',
  writes: 'writes to the world other than the status in this pass',
  statusWritten: 'whether the pass wrote the status',
  clusters: 'clusters enqueued when this replica started leading',
  workers: 'concurrent reconciles (`--workers`)',
};

export interface LogLineDoc {
  msg: string;
  levels: string[];
  /** Keys beyond BASE_KEYS, in the order the line writes them. */
  keys: string[];
}

const cluster = (name: string): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace: 'team-a', name },
  spec: { class: 'standard' },
});

function source<T extends PostgresCluster>(resource: string, objects: T[] = []): ObjectSource<T> {
  return {
    resource,
    synced: true,
    lastSeen: 0,
    fresh: () => true,
    get: (namespace, name) => objects.find((o) => o.metadata.namespace === namespace && o.metadata.name === name),
    list: () => objects,
    on: () => () => {},
    start: () => {},
    stop: async () => {},
  };
}

/** Timers that never fire: requeues are recorded by the queue but never come back. */
const stillTimers: Timers = { now: () => 0, setTimeout: () => ({}), clearTimeout: () => {} };

const outcome = (key: ClusterKey, extra: Partial<ReconcileOutcome>): ReconcileOutcome => ({
  key,
  found: true,
  requeue: { kind: 'none' },
  statusWritten: true,
  writes: 1,
  events: [],
  ...extra,
});

// Any two states do: the tables list messages and keys, never values.
const [FIRST = '', SECOND = ''] = storableStates();

/** One pass of each kind, in this order. */
const SCRIPT: Record<string, (key: ClusterKey) => ReconcileOutcome> = {
  transition: (key) =>
    outcome(key, {
      from: FIRST,
      to: READY_STATE,
      events: [
        { type: 'Normal', reason: 'Ready', action: 'BecomeReady', message: 'Cluster is up and running' },
        { type: 'Warning', reason: 'ClusterApplyFailed', action: 'Write', message: 'apply Cluster failed' },
      ],
    }),
  failure: (key) =>
    outcome(key, {
      from: SECOND,
      to: SECOND,
      requeue: { kind: 'backoff', error: undefined },
      error: new PortError('forbidden', 'clusters.postgresql.cnpg.io is forbidden'),
      statusWritten: false,
      writes: 0,
    }),
  gone: (key) => outcome(key, { found: false }),
  threw: () => {
    throw new Error('a bug');
  },
};

/** Runs the controller over SCRIPT and returns the parsed JSON lines it logged. */
export async function captureLogLines(): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const names = Object.keys(SCRIPT);
  const clusters = names.map(cluster);
  const sources: WatchSources = {
    clusters: source('postgresclusters', clusters),
    classes: source('postgresclusterclasses') as unknown as WatchSources['classes'],
    cnpgClusters: source('clusters') as unknown as WatchSources['cnpgClusters'],
    poolers: source('poolers') as unknown as WatchSources['poolers'],
    secrets: source('secrets') as unknown as WatchSources['secrets'],
    configMaps: source('configmaps') as unknown as WatchSources['configMaps'],
    deployments: source('deployments') as unknown as WatchSources['deployments'],
    databases: source('postgresdatabases') as unknown as WatchSources['databases'],
    cnpgDatabases: source('databases') as unknown as WatchSources['cnpgDatabases'],
  };
  let lastTaken: () => void = () => {};
  const lastPass = new Promise<void>((resolve) => {
    lastTaken = resolve;
  });
  const controller = new Controller({
    sources,
    reconcile: async (key) => {
      if (key.name === names.at(-1)) lastTaken();
      const pass = SCRIPT[key.name];
      if (!pass) throw new Error(`no scripted pass for ${key.name}`);
      return pass(key);
    },
    workers: 1,
    logger: createLogger({ level: 'trace', destination }),
    timers: stillTimers,
    resyncPeriodMs: 0,
  });
  controller.startWorkers();
  await lastPass;
  // Stopping waits for the pass in flight, and its report, to finish.
  await controller.stopWorkers();
  await controller.shutDown();
  return lines;
}

export function logLines(lines: readonly Record<string, unknown>[]): LogLineDoc[] {
  const byMsg = new Map<string, LogLineDoc>();
  for (const line of lines) {
    const msg = String(line.msg);
    const doc = byMsg.get(msg) ?? { msg, levels: [], keys: [] };
    byMsg.set(msg, doc);
    const level = String(line.level);
    if (!doc.levels.includes(level)) doc.levels.push(level);
    for (const key of Object.keys(line)) {
      if (!(BASE_KEYS as readonly string[]).includes(key) && !doc.keys.includes(key)) doc.keys.push(key);
    }
  }
  return [...byMsg.values()];
}

/** The fields censored wherever they appear in the first levels of a logged object. */
export const redactedFields = () => [...new Set(REDACTED_PATHS.map((path) => path.split('.').at(-1) ?? path))];

export function logLinesTable(lines: readonly LogLineDoc[]): string {
  return table(
    ['Message', 'Level', 'Keys'],
    lines.map((l) => [code(l.msg), l.levels.join(', '), l.keys.map(code).join(', ')]),
  );
}

export function logKeysTable(lines: readonly LogLineDoc[]): string {
  const keys = [...BASE_KEYS, ...new Set(lines.flatMap((l) => l.keys))];
  const undescribed = keys.filter((k) => KEY_MEANINGS[k] === undefined);
  if (undescribed.length > 0) {
    throw new Error(`log key(s) without a meaning in src/tools/docs/logs.ts KEY_MEANINGS: ${undescribed.join(', ')}`);
  }
  const depth = Math.max(...REDACTED_PATHS.map((p) => p.split('.').length)) - 1;
  const rows = keys.map((k) => [code(k), KEY_MEANINGS[k] ?? '']);
  return `${table(['Key', 'Meaning'], rows)}\n\nCensored as \`[REDACTED]\` at the top level and up to ${depth} levels down: ${redactedFields().map(code).join(', ')}.`;
}
