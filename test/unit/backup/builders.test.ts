/** The desired backup objects: the ObjectStores, the plugins entry, the ScheduledBackup and the on-demand Backup. */
import { describe, expect, it } from 'vitest';
import { desiredScheduledBackup } from '../../../src/operator/domain/backup/schedule.ts';
import {
  archiveOf,
  desiredObjectStore,
  desiredSourceStore,
  pluginsOf,
} from '../../../src/operator/domain/backup/store.ts';
import { CLUSTER_UID } from '../../../src/tools/fixtures/observations.ts';
import { backupClass, backupWorld, mergedOf, POLICY, SERVER_NAME } from './support.ts';

const OWNER = { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', name: 'orders', uid: CLUSTER_UID };
const CHECKSUMS = [
  { name: 'AWS_REQUEST_CHECKSUM_CALCULATION', value: 'when_required' },
  { name: 'AWS_RESPONSE_CHECKSUM_VALIDATION', value: 'when_required' },
];

describe('the ObjectStore a cluster archives to', () => {
  it("points at the namespace's folder of the class's store, with credentials by reference only", () => {
    const o = backupWorld();
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    expect(desiredObjectStore(o.cluster, backup)).toEqual({
      apiVersion: 'barmancloud.cnpg.io/v1',
      kind: 'ObjectStore',
      metadata: {
        name: 'orders-backups',
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/managed-by': 'pgfsm', 'pgfsm.io/cluster': 'orders' },
        ownerReferences: [expect.objectContaining({ ...OWNER, controller: true })],
      },
      spec: {
        retentionPolicy: '7d',
        configuration: {
          destinationPath: 's3://pg-backups/prod/team-a/',
          endpointURL: 'http://10.77.0.1:7070',
          s3Credentials: {
            accessKeyId: { name: 's3-creds', key: 'ACCESS_KEY_ID' },
            secretAccessKey: { name: 's3-creds', key: 'ACCESS_SECRET_KEY' },
          },
          data: { immediateCheckpoint: true },
        },
        instanceSidecarConfiguration: { env: CHECKSUMS },
      },
    });
  });

  it("takes the class's keys, region, CA and compressions, and the cluster's retention", () => {
    const clusterClass = backupClass({
      objectStore: {
        destinationPath: 's3://bkt',
        endpointCA: { secretName: 'store-ca', key: 'ca.crt' },
        credentials: { secretName: 'k', accessKeyIdKey: 'id', secretAccessKeyKey: 'secret', regionKey: 'region' },
      },
      walCompression: 'zstd',
      dataCompression: 'snappy',
    });
    const o = backupWorld({ backup: { retention: '2m' } }, { clusterClass });
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    const { spec } = desiredObjectStore(o.cluster, backup);
    expect(spec.retentionPolicy).toBe('2m');
    expect(spec.configuration).toEqual({
      destinationPath: 's3://bkt/team-a/',
      endpointCA: { name: 'store-ca', key: 'ca.crt' },
      s3Credentials: {
        accessKeyId: { name: 'k', key: 'id' },
        secretAccessKey: { name: 'k', key: 'secret' },
        region: { name: 'k', key: 'region' },
      },
      wal: { compression: 'zstd' },
      data: { immediateCheckpoint: true, compression: 'snappy' },
    });
  });

  it('the read-only source store has the same connection, no retention and no compression', () => {
    const o = backupWorld();
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    const source = desiredSourceStore(o.cluster, backup.store, 's3://pg-backups/prod/team-a/');
    expect(source.metadata.name).toBe('orders-restore-source');
    expect(source.spec.retentionPolicy).toBeUndefined();
    expect(source.spec.configuration).toEqual({
      destinationPath: 's3://pg-backups/prod/team-a/',
      endpointURL: 'http://10.77.0.1:7070',
      s3Credentials: desiredObjectStore(o.cluster, backup).spec.configuration.s3Credentials,
    });
    expect(source.spec.instanceSidecarConfiguration).toEqual({ env: CHECKSUMS });
  });
});

describe("the CNPG Cluster's plugins entry and the ScheduledBackup", () => {
  it('archives WAL through the plugin, under the cluster’s own server name', () => {
    const o = backupWorld();
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    expect(pluginsOf(o.cluster, backup)).toEqual([
      {
        name: 'barman-cloud.cloudnative-pg.io',
        isWALArchiver: true,
        parameters: { barmanObjectName: 'orders-backups', serverName: SERVER_NAME },
      },
    ]);
    expect(archiveOf(o.cluster, backup.store)).toEqual({
      serverName: SERVER_NAME,
      destinationPath: 's3://pg-backups/prod/team-a/',
      objectStore: 'orders-backups',
    });
  });

  it('schedules base backups by the plugin in six fields, at once on creation, owned by the ScheduledBackup', () => {
    const o = backupWorld({ backup: { schedule: '15 3 * * SUN' } });
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    const scheduled = desiredScheduledBackup(o.cluster, backup);
    expect(scheduled.metadata).toMatchObject({ name: 'orders-scheduled', namespace: 'team-a' });
    expect(scheduled.metadata.ownerReferences).toEqual([expect.objectContaining(OWNER)]);
    expect(scheduled.spec).toEqual({
      cluster: { name: 'orders' },
      schedule: '0 15 3 * * SUN',
      immediate: true,
      backupOwnerReference: 'self',
      method: 'plugin',
      pluginConfiguration: { name: 'barman-cloud.cloudnative-pg.io' },
    });
  });

  it('never carries a credential value: only the Secret’s name and keys', () => {
    const o = backupWorld();
    const backup = mergedOf(o).backup;
    if (!backup) throw new Error('no backup config');
    const text = JSON.stringify([desiredObjectStore(o.cluster, backup), desiredScheduledBackup(o.cluster, backup)]);
    expect(text).toContain('"s3-creds"');
    expect(POLICY.objectStore.credentials).toEqual({ secretName: 's3-creds' });
  });
});
