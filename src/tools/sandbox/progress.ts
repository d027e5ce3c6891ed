/**
 * Live progress of the examples, read from watches of the PostgresClusters and the PostgresDatabases (the same
 * status anyone sees with kubectl): one line whenever one's state or the reason it gives changes (or, for a
 * cluster, its ready instances), and a summary table of each kind.
 */
import { DATABASE_READY_STATE } from '../../../machines/database-states.ts';
import { isReadyState } from '../../../machines/states.ts';
import type { PostgresCluster, PostgresDatabase } from '../../operator/api/schema.ts';
import type { KubeObject } from '../../operator/domain/objects.ts';
import type { ObjectSource } from '../../operator/driver/sources.ts';
import { elapsed, type Output, table } from './output.ts';

export const keyOf = (c: { metadata: { namespace?: string; name: string } }) =>
  `${c.metadata.namespace ?? ''}/${c.metadata.name}`;

/** What the status of both kinds says alike. */
interface Reported extends KubeObject {
  status?: {
    state?: string;
    phase?: string;
    observedGeneration?: number;
    conditions?: Array<{ type: string; reason: string; message: string }>;
  };
}

const readyCondition = (o: Reported) => o.status?.conditions?.find((x) => x.type === 'Ready');

/** The summary condition's reason is the most telling word for "why is it in this state". */
export const reasonOf = (o: Reported) => readyCondition(o)?.reason ?? '';

/** The summary condition's message: what it waits for, in a sentence. */
export const messageOf = (o: Reported) => readyCondition(o)?.message ?? '';

/** The status speaks about the current spec (not a stale Ready from before an edit). */
const current = (o: Reported) => (o.status?.observedGeneration ?? 0) >= (o.metadata.generation ?? 0);

/** Ready, for the current spec. */
export const isReady = (c: PostgresCluster | undefined) =>
  isReadyState(c?.status?.state) && c !== undefined && current(c);

/** Ready, for the current spec: its roles, database, privileges and connection Secrets are all in place. */
export const isDatabaseReady = (d: PostgresDatabase | undefined) =>
  d?.status?.state === DATABASE_READY_STATE && current(d);

interface Seen {
  state: string;
  reason: string;
  /** `2/3 ready` while instances are missing: the slow part of provisioning, worth seeing move. */
  instances: string;
}

const instancesOf = (c: PostgresCluster) => {
  const { instances, readyInstances = 0 } = c.status ?? {};
  return instances !== undefined && readyInstances < instances ? `${readyInstances}/${instances} ready` : '';
};

export interface ProgressSources {
  clusters: ObjectSource<PostgresCluster>;
  databases: ObjectSource<PostgresDatabase>;
}

/** The examples waited for, each kind by `namespace/name`. */
export interface ExampleKeys {
  clusters: readonly string[];
  databases: readonly string[];
}

const byKey = <T extends Reported>(objects: T[]) => objects.sort((a, b) => keyOf(a).localeCompare(keyOf(b)));

const split = (key: string) => {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name };
};

export class Progress {
  /** By kind and key: a database may have its cluster's name. */
  private readonly seen = new Map<string, Seen>();
  private readonly waiters = new Set<() => void>();
  private unsubscribe: Array<() => void> = [];
  private start = Date.now();

  constructor(
    private readonly sources: ProgressSources,
    private readonly out: Output,
    /** Width of the name column, so that lines align. */
    private readonly width = 18,
  ) {}

  /** Starts printing; times are relative to now. */
  watch(): void {
    this.start = Date.now();
    if (this.unsubscribe.length > 0) return;
    const follow = <T extends Reported>(kind: string, source: ObjectSource<T>, detail: (o: T) => string) =>
      source.on((event) => {
        if (event.type === 'delete') this.gone(kind, event.object);
        else this.observe(kind, event.object, detail(event.object));
        for (const wake of this.waiters) wake();
      });
    this.unsubscribe = [
      follow('cluster', this.sources.clusters, instancesOf),
      follow('database', this.sources.databases, () => ''),
    ];
  }

  stop(): void {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
  }

