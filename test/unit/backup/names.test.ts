/** domain/backup/names.ts: archives and backup objects named so that no two clusters share an archive. */
import { describe, expect, it } from 'vitest';
import {
  archivePathOf,
  objectStoreName,
  onDemandBackupName,
  serverNameOf,
  sourceStoreName,
} from '../../../src/operator/domain/backup/names.ts';

const cluster = (name: string, uid: string) => ({ metadata: { name, uid } });

describe('archive names', () => {
  it('names the archive after the cluster and the first 8 characters of its uid', () => {
    expect(serverNameOf(cluster('orders', '3F2A9C1D-0b7e-4d5f-9a8b-1c2d3e4f5a6b'))).toBe('orders-3f2a9c1d');
  });

  it('gives a cluster recreated under the same name another archive', () => {
    const first = serverNameOf(cluster('orders', '3f2a9c1d-0b7e-4d5f-9a8b-1c2d3e4f5a6b'));
    const again = serverNameOf(cluster('orders', '9b1e7c20-5d4a-4c1b-8e2f-7a6b5c4d3e2f'));
    expect(first).not.toBe(again);
  });

  it('keeps a 50-character name within a DNS label', () => {
    expect(serverNameOf(cluster('o'.repeat(50), '3f2a9c1d-0b7e')).length).toBeLessThanOrEqual(63);
  });

  it("puts each namespace's archives in a folder of their own, however the class writes its path", () => {
    expect(archivePathOf('s3://pg-backups/prod', 'team-a')).toBe('s3://pg-backups/prod/team-a/');
    expect(archivePathOf('s3://pg-backups/prod/', 'team-b')).toBe('s3://pg-backups/prod/team-b/');
    expect(archivePathOf('s3://pg-backups', 'team-a')).toBe('s3://pg-backups/team-a/');
  });

  it('names the stores after the cluster', () => {
    expect(objectStoreName('orders')).toBe('orders-backups');
    expect(sourceStoreName('orders')).toBe('orders-restore-source');
  });

  it('names an on-demand Backup after its token: the same token the same Backup, another token another', () => {
    const name = onDemandBackupName('orders', '1733572800');
    expect(name).toMatch(/^orders-backup-[0-9a-f]{12}$/);
    expect(onDemandBackupName('orders', '1733572800')).toBe(name);
    expect(onDemandBackupName('orders', '1733572801')).not.toBe(name);
    expect(onDemandBackupName('billing', '1733572800')).not.toBe(name);
  });
});
