/**
 * Counting requests where they arrive: kube-apiserver's audit log (JSON lines, one per request stage the
 * policy keeps; see `auditPolicyFor` in the control-plane harness). The bench trusts this count, not the
 * operator's own counters, so a request the operator makes without knowing it (a library's retry, a relist,
 * a token refresh) is counted too.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

export interface AuditEntry {
  auditID: string;
  stage: string;
  verb: string;
  user: string;
  /** `leases`, `postgresclusters`, `secrets`, … */
  resource: string;
  /** `status`, …; '' for the object itself. */
  subresource: string;
  namespace: string;
  /** '' where the request names none (a list, a watch, often a create). */
  name: string;
  /** HTTP status of the response; 0 when the stage has none yet. */
  code: number;
  /** When the API server received the request, ms since the epoch. */
  receivedAt: number;
  /** When this stage was reached, ms since the epoch (ResponseComplete: the response was sent). */
  stageAt: number;
}

interface RawEntry {
  auditID?: string;
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

/** One audit line, or undefined for a line that is not a complete audit event (e.g. cut mid-write). */
export function parseAuditLine(line: string): AuditEntry | undefined {
  if (!line.trim()) return undefined;
  let raw: RawEntry;
  try {
    raw = JSON.parse(line) as RawEntry;
  } catch {
    return undefined;
  }
  if (!raw.auditID || !raw.stage || !raw.verb) return undefined;
  const receivedAt = Date.parse(raw.requestReceivedTimestamp ?? '');
  const stageAt = Date.parse(raw.stageTimestamp ?? '');
  return {
    auditID: raw.auditID,
    stage: raw.stage,
    verb: raw.verb,
    user: raw.user?.username ?? '',
    resource: raw.objectRef?.resource ?? '',
    subresource: raw.objectRef?.subresource ?? '',
    namespace: raw.objectRef?.namespace ?? '',
    name: raw.objectRef?.name ?? '',
    code: raw.responseStatus?.code ?? 0,
    receivedAt: Number.isNaN(receivedAt) ? 0 : receivedAt,
    stageAt: Number.isNaN(stageAt) ? 0 : stageAt,
  };
}

/**
 * Reads an audit log as it grows: each `read()` returns the entries appended since the last one. A line the
 * API server is still writing stays for the next read.
 */
export class AuditLogReader {
  private offset = 0;
  private partial = '';
  /** Every entry read so far. */
  readonly entries: AuditEntry[] = [];

  constructor(private readonly path: string) {}

  read(): AuditEntry[] {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return [];
    }
    if (size <= this.offset) return [];
    const buffer = Buffer.alloc(size - this.offset);
    const fd = openSync(this.path, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset = size;
    const text = this.partial + buffer.toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    const fresh = lines.flatMap((line) => parseAuditLine(line) ?? []);
    this.entries.push(...fresh);
    return fresh;
  }
}

/** `verb resource[/subresource]`, e.g. `patch postgresclusters/status`. */
export const requestKind = (e: Pick<AuditEntry, 'verb' | 'resource' | 'subresource'>) =>
  `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''}`;

export interface RequestFilter {
  user: string;
  /** Requests received at or after this instant (ms since the epoch). */
  from?: number;
  /** Requests received before this instant. */
  to?: number;
  /** Leave out requests of these resources (e.g. `leases`). */
  excludeResources?: readonly string[];
  /** Leave out requests with these verbs (e.g. `watch`). */
  excludeVerbs?: readonly string[];
}

export interface RequestCount {
  /** Distinct requests (by auditID: a watch logs two stages, counted once). */
  total: number;
  /** By `requestKind`, most frequent first. */
  byKind: Array<[string, number]>;
  /** By `requestKind` and response code class, e.g. `get secrets 404`, most frequent first. */
  byKindAndCode: Array<[string, number]>;
  /** The requests themselves, one entry each (the latest stage seen). */
  requests: AuditEntry[];
}

/** The distinct requests of one user in a window, split by verb and resource. */
export function countRequests(entries: readonly AuditEntry[], filter: RequestFilter): RequestCount {
  const byId = new Map<string, AuditEntry>();
  const excluded = new Set(filter.excludeResources ?? []);
  const excludedVerbs = new Set(filter.excludeVerbs ?? []);
  for (const e of entries) {
    if (e.user !== filter.user || excluded.has(e.resource) || excludedVerbs.has(e.verb)) continue;
    if (filter.from !== undefined && e.receivedAt < filter.from) continue;
    if (filter.to !== undefined && e.receivedAt >= filter.to) continue;
    // A later stage has the response code; keep it.
    const seen = byId.get(e.auditID);
    if (!seen || e.stageAt >= seen.stageAt) byId.set(e.auditID, e);
  }
  const requests = [...byId.values()];
  const tally = (key: (e: AuditEntry) => string) => {
    const counts = new Map<string, number>();
    for (const e of requests) counts.set(key(e), (counts.get(key(e)) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  };
  return {
    total: requests.length,
    byKind: tally(requestKind),
    byKindAndCode: tally((e) => `${requestKind(e)} ${e.code || '-'}`),
    requests,
  };
}