  private observe(kind: string, object: Reported, instances: string): void {
    const state = object.status?.state;
    if (!state) return;
    const key = keyOf(object);
    const now: Seen = { state, reason: reasonOf(object), instances };
    const before = this.seen.get(`${kind} ${key}`);
    if (before?.state === now.state && before.reason === now.reason && before.instances === now.instances) return;
    this.seen.set(`${kind} ${key}`, now);
    const { style } = this.out;
    // Coloured by phase, which the state implies: green when Ready, red when failed, yellow when held.
    const phase = object.status?.phase;
    const paint =
      phase === 'Ready'
        ? style.green
        : phase === 'Failed'
          ? style.red
          : phase === 'Degraded' || phase === 'Suspended'
            ? style.yellow
            : style.cyan;
    const move =
      before?.state === now.state ? `${style.dim('  …')} ${paint(state)}` : `${before?.state ?? '∅'} → ${paint(state)}`;
    this.print(key, `${move}  ${style.dim(`(${[now.reason, now.instances].filter(Boolean).join(', ')})`)}`);
  }

  private gone(kind: string, object: Reported): void {
    const key = keyOf(object);
    this.print(key, `${this.seen.get(`${kind} ${key}`)?.state ?? '∅'} → ${this.out.style.dim('(deleted)')}`);
    this.seen.delete(`${kind} ${key}`);
  }

  /** Something that happened to the clusters from outside, e.g. a switchover, in the same timeline. */
  note(text: string): void {
    this.out.line(`${this.out.style.dim(elapsed(Date.now() - this.start))}  ${this.out.style.bold(`── ${text}`)}`);
  }

  private print(key: string, text: string): void {
    this.out.line(`${this.out.style.dim(elapsed(Date.now() - this.start))}  ${key.padEnd(this.width)}  ${text}`);
  }

  /** Resolves once every cluster and database named is Ready at the same time. */
  untilReady(awaited: ExampleKeys): Promise<void> {
    const ready = () =>
      awaited.clusters.every((key) => isReady(this.cluster(key))) &&
      awaited.databases.every((key) => isDatabaseReady(this.database(key)));
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        if (!ready()) return;
        this.waiters.delete(wake);
        resolve();
      };
      this.waiters.add(wake);
    });
  }

  clusters(): PostgresCluster[] {
    return byKey(this.sources.clusters.list());
  }

  databases(): PostgresDatabase[] {
    return byKey(this.sources.databases.list());
  }

  cluster(key: string): PostgresCluster | undefined {
    const { namespace, name } = split(key);
    return this.sources.clusters.get(namespace, name);
  }

  database(key: string): PostgresDatabase | undefined {
    const { namespace, name } = split(key);
    return this.sources.databases.get(namespace, name);
  }
}

const paintState = (out: Output) => (cell: string, row: number, column: number) => {
  if (row === 0) return out.style.bold(cell);
  if (column === 1) return cell === 'Ready' ? out.style.green(cell) : out.style.yellow(cell);
  return cell;
};

/** The table printed once everything is Ready (and on demand). */
export function summary(clusters: Array<PostgresCluster | undefined>, out: Output): string[] {
  const rows = [['CLUSTER', 'STATE', 'PHASE', 'READY', 'PRIMARY', 'POOLER', 'ENDPOINTS CONFIGMAP']];
  for (const c of clusters) {
    if (!c) continue;
    const s = c.status ?? {};
    const pooler = s.connectionPoolerStatus ? (s.connectionPoolerStatus.enabled ? 'rw+ro serving' : 'not ready') : '-';
    rows.push([
      keyOf(c),
      s.state ?? '(none)',
      s.phase ?? '-',
      `${s.readyInstances ?? 0}/${s.instances ?? '?'}`,
      s.currentPrimary ?? '-',
      pooler,
      s.resources?.configMapRef?.name ?? '-',
    ]);
  }
  return table(rows, paintState(out));
}

/**
 * The databases' table: where each lives, the Service its owner's Secret points at (the pooler's on a pooled
 * cluster) and the connection Secret of each role, the owner's first.
 */
export function databaseSummary(databases: Array<PostgresDatabase | undefined>, out: Output): string[] {
  const rows = [['DATABASE', 'STATE', 'PHASE', 'CLUSTER', 'DB', 'OWNER', 'ENDPOINT', 'CONNECTION SECRETS']];
  for (const d of databases) {
    if (!d) continue;
    const s = d.status ?? {};
    const endpoint = s.endpoint ? `${s.endpoint.host.split('.')[0]}:${s.endpoint.port}` : '-';
    const secrets = s.secrets?.map((secret) => secret.secretName).join(', ') || '-';
    rows.push([
      keyOf(d),
      s.state ?? '(none)',
      s.phase ?? '-',
      d.spec.cluster,
      d.spec.name,
      d.spec.owner,
      endpoint,
      secrets,
    ]);
  }
  return table(rows, paintState(out));
}
