/** domain/backup/health.ts: archiving, the last backup and its age, the recoverability window. */
import { describe, expect, it } from 'vitest';
import { backupHealth } from '../../../src/operator/domain/backup/health.ts';
import type { ObjectStore } from '../../../src/operator/domain/backup/objects.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';

const NOW = Date.parse('2026-12-07T12:00:00Z');
const SERVER = 'orders-3f2a9c1d';

const cnpg = (conditions: NonNullable<CnpgCluster['status']>['conditions'] = []): CnpgCluster => ({
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Cluster',
  metadata: { name: 'orders', namespace: 'team-a' },
  spec: {},
  status: { conditions },
});
const store = (windows: NonNullable<ObjectStore['status']>['serverRecoveryWindow']): ObjectStore => ({
  apiVersion: 'barmancloud.cnpg.io/v1',
  kind: 'ObjectStore',
  metadata: { name: 'orders-backups', namespace: 'team-a' },
  spec: {
    configuration: {
      destinationPath: 's3://b/team-a/',
      s3Credentials: { accessKeyId: { name: 's', key: 'a' }, secretAccessKey: { name: 's', key: 'b' } },
    },
  },
  status: { serverRecoveryWindow: windows },
});
const condition = (type: string, status: string, reason: string, message = '') => ({ type, status, reason, message });

describe('backup health', () => {
  it('knows nothing before CNPG and the plugin report', () => {
    expect(backupHealth({ serverName: SERVER, now: NOW })).toEqual({
      archiving: { state: 'unknown', message: expect.stringContaining('no WAL archived yet') },
      lastBackup: { outcome: 'none', message: 'no base backup yet' },
      window: {},
    });
  });

  it('archiving working, the last backup succeeded, its age and the window, of this archive only', () => {
    const health = backupHealth({
      serverName: SERVER,
      now: NOW,
      cnpg: cnpg([
        condition('ContinuousArchiving', 'True', 'ContinuousArchivingSuccess'),
        condition('LastBackupSucceeded', 'True', 'LastBackupSucceeded'),
      ]),
      store: store({
        [SERVER]: {
          firstRecoverabilityPoint: '2026-12-01T02:30:05Z',
          lastSuccessfulBackupTime: '2026-12-07T02:31:00Z',
        },
        'orders-00000000': { lastSuccessfulBackupTime: '2026-12-07T11:59:00Z' },
      }),
    });
    expect(health).toEqual({
      archiving: { state: 'working', message: 'WAL archiving works' },
      lastBackup: { outcome: 'succeeded', message: 'the last base backup succeeded' },
      window: { firstRecoverabilityPoint: '2026-12-01T02:30:05Z', lastSuccessfulBackupTime: '2026-12-07T02:31:00Z' },
      lastBackupAgeMs: (9 * 60 + 29) * 60_000,
    });
  });

  it("says why archiving or the last backup fails, in CNPG's words", () => {
    const health = backupHealth({
      serverName: SERVER,
      now: NOW,
      cnpg: cnpg([
        condition(
          'ContinuousArchiving',
          'False',
          'ContinuousArchivingFailing',
          'barman-cloud-wal-archive: exit status 4',
        ),
        condition('LastBackupSucceeded', 'False', 'LastBackupFailed', 'no credentials'),
      ]),
      store: store({ [SERVER]: { lastFailedBackupTime: '2026-12-07T02:31:00Z' } }),
    });
    expect(health.archiving).toEqual({
      state: 'failing',
      message: 'WAL archiving fails: barman-cloud-wal-archive: exit status 4',
    });
    expect(health.lastBackup).toEqual({ outcome: 'failed', message: 'the last base backup failed: no credentials' });
    expect(health.window).toEqual({ lastFailedBackupTime: '2026-12-07T02:31:00Z' });
    expect(health.lastBackupAgeMs).toBeUndefined();
  });

  it('a backup running; a clock behind the plugin reads as age 0', () => {
    const health = backupHealth({
      serverName: SERVER,
      now: NOW,
      cnpg: cnpg([condition('LastBackupSucceeded', 'False', 'BackupStarted')]),
      store: store({ [SERVER]: { lastSuccessfulBackupTime: '2026-12-07T12:00:30Z' } }),
    });
    expect(health.lastBackup.outcome).toBe('running');
    expect(health.lastBackupAgeMs).toBe(0);
  });
});
