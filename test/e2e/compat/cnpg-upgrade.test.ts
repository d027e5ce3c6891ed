/**
 * Upgrading CloudNativePG under a running pgfsm, as a platform team does it (issue 38): a PostgresCluster (two
 * instances behind PgBouncer) and a PostgresDatabase are Ready on CloudNativePG 1.28.2 with rows written, then
 * CloudNativePG's manifests and operator image are swapped for the suite's release (1.30.1) with the same
 * `kubectl apply` its users run. CloudNativePG then rolls every instance (its instance manager changed) and every
 * PgBouncer Deployment (its default PgBouncer image changed).
 *
 * What must hold: pgfsm reports nothing as not Ready outside CloudNativePG's own rollout (from the swap until the
 * last instance and pooler Pod is Ready again, plus the few seconds of a watch), both come back Ready on the new
 * release, no creation event is said again, and the rows are intact. Every version of the objects concerned is
 * taken from the API server's watches (support/history.ts), so "never" covers what happened between two looks.
 *
 * The node runs the suite's CloudNativePG; this file first puts 1.28.2 in its place (built the first time, in a
 * child process: the version is a constant of a process, see src/tools/node/cnpg-release.ts) and leaves the
 * suite's release installed when it ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CNPG_VERSION, type CnpgVersion } from '../../../src/tools/control-plane/build.ts';
import { type CnpgRelease, cnpgRelease } from '../../../src/tools/node/cnpg-release.ts';
import { CNPG_DEPLOYMENT, CNPG_NAMESPACE, deploymentRolledOut, installCnpg } from '../../../src/tools/node/install.ts';
import { importIntoNode } from '../../../src/tools/node/node.ts';
import { type History, type KubeObject, recordHistory, type Version } from '../support/history.ts';
import {
  attach,
  connectByUri,
  createClass,
  createCluster,
  createDatabase,
  createNamespace,
  type E2e,
  GROUP,
  getCluster,
  getCnpgCluster,
  getDatabase,
  query,
  secretValue,
  serverVersion,
  untilDatabaseState,
  untilReadyRecorded,
  waitFor,
} from '../support/node.ts';
import { recordLine, recordResult } from '../support/results.ts';

const FROM: CnpgVersion = 'v1.28.2';
const NS = 'upgrade';
const CLUSTER = 'stock';
const DATABASE = 'stock-app';
const CLASS = 'e2e-upgrade';
/** How long after CloudNativePG's rollout pgfsm may still report it: a watch event and a pass. */
const SLACK_MS = 10_000;
/** Events pgfsm says once per object: said again after the swap would be a duplicate. */
const CREATION = [
  'SuperuserSecretCreated',
  'CNPGClusterCreated',
  'PoolersCreated',
  'EndpointsPublished',
  'SecretsCreated',
  'CNPGDatabaseCreated',
];

const log = (line: string) => process.stderr.write(`[cnpg upgrade] ${line}\n`);

