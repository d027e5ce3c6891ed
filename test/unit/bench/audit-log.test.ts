import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { explain } from '../../../bench/api-report.ts';
import { AuditLogReader, countRequests, parseAuditLine } from '../../../bench/audit-log.ts';
import { quantile, spread } from '../../../bench/stats.ts';

const OPERATOR = 'system:serviceaccount:pgfsm-system:pgfsm';

/** An audit.k8s.io/v1 Event line as kube-apiserver writes it at level Metadata. */
function line(
  id: string,
  verb: string,
  resource: string,
  options: { stage?: string; user?: string; sub?: string; name?: string; code?: number; at?: string } = {},
) {
  return JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'Metadata',
    auditID: id,
    stage: options.stage ?? 'ResponseComplete',
    requestURI: `/x/${resource}`,
    verb,
    user: { username: options.user ?? OPERATOR, groups: ['system:serviceaccounts'] },
    objectRef: {
      resource,
      namespace: 'bench',
      ...(options.name ? { name: options.name } : {}),
      ...(options.sub ? { subresource: options.sub } : {}),
      apiVersion: 'v1',
    },
    ...(options.code ? { responseStatus: { metadata: {}, code: options.code } } : {}),
    requestReceivedTimestamp: options.at ?? '2026-01-01T10:00:00.000100Z',
    stageTimestamp: options.at ?? '2026-01-01T10:00:00.002300Z',
  });
}

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('audit log parsing', () => {
  it('reads the fields the bench counts by, with microsecond timestamps as ms', () => {
    const entry = parseAuditLine(line('a', 'patch', 'postgresclusters', { sub: 'status', name: 'c1', code: 200 }));
    expect(entry).toEqual({
      auditID: 'a',
      stage: 'ResponseComplete',
      verb: 'patch',
      user: OPERATOR,
      resource: 'postgresclusters',
      subresource: 'status',
      namespace: 'bench',
      name: 'c1',
      code: 200,
      receivedAt: Date.UTC(2026, 0, 1, 10),
      stageAt: Date.UTC(2026, 0, 1, 10) + 2,
    });
  });

  it('skips what is not a complete audit event', () => {
    expect(parseAuditLine('')).toBeUndefined();
    expect(parseAuditLine('{"auditID":"a","stage":"Respon')).toBeUndefined();
    expect(parseAuditLine('{"kind":"Event"}')).toBeUndefined();
  });

  it('counts distinct requests of one user by verb, resource and code, a watch once for its two stages', () => {
    const entries = [
      line('1', 'get', 'secrets', { name: 's', code: 404 }),
      line('2', 'get', 'secrets', { name: 's', code: 200 }),
      line('3', 'watch', 'secrets', { stage: 'ResponseStarted', code: 200 }),
      line('3', 'watch', 'secrets', { stage: 'ResponseComplete', code: 200, at: '2026-01-01T10:05:00Z' }),
      line('4', 'update', 'leases', { name: 'pgfsm-leader', code: 200 }),
      line('5', 'patch', 'clusters', { sub: 'status', user: 'admin', code: 200 }),
    ].flatMap((l) => parseAuditLine(l) ?? []);
    const all = countRequests(entries, { user: OPERATOR });
    expect(all.total).toBe(4);
    expect(all.byKind).toEqual([
      ['get secrets', 2],
      ['update leases', 1],
      ['watch secrets', 1],
    ]);
    expect(all.byKindAndCode).toContainEqual(['get secrets 404', 1]);
    expect(countRequests(entries, { user: OPERATOR, excludeResources: ['leases'] }).total).toBe(3);
    expect(countRequests(entries, { user: 'admin' }).byKind).toEqual([['patch clusters/status', 1]]);
  });

  it('windows by the time the API server received the request', () => {
    const entries = [
      line('1', 'get', 'secrets', { at: '2026-01-01T10:00:00Z' }),
      line('2', 'get', 'secrets', { at: '2026-01-01T10:00:01Z' }),
      line('3', 'get', 'secrets', { at: '2026-01-01T10:00:02Z' }),
    ].flatMap((l) => parseAuditLine(l) ?? []);
    const from = Date.UTC(2026, 0, 1, 10, 0, 1);
    expect(countRequests(entries, { user: OPERATOR, from, to: from + 1000 }).requests.map((e) => e.auditID)).toEqual([
      '2',
    ]);
  });

  it('reads a growing file: a line cut mid-write waits for the next read', () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-'));
    const path = join(dir, 'audit.log');
    const reader = new AuditLogReader(path);
    expect(reader.read()).toEqual([]);
    const second = line('2', 'list', 'configmaps');
    writeFileSync(path, `${line('1', 'get', 'secrets')}\n${second.slice(0, 40)}`);
    expect(reader.read().map((e) => e.auditID)).toEqual(['1']);
    appendFileSync(path, `${second.slice(40)}\n`);
    expect(reader.read().map((e) => e.auditID)).toEqual(['2']);
    expect(reader.entries.map((e) => e.auditID)).toEqual(['1', '2']);
  });
});

describe('bench statistics', () => {
  it('quantiles by nearest rank, spreads over repetitions without missing figures', () => {
    const values = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(quantile(values, 0.5)).toBe(10);
    expect(quantile(values, 0.99)).toBe(20);
    expect(quantile([], 0.5)).toBeNaN();
    expect(spread([3, Number.NaN, 1, 2])).toEqual({ min: 1, median: 2, max: 3, n: 3 });
    expect(spread([4, 1])).toMatchObject({ median: 2.5 });
  });
});

describe('the breakdown of requests', () => {
  it('names what each kind the operator made in a run is for, and says when one is unexpected', () => {
    // The kinds of a 30-cluster run on the real API server (bench/results.md).
    const seen = [
      'create events 201',
      'patch postgresclusters/status 200',
      'create secrets 201',
      'get clusters 404',
      'get configmaps 200',
      'get configmaps 404',
      'get poolers 404',
      'get secrets 200',
      'patch clusters 201',
      'patch configmaps 201',
      'patch poolers 201',
      'patch postgresclusters 200',
      'get leases 200',
      'update leases 200',
    ];
    for (const row of seen) expect(explain(row), row).not.toMatch(/not expected/);
    expect(explain('get configmaps 404')).toMatch(/not there yet/);
    expect(explain('patch postgresclusters/status 409')).toMatch(/conflict/);
    expect(explain('delete persistentvolumeclaims 200')).toMatch(/not expected/);
  });
});
