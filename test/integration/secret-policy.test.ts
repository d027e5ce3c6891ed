/**
 * A child Secret refused by a ValidatingAdmissionPolicy, on the real API server (KUBERNETES_VERSION,
 * admissionregistration.k8s.io/v1 policies), with the operator running as its ServiceAccount: the PostgresCluster's conditions and Warning name the
 * policy and its binding (not only `HTTP 422 Invalid`), and repeat nothing the policy said. The policy's message is
 * a messageExpression that prints the Secret's password, as a careless policy could: none of its words may appear
 * (src/operator/kubernetes/errors.ts, `refuserOf`).
 */
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_LABEL } from '../../src/operator/domain/vocabulary.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  createClass,
  createCluster,
  eventsAbout,
  getCluster,
  NS,
  type OperatorHandle,
  runOperator,
  setUpWorld,
  type World,
  waitFor,
} from './support/e2e.ts';

const CLUSTER = 'refused-secret';
const POLICY = 'pgfsm-test-refuse-secrets';
const BINDING = 'pgfsm-test-refuse-secrets-binding';
/** What the policy says: words of its own and the Secret's password. None of it may be repeated. */
const SAID = 'the policy says';

let cp: ControlPlane;
let world: World;
let operator: OperatorHandle | undefined;

const admission = () => world.admin.makeApiClient(AdmissionregistrationV1Api);

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await createClass(world, 'standard');
  // Refuses the Secrets of one PostgresCluster (by pgfsm's label), quoting the password it refuses.
  await admission().createValidatingAdmissionPolicy({
    body: {
      metadata: { name: POLICY },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['secrets'] },
          ],
        },
        validations: [
          {
            expression: "!has(object.data) || !('password' in object.data)",
            message: `${SAID}: no passwords here`,
            messageExpression: `'${SAID}: ' + string(object.data.password) + ' is not welcome'`,
          },
        ],
      },
    },
  });
  await admission().createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name: BINDING },
      spec: {
        policyName: POLICY,
        validationActions: ['Deny'],
        matchResources: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          objectSelector: { matchLabels: { [CLUSTER_LABEL]: CLUSTER } },
        },
      },
    },
  });
  // A policy takes effect once the API server has compiled it: wait until a dry run of such a Secret is refused.
  await waitFor('the policy to refuse a Secret', async () => {
    try {
      await world.core.createNamespacedSecret({
        namespace: NS,
        dryRun: 'All',
        body: { metadata: { name: 'probe', labels: { [CLUSTER_LABEL]: CLUSTER } }, stringData: { password: 'x' } },
      });
      return undefined;
    } catch (error) {
      return String((error as { body?: unknown }).body).includes(POLICY) ? true : undefined;
    }
  });
  operator = await runOperator(world);
});

afterAll(async () => {
  await operator?.stop();
  await admission()
    .deleteValidatingAdmissionPolicyBinding({ name: BINDING })
    .catch(() => undefined);
  await admission()
    .deleteValidatingAdmissionPolicy({ name: POLICY })
    .catch(() => undefined);
  await world?.stop();
  await cp?.stop();
});

describe('a child Secret refused by a ValidatingAdmissionPolicy', () => {
  it('is reported naming the policy and its binding, with nothing the policy said', async () => {
    await createCluster(world, CLUSTER, { class: 'standard', instances: 1, postgresVersion: '17', storage: '1Gi' });
    const named = `ValidatingAdmissionPolicy '${POLICY}' with binding '${BINDING}' denied the request`;
    await waitFor('a condition naming the policy', async () =>
      (await getCluster(world, CLUSTER))?.status?.conditions?.find((c) => c.message.includes(named)),
    );
    const warning = await waitFor('a Warning naming the policy', async () =>
      (await eventsAbout(world, CLUSTER)).find((e) => e.type === 'Warning' && e.note.includes(named)),
    );
    expect(warning.note).toContain(`Secret ${NS}/${CLUSTER}-superuser`);
    const cluster = await getCluster(world, CLUSTER);
    const said = [JSON.stringify(cluster?.status), ...(await eventsAbout(world, CLUSTER)).map((e) => e.note)];
    expect(said.filter((text) => text.includes(SAID) || text.includes('is not welcome'))).toEqual([]);
  });
});
