/**
 * Backups against a real API server (issue 36): the Barman Cloud Plugin's own ObjectStore CRD (v0.15.0, read
 * from its Go module), CloudNativePG's real CRDs and webhooks for the Cluster, ScheduledBackup and Backup, and
 * pgfsm's RBAC. CloudNativePG's controller is simulated here and the plugin does not run, so no WAL is archived:
 * what this proves is what pgfsm writes, that the servers accept it, and what it says. The real node proves the
 * archive and the restore (test/e2e/backups.test.ts).
 *
 * The first test runs before the plugin's CRD is installed: what a team sees when nobody installed the plugin.
 */
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_NOW_ANNOTATION } from '../../src/operator/api/backup-rules.ts';
import { onDemandBackupName } from '../../src/operator/domain/backup/names.ts';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { installCrds, manifestFiles } from '../../src/tools/install/manifests.ts';
import { barmanCloudModuleDir } from '../../src/tools/node/barman-cloud.ts';
import {
  conditions,
  countOf,
  createClass,
  createCluster,
  eventsAbout,
  GROUP,
  getCluster,
  NS,
  type OperatorHandle,
  patchClass,
  patchSpec,
  runOperator,
  setUpWorld,
  untilState,
  type World,
  waitFor,
} from './support/e2e.ts';

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

const CNPG = { group: 'postgresql.cnpg.io', version: 'v1' };
const BARMAN = { group: 'barmancloud.cnpg.io', version: 'v1' };

interface Owned {
  metadata: { name: string; ownerReferences?: Array<{ kind: string; name: string; controller?: boolean }> };
  spec: Record<string, unknown>;
}

const read = async (api: { group: string; version: string }, plural: string, name: string) =>
  (await world.custom.getNamespacedCustomObject({ ...api, namespace: NS, plural, name })) as Owned;

const readOrUndefined = (api: { group: string; version: string }, plural: string, name: string) =>
  read(api, plural, name).catch((error: { code?: number }) => {
    if (error.code === 404) return undefined;
    throw error;
  });

const policy = (credentials: string) => ({
  spec: {
    backup: {
      objectStore: {
        destinationPath: 's3://pg-backups/prod',
        endpointURL: 'http://s3.storage:7070',
        credentials: { secretName: credentials },
      },
      schedule: '30 2 * * *',
      retention: '7d',
      walCompression: 'gzip',
    },
  },
});

