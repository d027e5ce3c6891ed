/** domain/backup/status.ts: what status.backup and status.restore record. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { backupHealth } from '../../../src/operator/domain/backup/health.ts';
import { backupStatusOf, restoreStatusOf } from '../../../src/operator/domain/backup/status.ts';
import { backupWorld, mergedOf, SERVER_NAME } from './support.ts';

const ARCHIVE = {
  serverName: SERVER_NAME,
  destinationPath: 's3://pg-backups/prod/team-a/',
  objectStore: 'orders-backups',
};

const withStatus = (cluster: PostgresCluster, status: PostgresCluster['status']): PostgresCluster => ({
  ...cluster,
  status,
});

describe('status.backup', () => {
  it('records the archive a later restore names, and nothing for a cluster that is not backed up', () => {
    const o = backupWorld();
    expect(backupStatusOf(o.cluster, mergedOf(o))).toEqual(ARCHIVE);
    const off = backupWorld({ backup: { enabled: false } });
    expect(backupStatusOf(off.cluster, mergedOf(off))).toBeUndefined();
  });

  it("adds the plugin's report of this archive", () => {
    const o = backupWorld();
    const health = backupHealth({
      serverName: SERVER_NAME,
      now: Date.parse('2026-12-07T12:00:00Z'),
      store: {
        apiVersion: 'barmancloud.cnpg.io/v1',
        kind: 'ObjectStore',
        metadata: { name: 'orders-backups' },
        spec: {
          configuration: {
            destinationPath: ARCHIVE.destinationPath,
            s3Credentials: { accessKeyId: { name: 's', key: 'a' }, secretAccessKey: { name: 's', key: 'b' } },
          },
        },
        status: { serverRecoveryWindow: { [SERVER_NAME]: { lastSuccessfulBackupTime: '2026-12-07T02:31:00Z' } } },
      },
    });
    expect(backupStatusOf(o.cluster, mergedOf(o), health)).toEqual({
      ...ARCHIVE,
      lastSuccessfulBackupTime: '2026-12-07T02:31:00Z',
    });
  });

  it('records the on-demand request acted on, and keeps the last one otherwise', () => {
    const o = backupWorld();
    const acted = { token: '1733572800', backup: 'orders-backup-0123456789ab' };
    expect(backupStatusOf(o.cluster, mergedOf(o), undefined, acted)).toEqual({
      ...ARCHIVE,
      lastRequest: acted.token,
      lastRequestBackup: acted.backup,
    });
    const recorded = withStatus(o.cluster, { backup: { ...ARCHIVE, lastRequest: 'a', lastRequestBackup: 'b' } });
    expect(backupStatusOf(recorded, mergedOf(o))).toMatchObject({ lastRequest: 'a', lastRequestBackup: 'b' });
  });
});

describe('status.restore', () => {
  it('records the source archive and target once resolved, and keeps what it recorded', () => {
    const o = backupWorld({ restore: { source: { cluster: 'orders-old' }, targetTime: '2026-12-07T10:00:00Z' } });
    const config = mergedOf(o);
    expect(restoreStatusOf(o.cluster, config)).toBeUndefined();
    const source = { serverName: 'orders-old-c0ffee00', destinationPath: ARCHIVE.destinationPath };
    expect(restoreStatusOf(o.cluster, config, source)).toEqual({
      serverName: 'orders-old-c0ffee00',
      targetTime: '2026-12-07T10:00:00Z',
    });
    const recorded = withStatus(o.cluster, { restore: { serverName: 'first' } });
    expect(restoreStatusOf(recorded, config, source)).toEqual({ serverName: 'first' });
    expect(restoreStatusOf(backupWorld().cluster, mergedOf(backupWorld()), source)).toBeUndefined();
  });
});
