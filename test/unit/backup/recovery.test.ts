/** domain/backup/recovery.ts: which archive a restore reads, and what it cannot give. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import type { RestoreConfig } from '../../../src/operator/domain/backup/policy.ts';
import { resolveRestore } from '../../../src/operator/domain/backup/recovery.ts';
import { backupWorld, mergedOf } from './support.ts';

const NOW = Date.parse('2026-12-07T12:00:00Z');
const FOLDER = 's3://pg-backups/prod/team-a/';

function restoreOf(source: RestoreConfig['source'], targetTime?: string): RestoreConfig {
  const store = mergedOf(backupWorld()).backup?.store;
  if (!store) throw new Error('no store');
  return { source, store, ...(targetTime ? { targetTime } : {}) };
}

const source = (backup?: Partial<NonNullable<PostgresCluster['status']>['backup']>): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { name: 'orders-old', namespace: 'team-a', uid: 'c0ffee00-1111' },
  spec: { class: 'standard' },
  ...(backup
    ? {
        status: { backup: { serverName: 'orders-old-c0ffee00', destinationPath: FOLDER, objectStore: 'x', ...backup } },
      }
    : {}),
});

const resolve = (config: RestoreConfig, sourceCluster?: PostgresCluster) =>
  resolveRestore(config, { cluster: backupWorld().cluster, now: NOW, ...(sourceCluster ? { sourceCluster } : {}) });

describe('resolving a restore', () => {
  it("reads an archive named by serverName in the namespace's folder of the class's store", () => {
    expect(resolve(restoreOf({ serverName: 'gone-3f2a9c1d' }))).toEqual({
      ok: true,
      source: { serverName: 'gone-3f2a9c1d', destinationPath: FOLDER },
    });
  });

  it("reads a living source's archive as its status records it, to a target inside its window", () => {
    const backed = source({
      firstRecoverabilityPoint: '2026-12-01T02:31:00Z',
      lastSuccessfulBackupTime: '2026-12-07T02:31:00Z',
    });
    expect(resolve(restoreOf({ cluster: 'orders-old' }, '2026-12-06T10:00:00+01:00'), backed)).toEqual({
      ok: true,
      source: { serverName: 'orders-old-c0ffee00', destinationPath: FOLDER },
    });
  });

  it.each([
    ['a source cluster that does not exist (yet)', undefined, 'not found in namespace team-a', true],
    ['a source cluster with no backups', source(), 'has no backups', true],
    ['a source cluster with no completed backup yet', source({}), 'has no completed backup yet', true],
    [
      'a source archiving to another store',
      source({ destinationPath: 's3://elsewhere/team-a/', lastSuccessfulBackupTime: '2026-12-07T02:31:00Z' }),
      'restore reads only its own class',
      false,
    ],
  ])('waits for, or refuses, %s, naming spec.restore.source.cluster', (_what, sourceCluster, words, wait) => {
    const resolved = resolve(restoreOf({ cluster: 'orders-old' }), sourceCluster);
    expect(resolved).toMatchObject({ ok: false, field: 'spec.restore.source.cluster', wait });
    if (!resolved.ok) {
      expect(resolved.message).toContain(words);
      expect(resolved.message.startsWith('spec.restore.source.cluster: ')).toBe(true);
    }
  });

  it('refuses a target before the first recoverability point, naming targetTime', () => {
    const backed = source({
      firstRecoverabilityPoint: '2026-12-05T02:31:00Z',
      lastSuccessfulBackupTime: '2026-12-07T02:31:00Z',
    });
    expect(resolve(restoreOf({ cluster: 'orders-old' }, '2026-12-05T03:00:00+01:00'), backed)).toMatchObject({
      ok: false,
      field: 'spec.restore.targetTime',
      wait: false,
      message: expect.stringContaining('is before 2026-12-05T02:31:00Z'),
    });
  });

  it('waits while the target is in the future, whatever the source', () => {
    expect(resolve(restoreOf({ serverName: 'gone-3f2a9c1d' }, '2026-12-07T12:00:01Z'))).toMatchObject({
      ok: false,
      field: 'spec.restore.targetTime',
      wait: true,
    });
    expect(resolve(restoreOf({ serverName: 'gone-3f2a9c1d' }, '2026-12-07T13:00:00+01:00')).ok).toBe(true);
  });
});
