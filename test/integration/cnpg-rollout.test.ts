/**
 * A change CloudNativePG's real webhook accepts only in parts, end to end: a new PostgreSQL version (the image)
 * and new parameters under `primaryUpdateMethod: switchover`. CNPG (every supported version, 1.28 to 1.30)
 * refuses the two in one update (`validateConfigurationChange`); pgfsm rolls the parameters out first and the image once CNPG is healthy
 * again, and the real webhook accepts both steps. The simulator plays CNPG's controller in this namespace.
 */
import { ApiException, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  conditions,
  createClass,
  createCluster,
  eventsAbout,
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

let cp: ControlPlane | undefined;
let world: World | undefined;
let operator: OperatorHandle | undefined;

const w = () => {
  if (!world) throw new Error('the e2e world is not set up (see the beforeAll error)');
  return world;
};

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'switchover', { postgresqlConfig: { max_connections: '200' } });
  await patchClass(world, 'switchover', { spec: { cnpg: { primaryUpdateMethod: 'switchover' } } });
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

const cnpgClusters = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' };
const cnpgCluster = async (name: string) =>
  (await w().custom.getNamespacedCustomObject({ ...cnpgClusters, namespace: NS, name })) as CnpgCluster;

describe("CloudNativePG's webhook and an update of the image and the parameters under switchover", () => {
  it('refuses the two in one update, written directly', async () => {
    await createCluster(w(), 'direct', { class: 'switchover' });
    await untilState(w(), 'direct', 'Ready', 60_000);
    const live = await cnpgCluster('direct');
    const refused = await w()
      .custom.patchNamespacedCustomObject(
        {
          ...cnpgClusters,
          namespace: NS,
          name: 'direct',
          body: {
            spec: {
              imageName: 'ghcr.io/cloudnative-pg/postgresql:18',
              postgresql: { parameters: { max_connections: '300' } },
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(ApiException);
    expect(String((refused as ApiException<string>).body)).toContain("Can't change image name and configuration");
    expect(live.spec.imageName).toMatch(/:17$/);
  });

  it('pgfsm rolls it out in two steps the webhook accepts: parameters, then the image', async () => {
    await createCluster(w(), 'rollout', { class: 'switchover' });
    await untilState(w(), 'rollout', 'Ready', 60_000);
    await patchSpec(w(), 'rollout', { postgresVersion: '18', postgresqlConfig: { max_connections: '300' } });
    // The first step: the new parameters with the old image.
    await waitFor('the parameters first', async () => {
      const live = await cnpgCluster('rollout');
      return live.spec.postgresql?.parameters?.max_connections === '300' && live.spec.imageName?.endsWith(':17')
        ? true
        : undefined;
    });
    await waitFor('the image second', async () =>
      (await cnpgCluster('rollout')).spec.imageName?.endsWith(':18') ? true : undefined,
    );
    // Ready again once CNPG has applied the image, and not before: right after pgfsm applies it, CNPG's status is
    // still the healthy one of the parameters step, naming the old image, and pgfsm waits for CNPG to name the
    // new one (domain/components/cluster.ts). So the first Ready from here on is the end of the rollout.
    await waitFor(
      'Ready with the CNPG Cluster healthy',
      async () => {
        const healthy = (await conditions(w(), 'rollout')).ClusterReady === 'True/CNPGClusterHealthy';
        return healthy && (await getCluster(w(), 'rollout'))?.status?.state === 'Ready' ? true : undefined;
      },
      60_000,
    );
    const live = await cnpgCluster('rollout');
    expect(live.status?.image).toBe(live.spec.imageName);
    expect(live.status?.image).toMatch(/:18$/);
    const events = await eventsAbout(w(), 'rollout');
    const reasons = events.map((e) => e.reason);
    expect(reasons).toContain('CNPGClusterUpdateStaged');
    expect(reasons).toContain('CNPGClusterUpdated');
    expect(reasons).not.toContain('ClusterSpecRejected');
    expect(reasons).not.toContain('ClusterApplyFailed');
    expect((await conditions(w(), 'rollout')).ClusterReady).toBe('True/CNPGClusterHealthy');
  });
});

/**
 * The contract of docs/operations.md ("What pgfsm owns on the CNPG Cluster, and what is yours"): pgfsm applies as
 * field manager `pgfsm` only the fields it sets, so a field it does not set, written by hand on the CNPG Cluster,
 * stays through every later write of pgfsm's, a rollout of scheduling fields and of a new image included.
 */
describe("the user's fields on the CNPG Cluster", () => {
  it('keeps a spec.backup patched on by hand through pgfsm’s writes and rollouts', async () => {
    await createCluster(w(), 'backup', { class: 'switchover' });
    await untilState(w(), 'backup', 'Ready', 60_000);
    const backup = {
      barmanObjectStore: {
        destinationPath: 's3://backups/team-a/backup',
        s3Credentials: { inheritFromIAMRole: true },
      },
      retentionPolicy: '30d',
    };
    await w().custom.patchNamespacedCustomObject(
      { ...cnpgClusters, namespace: NS, name: 'backup', body: { spec: { backup } }, fieldManager: 'kubectl-patch' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // CNPG's defaulting webhook adds to it (its target); what was patched on stays as it was.
    const keepsBackup = async () => expect((await cnpgCluster('backup')).spec.backup).toMatchObject(backup);
    await keepsBackup();

    // A rollout of the day-one fields and a parameter: pgfsm applies, CNPG's webhook accepts, the backup stays.
    const tolerations = [{ key: 'dedicated', operator: 'Equal' as const, value: 'db', effect: 'NoSchedule' as const }];
    await patchSpec(w(), 'backup', {
      affinity: { tolerations, podAntiAffinityType: 'required' },
      topologySpreadConstraints: [
        { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway' },
      ],
      walStorage: { size: '1Gi' },
      monitoring: { enablePodMonitor: false },
      postgresqlConfig: { max_connections: '250' },
    });
    await waitFor('the day-one fields on the CNPG Cluster', async () => {
      const live = await cnpgCluster('backup');
      return live.spec.affinity?.tolerations?.length === 1 &&
        live.spec.walStorage?.size === '1Gi' &&
        live.spec.postgresql?.parameters?.max_connections === '250'
        ? live
        : undefined;
    });
    await keepsBackup();
    await untilState(w(), 'backup', 'Ready', 60_000);

    // A new image (pinned), rolled out by CNPG: pgfsm waits for it, and the backup is still there.
    const image = 'ghcr.io/cloudnative-pg/postgresql:17.5-standard-bookworm';
    await patchSpec(w(), 'backup', { imageName: image });
    await waitFor(
      'the pinned image taken up',
      async () => ((await cnpgCluster('backup')).status?.image === image ? true : undefined),
      60_000,
    );
    await untilState(w(), 'backup', 'Ready', 60_000);
    await keepsBackup();

    // pgfsm never took it over: its field manager owns the day-one fields, not spec.backup.
    const live = await cnpgCluster('backup');
    const managers = (
      live.metadata as { managedFields?: Array<{ manager?: string; fieldsV1?: { 'f:spec'?: object } }> }
    ).managedFields;
    const owned = (manager: string) =>
      Object.keys(managers?.find((entry) => entry.manager === manager)?.fieldsV1?.['f:spec'] ?? {});
    expect(owned('pgfsm')).toEqual(expect.arrayContaining(['f:affinity', 'f:walStorage', 'f:imageName']));
    expect(owned('pgfsm')).not.toContain('f:backup');
    expect(owned('kubectl-patch')).toContain('f:backup');
    // Dropping a day-one field removes it from the CNPG Cluster (pgfsm owned it), and still not the backup.
    await patchSpec(w(), 'backup', { topologySpreadConstraints: null } as unknown as Parameters<typeof patchSpec>[2]);
    await waitFor('the topology spread removed', async () =>
      (await cnpgCluster('backup')).spec.topologySpreadConstraints === undefined ? true : undefined,
    );
    await keepsBackup();
  });
});
