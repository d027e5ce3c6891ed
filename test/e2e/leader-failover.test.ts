/**
 * pgfsm's own failover, on the node: two replicas of pgfsm's image, one leading by its Lease. The leading Pod
 * is force-deleted while a cluster is being provisioned; the standby takes the Lease over and finishes the work,
 * and no one-time event is said twice.
 */
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGFSM_NAMESPACE } from '../../src/tools/node/install.ts';
import {
  attach,
  createClass,
  createCluster,
  createNamespace,
  type E2e,
  eventsAbout,
  GROUP,
  untilReadyRecorded,
  waitFor,
} from './support/node.ts';

const NS = 'crm';
const NAME = 'contacts';
const CLASS = 'e2e-crm';
const ONE_TIME = ['SuperuserSecretCreated', 'CNPGClusterCreated', 'EndpointsPublished', 'Ready'];

let e2e: E2e;

describe("pgfsm's leader is killed mid-provisioning", () => {
  beforeAll(async () => {
    e2e = await attach();
    await createNamespace(e2e, NS);
    await createClass(e2e, CLASS);
  });
  afterAll(async () => {
    await e2e?.close();
  });

  it('serves its probes and metrics from each Pod', async () => {
    const pods = await e2e.core.listNamespacedPod({
      namespace: PGFSM_NAMESPACE,
      labelSelector: 'app.kubernetes.io/name=pgfsm',
    });
    expect(pods.items.length).toBe(2);
    for (const pod of pods.items) {
      const ip = pod.status?.podIP ?? '';
      const port = await e2e.node.gateway.open(ip, 8080);
      const get = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        return { status: res.status, body: await res.text() };
      };
      expect((await get('/healthz')).status).toBe(200);
      expect((await get('/readyz')).status).toBe(200);
      const metrics = await get('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(/^# HELP pgfsm_cluster_state /m);
      expect(metrics.body).toMatch(/^pgfsm_leader [01]$/m);
      expect(metrics.body).toMatch(/^# HELP controller_runtime_reconcile_total /m);
    }
  });

  it('the standby takes over and converges with no duplicate event', async () => {
    const leases = e2e.node.kubeConfig.makeApiClient(CoordinationV1Api);
    const holder = async () =>
      (await leases.readNamespacedLease({ name: 'pgfsm-leader', namespace: PGFSM_NAMESPACE })).spec?.holderIdentity;
    const leader = await waitFor('a pgfsm leader', async () => (await holder()) || undefined);
    const pods = await e2e.core.listNamespacedPod({
      namespace: PGFSM_NAMESPACE,
      labelSelector: 'app.kubernetes.io/name=pgfsm',
    });
    const leaderPod = pods.items.find((p) => leader.startsWith(p.metadata?.name ?? '\u0000'));
    expect(leaderPod, `a Pod for leader identity ${leader}`).toBeDefined();

    await createCluster(e2e, NS, NAME, { class: CLASS, clusterDeletionPolicy: 'Delete' });
    // Mid-provisioning: the CNPG Cluster has been created, PostgreSQL is not up yet.
    await waitFor('the CNPG Cluster created', async () => {
      const events = await eventsAbout(e2e, NS, NAME);
      return events.some((e) => e.reason === 'CNPGClusterCreated') || undefined;
    });
    await e2e.core.deleteNamespacedPod({
      name: leaderPod?.metadata?.name ?? '',
      namespace: PGFSM_NAMESPACE,
      gracePeriodSeconds: 0,
    });
    const next = await waitFor(
      'another replica leading',
      async () => {
        const now = await holder();
        return now && now !== leader ? now : undefined;
      },
      120_000,
    );
    expect(next).not.toBe(leader);

    await untilReadyRecorded(e2e, NS, NAME);
    // A pass's Events are sent after its status write (driver/event-delivery.ts): the status can say Ready a
    // moment before the last of them exists. Each must come; then none may have come twice.
    const events = await waitFor(
      'every one-time event',
      async () => {
        const now = await eventsAbout(e2e, NS, NAME);
        return ONE_TIME.every((reason) => now.some((e) => e.reason === reason)) ? now : undefined;
      },
      30_000,
    );
    for (const reason of ONE_TIME) {
      const said = events.filter((e) => e.reason === reason);
      expect(
        said.map((e) => e.count),
        reason,
      ).toEqual([1]);
    }
    await e2e.custom.deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name: NAME });
  });
});