interface Pod extends KubeObject {
  spec?: { initContainers?: { name: string; image?: string }[]; containers?: { name: string; image?: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}
interface Deployment extends KubeObject {
  metadata?: KubeObject['metadata'] & { generation?: number };
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
}
interface CnpgCluster extends KubeObject {
  spec?: { instances?: number };
  status?: { phase?: string; readyInstances?: number; cloudNativePGOperatorHash?: string };
}
interface Stated extends KubeObject {
  status?: { state?: string };
}

let e2e: E2e;
let from: CnpgRelease;
let to: CnpgRelease;

async function pgfsmEvents() {
  const list = await e2e.events.listNamespacedEvent({ namespace: NS });
  return list.items
    .filter((e) => e.regarding?.kind === 'PostgresCluster' || e.regarding?.kind === 'PostgresDatabase')
    .map((e) => ({
      object: `${e.regarding?.kind}/${e.regarding?.name}`,
      reason: e.reason ?? '',
      note: e.note ?? '',
      count: e.series?.count ?? 1,
    }));
}

const podReady = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const isInstance = (pod: Pod) => pod.metadata?.labels?.['cnpg.io/instanceName'] !== undefined;
const isPooler = (pod: Pod) => pod.metadata?.labels?.['cnpg.io/poolerName'] !== undefined;

/**
 * The intervals during which `bad` held, replaying every version of `resources` in arrival order from `since`
 * (the latest version of each object before `since` is its state then).
 */
function intervals(
  history: History,
  resources: string[],
  bad: (latest: Map<string, Version>) => boolean,
  since: number,
  until: number,
): Array<[number, number]> {
  const all = resources
    .flatMap((resource) => history.versions(resource).map((v) => ({ ...v, resource })))
    .sort((a, b) => a.at - b.at);
  const latest = new Map<string, Version>();
  const found: Array<[number, number]> = [];
  let start: number | undefined;
  const judge = (at: number) => {
    const now = bad(latest);
    if (now && start === undefined) start = Math.max(at, since);
    if (!now && start !== undefined) {
      found.push([start, at]);
      start = undefined;
    }
  };
  for (const v of all) {
    const key = `${v.resource}/${v.object.metadata?.name}`;
    if (v.type === 'DELETED') latest.delete(key);
    else latest.set(key, v);
    if (v.at >= since) judge(v.at);
  }
  if (start !== undefined) found.push([start, until]);
  return found.filter(([, end]) => end >= since);
}

const ofKind = <T extends KubeObject>(latest: Map<string, Version>, resource: string) =>
  [...latest].filter(([key]) => key.startsWith(`${resource}/`)).map(([, v]) => v.object as T);

describe(`upgrading CloudNativePG ${FROM} → ${CNPG_VERSION} under a running pgfsm`, () => {
  beforeAll(async () => {
    e2e = await attach();
    // The release to start from is built the first time (its manager binary, its two images), then cached.
    from = await cnpgRelease(FROM, log);
    to = await cnpgRelease(CNPG_VERSION, log);
    await importIntoNode([from.operatorImage, from.pgbouncerImage, to.pgbouncerImage], { log });
    const began = Date.now();
    await installCnpg(e2e.node, { moduleDir: from.moduleDir, operatorImage: from.operatorImage.ref, log });
    log(`CloudNativePG ${FROM} in place of ${CNPG_VERSION} (${((Date.now() - began) / 1000).toFixed(1)}s)`);
    await createNamespace(e2e, NS);
    await createClass(e2e, CLASS);
    await createCluster(e2e, NS, CLUSTER, {
      class: CLASS,
      instances: 2,
      connectionPoolerEnabled: true,
      clusterDeletionPolicy: 'Delete',
    });
    await createDatabase(e2e, NS, DATABASE, {
      cluster: CLUSTER,
      name: 'stock',
      owner: 'keeper',
      users: [{ name: 'auditor', access: 'readOnly' }],
    });
  });

  afterAll(async () => {
    // Whatever happened, the suite's release is what the node runs afterwards.
    const operator = await e2e?.apps
      .readNamespacedDeployment({ name: CNPG_DEPLOYMENT, namespace: CNPG_NAMESPACE })
      .catch(() => undefined);
    if (to && operator?.spec?.template.spec?.containers[0]?.image !== to.operatorImage.ref) {
      await installCnpg(e2e.node, { moduleDir: to.moduleDir, operatorImage: to.operatorImage.ref, log });
    }
    await e2e?.custom
      .deleteNamespacedCustomObject({ ...GROUP, namespace: NS, plural: 'postgresclusters', name: CLUSTER })
      .catch(() => undefined);
    await e2e?.close();
  });

  it('keeps the cluster and its database Ready but for CloudNativePG’s own rollout, says nothing twice, keeps the rows', async () => {
    await untilReadyRecorded(e2e, NS, CLUSTER, `${NS}/${CLUSTER} (CNPG ${FROM} → ${CNPG_VERSION})`);
    await untilDatabaseState(e2e, NS, DATABASE, 'Ready', 480_000);
    const owner = await connectByUri(e2e, await secretValue(e2e, NS, `${DATABASE}-keeper`, 'uri'));
    await query(owner, 'CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)');
    await query(owner, "INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, 100) AS i");
    await owner.end();
    const cnpgBefore = await getCnpgCluster<CnpgCluster>(e2e, NS, CLUSTER);
    const pods = await e2e.core.listNamespacedPod({ namespace: NS, labelSelector: `cnpg.io/cluster=${CLUSTER}` });
    for (const pod of pods.items) {
      expect(pod.spec?.initContainers?.[0]?.image, pod.metadata?.name).toBe(from.operatorImage.ref);
    }
    const eventsBefore = await pgfsmEvents();

    const history = recordHistory(e2e, {
      postgresClusters: `/apis/pgfsm.io/v1alpha1/namespaces/${NS}/postgresclusters`,
      postgresDatabases: `/apis/pgfsm.io/v1alpha1/namespaces/${NS}/postgresdatabases`,
      cnpgClusters: `/apis/postgresql.cnpg.io/v1/namespaces/${NS}/clusters`,
      pods: `/api/v1/namespaces/${NS}/pods`,
      deployments: `/apis/apps/v1/namespaces/${NS}/deployments`,
    });
    await history.ready();

    const swapped = Date.now();
    await installCnpg(e2e.node, { moduleDir: to.moduleDir, operatorImage: to.operatorImage.ref, log });
    const operatorUp = Date.now();

    // CloudNativePG's rollout is over when every instance runs the new instance manager and every PgBouncer the
    // new default image, all Ready, and the Cluster says it is healthy.
    await waitFor(
      `CloudNativePG ${CNPG_VERSION} to roll the instances and the poolers`,
      async () => {
        const list = await e2e.core.listNamespacedPod({ namespace: NS });
        const instances = list.items.filter((p) => isInstance(p as Pod));
        const poolers = list.items.filter((p) => isPooler(p as Pod));
        const cnpg = await getCnpgCluster<CnpgCluster>(e2e, NS, CLUSTER);
        const deployments = (await e2e.apps.listNamespacedDeployment({ namespace: NS })).items as Deployment[];
        return (
          instances.length === 2 &&
          instances.every((p) => podReady(p as Pod) && p.spec?.initContainers?.[0]?.image === to.operatorImage.ref) &&
          poolers.length > 0 &&
          poolers.every((p) => podReady(p as Pod) && p.spec?.containers[0]?.image === to.pgbouncerImage.ref) &&
          deployments.length > 0 &&
          deployments.every(deploymentRolledOut) &&
          cnpg.status?.phase === 'Cluster in healthy state' &&
          cnpg.status.readyInstances === 2 &&
          cnpg.status.cloudNativePGOperatorHash !== cnpgBefore.status?.cloudNativePGOperatorHash
        );
      },
      900_000,
    );
    await waitFor('the PostgresCluster and its database Ready after the rollout', async () => {
      const [cluster, database] = await Promise.all([getCluster(e2e, NS, CLUSTER), getDatabase(e2e, NS, DATABASE)]);
      return cluster?.status?.state === 'Ready' && database?.status?.state === 'Ready';
    });
    const settled = Date.now();
    // A last look for anything said late.
    await new Promise((resolve) => setTimeout(resolve, SLACK_MS));
    history.stop();
    // Applying the new release replaces CloudNativePG's CRDs, and the API server ends the watches of their objects
    // then (a resumption is refused with 410): a gap on CNPG Clusters while the manifests are applied is expected,
    // and the watch starts over from a list. Any other gap would leave versions unseen.
    const unexpectedGaps = history.gaps.filter((gap) => {
      const at = Date.parse(/ at (\S+)$/.exec(gap)?.[1] ?? '');
      return !(gap.startsWith('cnpgClusters:') && at >= swapped && at <= operatorUp);
    });
    expect(unexpectedGaps).toEqual([]);

    // CloudNativePG's own rollout: while any instance or PgBouncer Pod is not Ready, a pooler Deployment is not
    // rolled out, or the Cluster does not say it is healthy.
    const rollout = intervals(
      history,
      ['cnpgClusters', 'pods', 'deployments'],
      (latest) =>
        ofKind<CnpgCluster>(latest, 'cnpgClusters').some((c) => c.status?.phase !== 'Cluster in healthy state') ||
        ofKind<Pod>(latest, 'pods').some((p) => (isInstance(p) || isPooler(p)) && !podReady(p)) ||
        ofKind<Deployment>(latest, 'deployments').some((d) => !deploymentRolledOut(d)),
      swapped,
      settled,
    );
    const notReady = (resource: string) =>
      intervals(
        history,
        [resource],
        (latest) => ofKind<Stated>(latest, resource).some((o) => o.status?.state !== 'Ready'),
        swapped,
        Date.now(),
      );
    const clusterNotReady = notReady('postgresClusters');
    const databaseNotReady = notReady('postgresDatabases');
    const rolloutStart = rollout[0]?.[0] ?? settled;
    const rolloutEnd = rollout.at(-1)?.[1] ?? swapped;
    const seconds = (ms: number) => (ms / 1000).toFixed(1);
    const spans = (list: Array<[number, number]>) =>
      list.map(([a, b]) => `${seconds(a - swapped)}–${seconds(b - swapped)} s`).join(', ') || 'none';
    const said =
      `CNPG upgrade ${FROM} → ${CNPG_VERSION}: operator swapped in ${seconds(operatorUp - swapped)} s; ` +
      `CloudNativePG's rollout ${spans(rollout)}; PostgresCluster not Ready ${spans(clusterNotReady)}; ` +
      `PostgresDatabase not Ready ${spans(databaseNotReady)} (seconds after the swap)`;
    log(said);

    expect(rollout.length, 'CloudNativePG rolled something').toBeGreaterThan(0);
    for (const [start, end] of [...clusterNotReady, ...databaseNotReady]) {
      expect(start, said).toBeGreaterThanOrEqual(rolloutStart);
      expect(end, said).toBeLessThanOrEqual(rolloutEnd + SLACK_MS);
    }

    // Nothing said twice: no creation event again, and none of those said before counted up.
    const eventsAfter = await pgfsmEvents();
    const key = (e: { object: string; reason: string; note: string }) => `${e.object} ${e.reason} ${e.note}`;
    const before = new Map(eventsBefore.map((e) => [key(e), e.count]));
    for (const event of eventsAfter.filter((e) => CREATION.includes(e.reason))) {
      expect(before.get(key(event)), `${key(event)} said after the swap`).toBe(event.count);
    }

    // The rows, read through the new PgBouncer with the owner's uri alone.
    const again = await connectByUri(e2e, await secretValue(e2e, NS, `${DATABASE}-keeper`, 'uri'));
    const [{ count } = { count: '0' }] = await query<{ count: string }>(again, 'SELECT count(*) AS count FROM items');
    const version = await serverVersion(again);
    await again.end();
    expect(count).toBe('100');
    recordResult({
      cluster: `${NS}/${CLUSTER} (CNPG ${FROM} → ${CNPG_VERSION})`,
      ready: true,
      queriedThroughPooler: true,
      serverVersion: version,
    });
    recordLine(`${said}; 100 rows intact; no creation event said again`);
  });
});
