/**
 * What pgfsm does not judge stays CloudNativePG's to judge, and its refusal is reported plainly: here the real
 * validating webhook of CNPG (CNPG_VERSION) refuses the CNPG Cluster pgfsm applies, and the PostgresCluster ends in one
 * Stalled condition (`ClusterSpecRejected`) carrying CNPG's own words, remembered in `status.rejectedWrites`.
 *
 * pgfsm's CRD and merge check refuse everything of CNPG's that pgfsm writes (docs/cnpg-admission.md), so the
 * refused value is one another writer left in a field pgfsm never writes: a reserved environment variable, set
 * while CNPG's validating webhook was away (as on an object written before CNPG was installed or upgraded). CNPG
 * judges the whole object on every update, so pgfsm's next update is refused for it.
 */
import {
  AdmissionregistrationV1Api,
  ApiException,
  PatchStrategy,
  setHeaderOptions,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CNPG_WEBHOOK_CONFIGURATIONS } from '../../src/tools/control-plane/cnpg.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  conditions,
  createClass,
  createCluster,
  getCluster,
  NS,
  type OperatorHandle,
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

const cnpgCluster = { group: 'postgresql.cnpg.io', version: 'v1', namespace: NS, plural: 'clusters' };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** CNPG refuses it (`validateEnv`): PG* variables are reserved for its instance manager. */
const RESERVED_ENV = [{ name: 'PGDATA', value: '/elsewhere' }];
const CNPG_REFUSAL = 'the usage of this environment variable is reserved for the operator';

const setEnv = (name: string, env: unknown) =>
  world.custom.patchNamespacedCustomObject({ ...cnpgCluster, name, body: { spec: { env } } }, mergePatch);

/** The API server's message when it refuses `write`, or undefined when it accepts it. */
async function refusalOf(write: Promise<unknown>): Promise<string | undefined> {
  try {
    await write;
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    return String(error.body);
  }
}

/**
 * Runs `write` while CNPG's validating webhook configuration is gone, then puts it back and waits until the API
 * server calls it again (both take effect asynchronously, so `write` is retried until accepted).
 */
async function withoutCnpgValidation(name: string, write: () => Promise<unknown>): Promise<void> {
  const api = world.admin.makeApiClient(AdmissionregistrationV1Api);
  const { metadata, webhooks } = await api.readValidatingWebhookConfiguration({
    name: CNPG_WEBHOOK_CONFIGURATIONS.validating,
  });
  await api.deleteValidatingWebhookConfiguration({ name: CNPG_WEBHOOK_CONFIGURATIONS.validating });
  try {
    await waitFor('the write while CNPG does not validate', async () =>
      (await refusalOf(write())) ? undefined : true,
    );
  } finally {
    const restored: V1ValidatingWebhookConfiguration = {
      metadata: { name: metadata?.name, labels: metadata?.labels, annotations: metadata?.annotations },
      webhooks,
    };
    await api.createValidatingWebhookConfiguration({ body: restored });
  }
  // Back once CNPG judges the Cluster again: the same value set again is refused.
  await waitFor('CNPG validating again', async () => (await refusalOf(setEnv(name, RESERVED_ENV))) ?? undefined);
}

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe("CloudNativePG's webhook refuses what pgfsm applies", () => {
  it('the cluster stops in one Stalled condition with CNPG’s words, and a later change is tried again', async () => {
    await createCluster(world, 'ledger', { class: 'standard' });
    await untilState(world, 'ledger', 'Ready', 60_000);
    await withoutCnpgValidation('ledger', () => setEnv('ledger', RESERVED_ENV));

    await patchSpec(world, 'ledger', { postgresqlConfig: { max_connections: '150' } });
    await untilState(world, 'ledger', 'Failed.Cluster', 60_000);
    expect(await conditions(world, 'ledger')).toMatchObject({
      Ready: 'False/ClusterSpecRejected',
      Stalled: 'True/ClusterSpecRejected',
      ClusterReady: 'False/ClusterSpecRejected',
    });
    const status = (await getCluster(world, 'ledger'))?.status;
    const stalled = status?.conditions?.find((c) => c.type === 'Stalled');
    expect(stalled?.message).toContain('admission webhook "vcluster.cnpg.io" denied the request');
    expect(stalled?.message).toContain(CNPG_REFUSAL);
    expect(status?.rejectedWrites).toEqual([
      {
        component: 'cluster',
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
        message: expect.stringContaining(CNPG_REFUSAL),
      },
    ]);

    // The other writer takes its value back; pgfsm's next change of the spec goes through.
    await setEnv('ledger', null);
    await patchSpec(world, 'ledger', { postgresqlConfig: { max_connections: '160' } });
    await untilState(world, 'ledger', 'Ready', 60_000);
    const applied = (await world.custom.getNamespacedCustomObject({ ...cnpgCluster, name: 'ledger' })) as {
      spec: { postgresql?: { parameters?: Record<string, string> } };
    };
    expect(applied.spec.postgresql?.parameters?.max_connections).toBe('160');
    expect((await getCluster(world, 'ledger'))?.status?.rejectedWrites).toBeUndefined();
  });

  /**
   * A `${podselector:NAME}` reference in a pg_hba line (docs/cnpg-admission.md, C67): CloudNativePG 1.29 and later
   * refuse the Cluster, since pgfsm writes no selectors, and 1.28 writes the line into pg_hba.conf as it is. pgfsm's
   * CRD refuses the PostgresCluster first, naming its own field; test/integration/crds.test.ts shows what each CNPG
   * does with the line.
   */
  it("a pg_hba line with a podselector reference: refused by pgfsm's CRD, naming spec.pgHBA[0]", async () => {
    const refusal = await createCluster(world, 'hba-ref', {
      class: 'standard',
      pgHBA: ['host all all \u0024{podselector:app} scram-sha-256'],
    }).then(
      () => 'accepted',
      (error: unknown) => String((error as { body?: unknown }).body ?? error),
    );
    expect(refusal).toContain('spec.pgHBA[0]');
    expect(refusal).toContain('podSelectorRefs');
  });
});