const ownedBy = (object: Owned | undefined, cluster: string) =>
  object?.metadata.ownerReferences?.some((o) => o.kind === 'PostgresCluster' && o.name === cluster && o.controller);

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await world.core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 's3-creds' }, stringData: { ACCESS_KEY_ID: 'id', ACCESS_SECRET_KEY: 'key' } },
  });
  await createClass(world, 'backed');
  await patchClass(world, 'backed', policy('s3-creds'));
  operator = await runOperator(world);
}, 600_000);

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('backups on a real API server, with the plugin’s CRD and CloudNativePG’s webhooks', () => {
  it('without the plugin installed, a backed-up cluster is not created and says what is missing', async () => {
    await createCluster(world, 'early', { class: 'backed' });
    const said = await waitFor('early to say why it waits', async () => {
      const c = (await getCluster(world, 'early'))?.status?.conditions?.find((x) => x.type === 'ClusterReady');
      return c?.status === 'False' && /ObjectStore|barmancloud/.test(c.message ?? '') ? c : undefined;
    });
    expect(said.message).toMatch(/Barman Cloud Plugin|barmancloud\.cnpg\.io/);
    // Nothing half-made: no CNPG Cluster that would archive nowhere.
    expect(await readOrUndefined(CNPG, 'clusters', 'early')).toBeUndefined();

    // Installing the plugin's CRD is enough: the cluster goes on by itself.
    await installCrds(cp.kubeConfig, manifestFiles(join(await barmanCloudModuleDir(), 'config/crd/bases')));
    await untilState(world, 'early', 'Ready', 120_000);
  });

  it('writes the ObjectStore, the plugin entry and the ScheduledBackup, owned, and the servers accept them', async () => {
    await createCluster(world, 'orders', { class: 'backed' });
    await untilState(world, 'orders', 'Ready', 60_000);
    const cluster = await getCluster(world, 'orders');
    const serverName = cluster?.status?.backup?.serverName;
    expect(serverName).toBe(`orders-${cluster?.metadata.uid?.slice(0, 8)}`);

    const store = await read(BARMAN, 'objectstores', 'orders-backups');
    expect(ownedBy(store, 'orders')).toBe(true);
    const configuration = store.spec.configuration as Record<string, unknown>;
    expect(configuration.destinationPath).toBe(`s3://pg-backups/prod/${NS}/`);
    expect(configuration.s3Credentials).toEqual({
      accessKeyId: { name: 's3-creds', key: 'ACCESS_KEY_ID' },
      secretAccessKey: { name: 's3-creds', key: 'ACCESS_SECRET_KEY' },
    });

    const cnpg = (await read(CNPG, 'clusters', 'orders')) as unknown as CnpgCluster;
    // CloudNativePG's webhook adds `enabled: true`.
    expect(cnpg.spec.plugins).toEqual([
      {
        name: 'barman-cloud.cloudnative-pg.io',
        enabled: true,
        isWALArchiver: true,
        parameters: { barmanObjectName: 'orders-backups', serverName },
      },
    ]);

    const scheduled = await waitFor('the ScheduledBackup', () =>
      readOrUndefined(CNPG, 'scheduledbackups', 'orders-scheduled'),
    );
    expect(ownedBy(scheduled, 'orders')).toBe(true);
    // The class's 5-field cron, with the seconds field CloudNativePG wants first.
    expect(scheduled.spec).toMatchObject({ schedule: '0 30 2 * * *', method: 'plugin', cluster: { name: 'orders' } });

    // No archive attempt has been reported (the plugin does not run here): unknown, not working, not failing.
    expect((await conditions(world, 'orders')).BackupsReady).toBe('Unknown/ContinuousArchivingUnknown');
    expect(countOf(await eventsAbout(world, 'orders'), 'BackupConfigured')).toBeGreaterThan(0);
  });

  it('takes one backup per pgfsm.io/backup-now token, and records the token', async () => {
    const annotate = (token: string) =>
      world.custom.patchNamespacedCustomObject(
        {
          ...GROUP,
          namespace: NS,
          plural: 'postgresclusters',
          name: 'orders',
          body: { metadata: { annotations: { [BACKUP_NOW_ANNOTATION]: token } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await annotate('first');
    const name = onDemandBackupName('orders', 'first');
    await waitFor('the token recorded', async () =>
      (await getCluster(world, 'orders'))?.status?.backup?.lastRequest === 'first' ? true : undefined,
    );
    const backup = await read(CNPG, 'backups', name);
    expect(backup.spec).toMatchObject({ method: 'plugin', cluster: { name: 'orders' } });
    expect((await getCluster(world, 'orders'))?.status?.backup?.lastRequestBackup).toBe(name);
    expect(countOf(await eventsAbout(world, 'orders'), 'BackupRequested')).toBe(1);

    await annotate('second');
    await waitFor('the second token recorded', async () =>
      (await getCluster(world, 'orders'))?.status?.backup?.lastRequest === 'second' ? true : undefined,
    );
    const backups = (await world.custom.listNamespacedCustomObject({ ...CNPG, namespace: NS, plural: 'backups' })) as {
      items: Owned[];
    };
    expect(backups.items.map((b) => b.metadata.name).sort()).toEqual(
      [name, onDemandBackupName('orders', 'second')].sort(),
    );
    expect(countOf(await eventsAbout(world, 'orders'), 'BackupRequested')).toBe(2);
  });

  it('switching backups off takes the plugin entry off, then deletes the ScheduledBackup and the ObjectStore', async () => {
    expect(await readOrUndefined(CNPG, 'scheduledbackups', 'early-scheduled')).toBeDefined();
    await patchSpec(world, 'early', { backup: { enabled: false } });
    await waitFor('early’s ScheduledBackup and ObjectStore gone', async () =>
      (await readOrUndefined(CNPG, 'scheduledbackups', 'early-scheduled')) ||
      (await readOrUndefined(BARMAN, 'objectstores', 'early-backups'))
        ? undefined
        : true,
    );
    const cnpg = (await read(CNPG, 'clusters', 'early')) as unknown as CnpgCluster;
    expect(cnpg.spec.plugins ?? []).toEqual([]);
    await untilState(world, 'early', 'Ready', 60_000);
    const cluster = await waitFor('early’s status without a backup record', async () => {
      const found = await getCluster(world, 'early');
      return found?.status?.backup === undefined ? found : undefined;
    });
    expect(cluster.status?.conditions?.map((c) => c.type)).not.toContain('BackupsReady');
    const said = (await eventsAbout(world, 'early')).filter((e) => e.reason === 'BackupConfigured');
    expect(said.map((e) => e.note)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^ScheduledBackup early-scheduled deleted: backups are switched off/),
      ]),
    );
  });

  it('a namespace without the store’s Secret is told which one, and its cluster still serves', async () => {
    await createClass(world, 'elsewhere');
    await patchClass(world, 'elsewhere', policy('not-here'));
    await createCluster(world, 'lonely', { class: 'elsewhere' });
    const said = await waitFor('BackupsReady on lonely', async () => {
      const c = (await getCluster(world, 'lonely'))?.status?.conditions?.find((x) => x.type === 'BackupsReady');
      return c?.status === 'False' ? c : undefined;
    });
    expect(said.reason).toBe('BackupStoreMisconfigured');
    expect(said.message).toContain('not-here');
  });

  it('a restore from a cluster with no completed backup waits, and creates nothing meanwhile', async () => {
    await createCluster(world, 'orders-copy', { class: 'backed', restore: { source: { cluster: 'orders' } } });
    await untilState(world, 'orders-copy', 'Provisioning.Restore');
    await waitFor('orders-copy to say why', async () => {
      const c = (await getCluster(world, 'orders-copy'))?.status?.conditions?.find((x) => x.type === 'ClusterReady');
      return c?.reason === 'CNPGClusterPending' ? c : undefined;
    });
    expect(await readOrUndefined(CNPG, 'clusters', 'orders-copy')).toBeUndefined();
  });
});
