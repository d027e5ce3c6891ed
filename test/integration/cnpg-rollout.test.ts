/**
 * A change CloudNativePG's real webhook accepts only in parts, end to end: a new PostgreSQL version (the image)
 * and new parameters under `primaryUpdateMethod: switchover`. CNPG v1.28 refuses the two in one update
 * (`validateConfigurationChange`); pgfsm rolls the parameters out first and the image once CNPG is healthy
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
/** How long a Ready must last to be the end of a rollout rather than the moment before CNPG starts on a step. */
const STAYS_READY_MS = 2_000;
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
    // Ready again once CNPG has applied the image. Right after the image is applied, CNPG's status still says
    // healthy from the first step until it starts on the image (and the status follows it out of Ready): so
    // the end of the rollout is a Ready that stays, the same one (its stateSince) for longer than CNPG takes
    // to react (the simulator here reacts within its watch's lag and applies for 600 ms).
    let readySince: string | undefined;
    let firstSeenAt = 0;
    await waitFor(
      'Ready with the CNPG Cluster healthy on the new image, for good',
      async () => {
        const healthy = (await conditions(w(), 'rollout')).ClusterReady === 'True/CNPGClusterHealthy';
        const status = (await getCluster(w(), 'rollout'))?.status;
        const since = healthy && status?.state === 'Ready' ? status.stateSince : undefined;
        if (since === undefined || since !== readySince) {
          readySince = since;
          firstSeenAt = Date.now();
          return undefined;
        }
        return Date.now() - firstSeenAt >= STAYS_READY_MS ? true : undefined;
      },
      60_000,
    );
    const events = await eventsAbout(w(), 'rollout');
    const reasons = events.map((e) => e.reason);
    expect(reasons).toContain('ClusterUpdateStaged');
    expect(reasons).toContain('ClusterUpdateStarted');
    expect(reasons).not.toContain('ClusterSpecRejected');
    expect(reasons).not.toContain('ClusterApplyFailed');
    expect((await conditions(w(), 'rollout')).ClusterReady).toBe('True/CNPGClusterHealthy');
  });
});
