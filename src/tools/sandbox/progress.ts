/**
 * Live progress of the PostgresClusters, read from a watch of them (the same status anyone sees with
 * kubectl): one line whenever a cluster's state or the reason it gives changes, and a summary table.
 */
import { isReadyState } from '../../../machines/states.ts';
import type { PostgresCluster } from '../../operator/api/schema.ts';
import type { ObjectSource } from '../../operator/driver/sources.ts';
import { elapsed, type Output, table } from './output.ts';

export const keyOf = (c: { metadata: { namespace?: string; name: string } }) =>
  `${c.metadata.namespace ?? ''}/${c.metadata.name}`;

/** The summary condition's reason is the most telling word for "why is it in this state". */
export const reasonOf = (c: PostgresCluster) => c.status?.conditions?.find((x) => x.type === 'Ready')?.reason ?? '';

/** Ready, and the status speaks about the current spec (not a stale Ready from before an edit). */
export const isReady = (c: PostgresCluster | undefined) =>
  isReadyState(c?.status?.state) && (c?.status?.observedGeneration ?? 0) >= (c.metadata.generation ?? 0);

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

export class ClusterProgress {
  private readonly seen = new Map<string, Seen>();
  private readonly waiters = new Set<() => void>();
  private unsubscribe: (() => void) | undefined;
  private start = Date.now();

  constructor(
    private readonly source: ObjectSource<PostgresCluster>,
    private readonly out: Output,
    /** Width of the cluster column, so that lines align. */
    private readonly width = 18,
  ) {}

  /** Starts printing; times are relative to now. */
  watch(): void {
    this.start = Date.now();
    this.unsubscribe ??= this.source.on((event) => {
      if (event.type === 'delete') this.gone(event.object);
      else this.observe(event.object);
      for (const wake of this.waiters) wake();
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private observe(cluster: PostgresCluster): void {
    const state = cluster.status?.state;
    if (!state) return;
    const key = keyOf(cluster);
    const now: Seen = { state, reason: reasonOf(cluster), instances: instancesOf(cluster) };
    const before = this.seen.get(key);
    if (before?.state === now.state && before.reason === now.reason && before.instances === now.instances) return;
    this.seen.set(key, now);
    const { style } = this.out;
    // Coloured by phase, which the state implies: green when Ready, red when failed, yellow when held.
    const phase = cluster.status?.phase;
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

  private gone(cluster: PostgresCluster): void {
    const key = keyOf(cluster);
    this.print(key, `${this.seen.get(key)?.state ?? '∅'} → ${this.out.style.dim('(deleted)')}`);
    this.seen.delete(key);
  }

  /** Something that happened to the clusters from outside, e.g. a switchover, in the same timeline. */
  note(text: string): void {
    this.out.line(`${this.out.style.dim(elapsed(Date.now() - this.start))}  ${this.out.style.bold(`── ${text}`)}`);
  }

  private print(key: string, text: string): void {
    this.out.line(`${this.out.style.dim(elapsed(Date.now() - this.start))}  ${key.padEnd(this.width)}  ${text}`);
  }

  /** Resolves once every cluster named by `keys` is Ready at the same time. */
  untilReady(keys: string[]): Promise<void> {
    const ready = () => keys.every((key) => isReady(this.get(key)));
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

  all(): PostgresCluster[] {
    return this.source.list().sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  }

  get(key: string): PostgresCluster | undefined {
    const [namespace = '', name = ''] = key.split('/');
    return this.source.get(namespace, name);
  }
}

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
  const { style } = out;
  return table(rows, (cell, row, column) => {
    if (row === 0) return style.bold(cell);
    if (column === 1) return cell === 'Ready' ? style.green(cell) : style.yellow(cell);
    return cell;
  });
}
