/** domain/backup/observation.ts and core/observe.ts: which backup objects a pass reads, and what it sees of them. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import { observeCluster } from '../../../src/operator/core/observe.ts';
import { backupReadsOf } from '../../../src/operator/domain/backup/observation.ts';
import { makeClass } from '../../../src/tools/fixtures/observations.ts';
import type { StoredObject } from '../../../src/tools/memory/api-server.ts';
import { MemoryApiServer } from '../../../src/tools/memory/api-server.ts';
import { memoryPorts } from '../../../src/tools/memory/ports.ts';
import { backupClass, backupWorld, POLICY } from './support.ts';

const names = (reads: ReturnType<typeof backupReadsOf>) =>
  Object.fromEntries(Object.entries(reads).map(([k, v]) => [k, typeof v === 'string' ? v : `${v.kind}/${v.name}`]));

describe('backupReadsOf', () => {
  it('reads nothing for a cluster whose class has no backup policy: it observes what it did before', () => {
    const { cluster } = backupWorld({}, { clusterClass: makeClass() });
    expect(backupReadsOf(cluster, makeClass())).toEqual({});
    expect(backupReadsOf(cluster, undefined)).toEqual({});
  });

  it('a backed-up cluster: its store, its ScheduledBackup and the credentials Secret', () => {
    const { cluster, clusterClass } = backupWorld();
    expect(names(backupReadsOf(cluster, clusterClass))).toEqual({
      store: 'ObjectStore/orders-backups',
      scheduled: 'ScheduledBackup/orders-scheduled',
      credentials: 'Secret/s3-creds',
    });
  });

  it('the CA Secret, and the Backup of the annotation token (a token no Backup can be named after is not read)', () => {
    const clusterClass = backupClass({
      objectStore: { ...POLICY.objectStore, endpointCA: { secretName: 'store-ca', key: 'ca.crt' } },
    });
    const world = backupWorld({}, { clusterClass });
    const annotated = (token: string): PostgresCluster => ({
      ...world.cluster,
      metadata: { ...world.cluster.metadata, annotations: { 'pgfsm.io/backup-now': token } },
    });
    const reads = names(backupReadsOf(annotated('1765108800'), clusterClass));
    expect(reads.endpointCA).toBe('Secret/store-ca');
    expect(reads.onDemand).toMatch(/^Backup\/orders-backup-[0-9a-f]{12}$/);
    expect(backupReadsOf(annotated('no spaces allowed'), clusterClass).onDemand).toBeUndefined();
  });

  it('switched off: nothing; restoring: the source store and the source cluster, whether backed up or not', () => {
    expect(backupReadsOf(backupWorld({ backup: { enabled: false } }).cluster, backupClass())).toEqual({});
    const restore = { source: { cluster: 'billing' } };
    expect(names(backupReadsOf(backupWorld({ backup: { enabled: false }, restore }).cluster, backupClass()))).toEqual({
      sourceStore: 'ObjectStore/orders-restore-source',
      credentials: 'Secret/s3-creds',
      restoreSource: 'billing',
    });
    const byServerName = backupReadsOf(
      backupWorld({ restore: { source: { serverName: 'old-1234abcd' } } }).cluster,
      backupClass(),
    );
    expect(byServerName.restoreSource).toBeUndefined();
    expect(byServerName.sourceStore?.name).toBe('orders-restore-source');
  });

  it('switched off, or its class without a policy, with an archive in its status: its store and ScheduledBackup', () => {
    const world = backupWorld({ backup: { enabled: false } });
    const recorded = {
      ...world.cluster,
      status: {
        backup: { serverName: 'orders-uid-orde', destinationPath: 's3://b/p/team-a/', objectStore: 'orders-backups' },
      },
    } as PostgresCluster;
    const expected = { store: 'ObjectStore/orders-backups', scheduled: 'ScheduledBackup/orders-scheduled' };
    expect(names(backupReadsOf(recorded, backupClass()))).toEqual({ ...expected, credentials: 'Secret/s3-creds' });
    expect(names(backupReadsOf(recorded, makeClass()))).toEqual(expected);
  });

  it('a spec that is not what the schema says (stored before a rule) asks for no impossible name', () => {
    const world = backupWorld();
    const odd = { ...world.cluster, spec: { ...world.cluster.spec, restore: { source: { cluster: 'a/b' } } } };
    const clusterClass = backupClass({ objectStore: { ...POLICY.objectStore, credentials: { secretName: 'A_B' } } });
    const reads = backupReadsOf(odd as PostgresCluster, clusterClass);
    expect(reads.restoreSource).toBeUndefined();
    expect(reads.credentials).toBeUndefined();
  });
});

describe('observeCluster reads the backup objects', () => {
  const world = () => {
    const clock = { now: () => Date.parse('2026-12-07T12:00:00Z') };
    const api = new MemoryApiServer(clock.now);
    return { api, ports: memoryPorts(api, clock) };
  };
  const put = (api: MemoryApiServer, object: object) => api.create(object as StoredObject);

  it('the store and the Secret as key names only; nothing more for a cluster without a policy', async () => {
    const { api, ports } = world();
    const { cluster, clusterClass } = backupWorld();
    put(api, clusterClass as object);
    put(api, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's3-creds', namespace: cluster.metadata.namespace },
      data: { ACCESS_KEY_ID: 'QUtJRA==', ACCESS_SECRET_KEY: 'c2VjcmV0' },
    });
    put(api, {
      apiVersion: 'barmancloud.cnpg.io/v1',
      kind: 'ObjectStore',
      metadata: { name: 'orders-backups', namespace: cluster.metadata.namespace },
      spec: {},
    });
    const observation = await observeCluster(ports, cluster);
    expect(observation.backup?.store?.metadata.name).toBe('orders-backups');
    expect(observation.backup?.scheduled).toBeUndefined();
    expect(observation.backup?.secrets.credentials?.keys).toEqual(['ACCESS_KEY_ID', 'ACCESS_SECRET_KEY']);
    expect(JSON.stringify(observation.backup)).not.toContain('c2VjcmV0');

    const plain = world();
    put(plain.api, makeClass() as object);
    expect((await observeCluster(plain.ports, backupWorld({}, { clusterClass: makeClass() }).cluster)).backup).toBe(
      undefined,
    );
  });

  it('a restore reads its source cluster until its own CNPG Cluster exists', async () => {
    const { api, ports } = world();
    const { cluster, clusterClass } = backupWorld({ restore: { source: { cluster: 'billing' } } });
    put(api, clusterClass as object);
    const source = { ...cluster, metadata: { ...cluster.metadata, name: 'billing', uid: 'uid-billing' } };
    put(api, { ...source, spec: { ...source.spec, restore: undefined } });
    expect((await observeCluster(ports, cluster)).restoreSource?.metadata.name).toBe('billing');
    put(api, {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'orders', namespace: cluster.metadata.namespace },
      spec: {},
    });
    expect((await observeCluster(ports, cluster)).restoreSource).toBeUndefined();
  });
});
