/**
 * The generated CRDs (deploy/crds) on a real kube-apiserver: they install (so every CEL rule compiles and
 * fits the cost budget), the server rejects each invalid spec with 422 and a message naming the field,
 * and it accepts the valid specs and updates next to them. The same control plane runs CloudNativePG's real
 * webhooks, which judge the objects pgfsm would build, against pgfsm's merge check.
 */
import https from 'node:https';
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPgHbaReference } from '../../src/operator/api/cnpg-rules.ts';
import type { PostgresClusterSpec } from '../../src/operator/api/schema.ts';
import { GROUP, VERSION } from '../../src/operator/api/schema.ts';
import { onDemandBackupName } from '../../src/operator/domain/backup/names.ts';
import { desiredOnDemandBackup } from '../../src/operator/domain/backup/on-demand.ts';
import { desiredScheduledBackup } from '../../src/operator/domain/backup/schedule.ts';
import { desiredCnpgCluster, restoreOf } from '../../src/operator/domain/components/cluster.ts';
import { desiredPooler } from '../../src/operator/domain/components/pooler.ts';
import { type MergedConfig, mergeConfig } from '../../src/operator/domain/config.ts';
import type { Observation } from '../../src/operator/domain/observation.ts';
import { CNPG_VERSION, type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import { healthyFacts, makeClass, observe } from '../../src/tools/fixtures/observations.ts';
import { installCrds, PGFSM_CRDS } from '../../src/tools/install/manifests.ts';

let controlPlane: ControlPlane | undefined;
let installed: string[] = [];
const namespace = `crds-${Date.now().toString(36)}`;

function api(): CustomObjectsApi {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane.kubeConfig.makeApiClient(CustomObjectsApi);
}

beforeAll(async () => {
  controlPlane = await startControlPlane();
  installed = await installCrds(controlPlane.kubeConfig, PGFSM_CRDS);
  await controlPlane.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await controlPlane?.stop();
});

const clusters = { group: GROUP, version: VERSION, plural: 'postgresclusters' };
const classes = { group: GROUP, version: VERSION, plural: 'postgresclusterclasses' };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const createCluster = (name: string, spec: Record<string, unknown>) =>
  api().createNamespacedCustomObject({
    ...clusters,
    namespace,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'PostgresCluster', metadata: { name }, spec },
  });

const patchCluster = (name: string, spec: Record<string, unknown>) =>
  api().patchNamespacedCustomObject({ ...clusters, namespace, name, body: { spec } }, mergePatch);

const createClass = (name: string, spec: Record<string, unknown>) =>
  api().createClusterCustomObject({
    ...classes,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'PostgresClusterClass', metadata: { name }, spec },
  });

/** The server's answer to a request that must fail: HTTP code and the Status message. */
async function rejection(request: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    return { code: error.code, message: String(body?.message ?? '') };
  }
  throw new Error('the API server accepted an invalid object');
}

async function expectInvalid(request: Promise<unknown>, field: string, text: string | RegExp): Promise<void> {
  const { code, message } = await rejection(request);
  expect(code, message).toBe(422);
  expect(message).toContain(field);
  if (typeof text === 'string') expect(message).toContain(text);
  else expect(message).toMatch(text);
}

let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}`;

/** A rule next to its look-alike: a cluster with `refused` is rejected naming `field`, one with `accepted` is not. */
async function refusesThenAccepts(
  refused: Record<string, unknown>,
  field: string,
  text: string,
  accepted: Record<string, unknown>,
): Promise<void> {
  await expectInvalid(createCluster(unique('refused'), { class: 'c', ...refused }), field, text);
  await createCluster(unique('accepted'), { class: 'c', ...accepted });
}

describe('pgfsm CRDs on a real API server', () => {
  it('install and become Established, so every CEL rule compiled', () => {
    expect([...installed].sort()).toEqual([
      'postgresclusterclasses.pgfsm.io',
      'postgresclusters.pgfsm.io',
      'postgresdatabases.pgfsm.io',
    ]);
  });

  it('publish a description of every kind and of its spec and status, as kubectl explain shows them', async () => {
    if (!controlPlane) throw new Error('no control plane');
    const kinds = ['PostgresCluster', 'PostgresClusterClass', 'PostgresDatabase'];
    type Published = { description?: string; properties?: Record<string, { description?: string }> };
    // kubectl explain reads the OpenAPI v3 document the API server publishes for the group, some time after install.
    const published = async (): Promise<Record<string, Published>> => {
      const kubeConfig = controlPlane?.kubeConfig;
      if (!kubeConfig) throw new Error('no control plane');
      const url = new URL(`${kubeConfig.getCurrentCluster()?.server}/openapi/v3/apis/${GROUP}/${VERSION}`);
      const options: https.RequestOptions = { hostname: url.hostname, port: url.port, path: url.pathname };
      await kubeConfig.applyToHTTPSOptions(options);
      const [status, body] = await new Promise<[number, string]>((resolve, reject) => {
        https
          .get(options, (response) => {
            let text = '';
            response.on('data', (chunk) => {
              text += chunk;
            });
            response.on('end', () => resolve([response.statusCode ?? 0, text]));
          })
          .on('error', reject);
      });
      // Not published yet (404 right after the install): asked again.
      if (status !== 200) return {};
      const document = JSON.parse(body) as { components?: { schemas?: Record<string, Published> } };
      return document.components?.schemas ?? {};
    };
    let schemas: Record<string, Published> = {};
    for (let attempt = 0; attempt < 60; attempt++) {
      schemas = await published();
      if (kinds.every((kind) => schemas[`io.pgfsm.${VERSION}.${kind}`]?.description)) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    for (const kind of kinds) {
      const schema = schemas[`io.pgfsm.${VERSION}.${kind}`];
      expect(schema?.description, `${kind} DESCRIPTION`).toBeTruthy();
      for (const field of ['spec', ...(kind === 'PostgresClusterClass' ? [] : ['status'])]) {
        expect(schema?.properties?.[field]?.description, `${kind}.${field}`).toBeTruthy();
      }
    }
    const spec = schemas[`io.pgfsm.${VERSION}.PostgresCluster`]?.properties?.spec as Published | undefined;
    expect(spec?.properties?.clusterDeletionPolicy?.description).toContain('Delete: the CNPG Cluster is deleted');
  });

  describe('PostgresCluster create', () => {
    it('accepts a full valid spec', async () => {
      await createCluster(unique('valid'), {
        class: 'standard',
        instances: 3,
        postgresVersion: '17.2',
        storage: '10Gi',
        resources: { requests: { cpu: '500m', memory: '1Gi' } },
        postgresqlConfig: { max_connections: '200' },
        pgHBA: ['host all all 10.0.0.0/8 scram-sha-256'],
        connectionPoolerEnabled: true,
        managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
        clusterDeletionPolicy: 'Delete',
      });
    });

    it('rejects instances 0', async () => {
      await expectInvalid(
        createCluster(unique('zero'), { class: 'c', instances: 0 }),
        'spec.instances',
        'greater than or equal to 1',
      );
    });

    it('rejects instances 11', async () => {
      await expectInvalid(
        createCluster(unique('eleven'), { class: 'c', instances: 11 }),
        'spec.instances',
        'less than or equal to 10',
      );
    });

    it('accepts a name of 50 characters and rejects one of 51', async () => {
      await createCluster('a'.repeat(50), { class: 'c' });
      await expectInvalid(createCluster('b'.repeat(51), { class: 'c' }), 'metadata.name', 'at most 50 characters');
    });
  });

  // The day-one CNPG fields: their CEL rules on a real API server, each next to an accepted look-alike.
  describe('day-one CNPG fields', () => {
    const image = (tag: string) => `ghcr.io/cloudnative-pg/postgresql:${tag}`;

    it('accepts all of them at once, in a cluster and in a class', async () => {
      const fields = {
        imageName: image('17.2-standard-bookworm'),
        postgresVersion: '17',
        storageClass: 'fast',
        walStorage: { size: '2Gi', storageClass: 'wal-ssd' },
        affinity: {
          enablePodAntiAffinity: true,
          topologyKey: 'topology.kubernetes.io/zone',
          podAntiAffinityType: 'required',
          nodeSelector: { 'node-role.example.com/db': 'true' },
          tolerations: [
            { key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' },
            { operator: 'Exists' },
            { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
          ],
        },
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', minDomains: 2 },
          {
            maxSkew: 1,
            topologyKey: 'kubernetes.io/hostname',
            whenUnsatisfiable: 'ScheduleAnyway',
            labelSelector: { matchExpressions: [{ key: 'cnpg.io/cluster', operator: 'Exists' }] },
          },
        ],
        monitoring: { enablePodMonitor: true },
      };
      await createCluster(unique('day-one'), { class: 'c', ...fields });
      await createClass(unique('day-one-class'), {
        provisioner: 'postgresql.cnpg.io',
        config: { instances: 1, ...fields },
      });
    });

    it('rejects an image CNPG reads no version from, naming imageName; accepts tagged ones', async () => {
      for (const imageName of [
        image('latest'),
        `ghcr.io/cloudnative-pg/postgresql@sha256:${'a'.repeat(64)}`,
        'postgres',
      ]) {
        await expectInvalid(
          createCluster(unique('image'), { class: 'c', imageName }),
          'spec.imageName',
          'imageName must be an image with a tag that starts with the PostgreSQL version',
        );
      }
      await expectInvalid(
        createCluster(unique('image'), { class: 'c', imageName: image('12.20') }),
        'spec.imageName',
        'imageName must run PostgreSQL 13 or newer',
      );
      for (const imageName of [
        'localhost:5000/pg:16',
        'postgres:16-alpine',
        `${image('18.1')}@sha256:${'b'.repeat(64)}`,
      ]) {
        await createCluster(unique('image-ok'), { class: 'c', imageName });
      }
    });

    it('rejects a postgresVersion of another major than imageName, accepts the same major', async () => {
      await refusesThenAccepts(
        { imageName: image('17.2'), postgresVersion: '18' },
        'spec.postgresVersion',
        "postgresVersion must name the major version of imageName's tag",
        { imageName: image('17.2'), postgresVersion: '17.2' },
      );
    });

    it('rejects the major of imageName going down or upgrading to 15, accepts minor changes and an upgrade to 16+', async () => {
      const name = unique('image-major');
      await createCluster(name, { class: 'c', imageName: image('14.10') });
      await patchCluster(name, { imageName: image('14.11-bookworm') });
      await expectInvalid(
        patchCluster(name, { imageName: image('15.4') }),
        'spec.imageName',
        'a major upgrade of imageName must go to 16 or newer',
      );
      await patchCluster(name, { imageName: image('17.2') });
      await expectInvalid(
        patchCluster(name, { imageName: image('16.4') }),
        'spec.imageName',
        'the major version of imageName cannot go down',
      );
      // postgresVersion set beside it, then the image removed: the version stays 17.
      await patchCluster(name, { postgresVersion: '17' });
      await patchCluster(name, { imageName: null });
      const pinnedLater = unique('image-later');
      await createCluster(pinnedLater, { class: 'c', postgresVersion: '17' });
      await expectInvalid(
        patchCluster(pinnedLater, { imageName: image('16.4') }),
        'spec.imageName',
        'the major version of imageName cannot go down',
      );
    });

    it('keeps storageClass as created, and the WAL volume: never removed, never shrunk, its class kept', async () => {
      const name = unique('volumes');
      await createCluster(name, { class: 'c', storageClass: 'fast', walStorage: { size: '2Gi', storageClass: 'wal' } });
      await expectInvalid(
        patchCluster(name, { storageClass: 'slow' }),
        'spec.storageClass',
        'storageClass cannot be added, changed nor removed once the cluster exists',
      );
      await expectInvalid(
        patchCluster(name, { storageClass: null }),
        'spec.storageClass',
        'storageClass cannot be added, changed nor removed once the cluster exists',
      );
      await expectInvalid(
        patchCluster(name, { walStorage: null }),
        'spec.walStorage',
        'walStorage cannot be removed once set',
      );
      await expectInvalid(
        patchCluster(name, { walStorage: { size: '1Gi' } }),
        'spec.walStorage.size',
        'walStorage.size cannot shrink',
      );
      await expectInvalid(
        patchCluster(name, { walStorage: { storageClass: 'other' } }),
        'spec.walStorage.storageClass',
        'walStorage.storageClass cannot be added, changed nor removed once the WAL volume exists',
      );
      await patchCluster(name, { walStorage: { size: '2048Mi' } });
      await patchCluster(name, { walStorage: { size: '4Gi' }, instances: 2 });
      // Added later: CNPG adds a WAL volume to a running cluster, with a class of its own if wanted. A storage
      // class is not added to volumes created without one (they have the default class): refused, named.
      const later = unique('volumes-later');
      await createCluster(later, { class: 'c' });
      await expectInvalid(
        patchCluster(later, { storageClass: 'fast' }),
        'spec.storageClass',
        'storageClass cannot be added, changed nor removed once the cluster exists',
      );
      await patchCluster(later, { walStorage: { size: '1Gi' } });
      await expectInvalid(
        patchCluster(later, { walStorage: { storageClass: 'wal' } }),
        'spec.walStorage.storageClass',
        'walStorage.storageClass cannot be added, changed nor removed once the WAL volume exists',
      );
      const walLater = unique('wal-later');
      await createCluster(walLater, { class: 'c' });
      await patchCluster(walLater, { walStorage: { size: '1Gi', storageClass: 'wal' } });
      await expectInvalid(
        createCluster(unique('wal-small'), { class: 'c', walStorage: { size: '512Mi' } }),
        'spec.walStorage.size',
        'walStorage.size must be at least 1Gi',
      );
      await expectInvalid(
        createCluster(unique('sc'), { class: 'c', storageClass: 'Fast_SSD' }),
        'spec.storageClass',
        'should match',
      );
    });

    it('refuses a pg_hba line with a podselector reference, on a cluster or a class; accepts look-alikes', async () => {
      const reference = 'host all all \u0024{podselector:app} scram-sha-256';
      await refusesThenAccepts(
        { pgHBA: ['host all all 10.0.0.0/8 scram-sha-256', reference] },
        'spec.pgHBA[1]',
        'podSelectorRefs',
        // A dollar sign or braces alone are no reference.
        { pgHBA: ['host all all 10.0.0.0/8 scram-sha-256', 'host $db {x} 10.0.0.0/8 md5'] },
      );
      await expectInvalid(
        createClass(unique('hba-ref'), { provisioner: 'postgresql.cnpg.io', config: { pgHBA: [reference] } }),
        'spec.config.pgHBA[0]',
        'podSelectorRefs',
      );
    });

    it('rejects the tolerations CNPG refuses, each naming the field; accepts look-alikes', async () => {
      const tolerations = (...list: object[]) => ({ affinity: { tolerations: list } });
      await refusesThenAccepts(
        tolerations({ operator: 'Equal', value: 'x' }),
        'spec.affinity.tolerations[0]',
        'operator must be Exists when key is empty',
        tolerations({ operator: 'Exists' }),
      );
      await refusesThenAccepts(
        tolerations({ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }),
        'spec.affinity.tolerations[0]',
        'effect must be NoExecute when tolerationSeconds is set',
        tolerations({ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 }),
      );
      await refusesThenAccepts(
        tolerations({ key: 'k', operator: 'Exists', value: 'v' }),
        'spec.affinity.tolerations[0]',
        'value must be empty when operator is Exists',
        tolerations({ key: 'k', value: 'v' }),
      );
      await expectInvalid(
        createCluster(unique('tol'), { class: 'c', ...tolerations({ key: 'k', operator: 'In' }) }),
        'spec.affinity.tolerations[0].operator',
        'Unsupported value',
      );
      await expectInvalid(
        createCluster(unique('tol'), { class: 'c', ...tolerations({ key: 'bad key', operator: 'Exists' }) }),
        'spec.affinity.tolerations[0].key',
        'should match',
      );
      await expectInvalid(
        createCluster(unique('tol'), { class: 'c', ...tolerations({ key: 'k', effect: 'NoScheduleNoAdmit' }) }),
        'spec.affinity.tolerations[0].effect',
        'Unsupported value',
      );
    });

    it('rejects a node selector key that is no label name and an unknown anti-affinity type', async () => {
      await refusesThenAccepts(
        { affinity: { nodeSelector: { 'disk type': 'ssd' } } },
        'spec.affinity.nodeSelector',
        'affinity.nodeSelector.disk type is no label name',
        { affinity: { nodeSelector: { 'example.com/disk-type': 'ssd' } } },
      );
      await expectInvalid(
        createCluster(unique('aa'), { class: 'c', affinity: { podAntiAffinityType: 'strict' } }),
        'spec.affinity.podAntiAffinityType',
        'Unsupported value',
      );
    });

    it('rejects topology spread constraints Kubernetes would refuse on the Pods', async () => {
      const tsc = (...list: object[]) => ({ topologySpreadConstraints: list });
      const zone = { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' };
      await refusesThenAccepts(
        tsc({ ...zone, whenUnsatisfiable: 'ScheduleAnyway', minDomains: 2 }),
        'spec.topologySpreadConstraints[0]',
        'minDomains can be set only with whenUnsatisfiable DoNotSchedule',
        tsc({ ...zone, minDomains: 2 }),
      );
      await expectInvalid(
        createCluster(unique('tsc'), { class: 'c', ...tsc(zone, { ...zone, maxSkew: 2 }) }),
        'spec.topologySpreadConstraints[1]',
        'Duplicate value',
      );
      await expectInvalid(
        createCluster(unique('tsc'), { class: 'c', ...tsc({ ...zone, maxSkew: 0 }) }),
        'spec.topologySpreadConstraints[0].maxSkew',
        'greater than or equal to 1',
      );
      await refusesThenAccepts(
        tsc({ ...zone, labelSelector: { matchExpressions: [{ key: 'app', operator: 'In' }] } }),
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0]',
        'values must be set for In and NotIn, and empty for Exists and DoesNotExist',
        tsc({ ...zone, labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] } }),
      );
    });
  });

  describe('PostgresCluster update', () => {
    it('rejects a change of class (immutable)', async () => {
      const name = unique('class');
      await createCluster(name, { class: 'standard' });
      await expectInvalid(patchCluster(name, { class: 'premium' }), 'spec.class', 'class is immutable');
    });

    it('accepts storage growth, rejects a shrink and a removal', async () => {
      const name = unique('storage');
      await createCluster(name, { class: 'standard', storage: '10Gi' });
      await patchCluster(name, { storage: '20Gi' });
      // 20Gi in other units is the same size: neither a shrink nor a change the rules refuse.
      await patchCluster(name, { storage: '20480Mi' });
      await expectInvalid(patchCluster(name, { storage: '5Gi' }), 'spec.storage', 'storage cannot shrink');
      await expectInvalid(patchCluster(name, { storage: null }), 'spec.storage', 'storage cannot be removed once set');
    });

    it('accepts a storage set later when there was none', async () => {
      const name = unique('storage-later');
      await createCluster(name, { class: 'standard' });
      await patchCluster(name, { storage: '1Gi' });
    });

    it('accepts minor version changes and a major upgrade, rejects a major downgrade (18 → 17)', async () => {
      const name = unique('version');
      await createCluster(name, { class: 'standard', postgresVersion: '17' });
      await patchCluster(name, { postgresVersion: '17.2' });
      await patchCluster(name, { postgresVersion: '17.4' });
      await patchCluster(name, { postgresVersion: '18' });
      await expectInvalid(
        patchCluster(name, { postgresVersion: '17' }),
        'spec.postgresVersion',
        'the major version of postgresVersion cannot go down',
      );
      await expectInvalid(
        patchCluster(name, { postgresVersion: null }),
        'spec.postgresVersion',
        'postgresVersion cannot be removed once set',
      );
    });

    it('accepts an update of other fields next to the guarded ones', async () => {
      const name = unique('other');
      await createCluster(name, { class: 'standard', storage: '10Gi', postgresVersion: '18', instances: 1 });
      await patchCluster(name, { instances: 3, suspend: true });
    });
  });

  // What CloudNativePG's admission would refuse, refused here first with a message naming the field; each rule next to
  // an accepted look-alike. docs/cnpg-admission.md names these tests by title.
  describe('CNPG admission rules on a PostgresCluster', () => {
    it('rejects reserved role names, accepts look-alikes', async () => {
      for (const name of ['postgres', 'streaming_replica', 'cnpg_backup', 'pg_monitor']) {
        await expectInvalid(
          createCluster(unique('role'), { class: 'c', managedRoles: [{ name: 'app' }, { name }] }),
          'spec.managedRoles[1].name',
          'managed role name cannot be postgres or streaming_replica nor start with cnpg_ or pg_',
        );
      }
      await createCluster(unique('role-ok'), {
        class: 'c',
        managedRoles: [{ name: 'postgres_app' }, { name: 'app_pg_' }, { name: 'pgadmin' }, { name: 'cnpg' }],
      });
    });

    it('rejects a role password Secret name that is no DNS-1123 subdomain, accepts look-alikes', async () => {
      // '/' would turn pgfsm's GET of the Secret into a subresource request, refused on every pass.
      for (const name of ['team/app-password', 'App-Password', 'app..password', '-app', 'app.', 'app_password']) {
        await expectInvalid(
          createCluster(unique('secret-name'), {
            class: 'c',
            managedRoles: [{ name: 'app' }, { name: 'batch', passwordSecretRef: { name } }],
          }),
          'spec.managedRoles[1].passwordSecretRef.name',
          "passwordSecretRef.name must be a Secret's name, a DNS-1123 subdomain",
        );
      }
      await createCluster(unique('secret-name-ok'), {
        class: 'c',
        managedRoles: [
          { name: 'a', passwordSecretRef: { name: 'team.app-password' } },
          { name: 'b', passwordSecretRef: { name: '1' } },
          {
            name: 'c',
            passwordSecretRef: { name: `${'x'.repeat(63)}.${'y'.repeat(63)}.${'z'.repeat(63)}.${'w'.repeat(61)}` },
          },
        ],
      });
    });

    it('rejects parameters CNPG fixes, naming the parameter, accepts others', async () => {
      for (const key of ['port', 'listen_addresses', 'data_directory', 'shared_preload_libraries']) {
        await expectInvalid(
          createCluster(unique('fixed'), { class: 'c', postgresqlConfig: { max_connections: '100', [key]: 'x' } }),
          'spec.postgresqlConfig',
          `postgresqlConfig.${key} cannot be set: CloudNativePG fixes this parameter`,
        );
      }
      await createCluster(unique('fixed-ok'), {
        class: 'c',
        postgresqlConfig: { max_connections: '100', port_range: 'x', 'pg_stat_statements.max': '1000' },
      });
    });

    it('rejects wal_level minimal, accepts replica and logical', async () => {
      await expectInvalid(
        createCluster(unique('wal'), { class: 'c', postgresqlConfig: { wal_level: 'minimal' } }),
        'spec.postgresqlConfig',
        'postgresqlConfig.wal_level must be replica or logical',
      );
      await createCluster(unique('wal-ok'), { class: 'c', postgresqlConfig: { wal_level: 'replica' } });
      await createCluster(unique('wal-ok'), { class: 'c', postgresqlConfig: { wal_level: 'logical' } });
    });

    it('rejects a boolean parameter that is no PostgreSQL boolean, accepts its spellings', async () => {
      for (const key of ['hot_standby_feedback', 'sync_replication_slots', 'wal_log_hints']) {
        await expectInvalid(
          createCluster(unique('bool'), { class: 'c', postgresqlConfig: { [key]: 'maybe' } }),
          'spec.postgresqlConfig',
          `postgresqlConfig.${key} must be a PostgreSQL boolean`,
        );
      }
      await createCluster(unique('bool-ok'), {
        class: 'c',
        postgresqlConfig: { hot_standby_feedback: 'ON', sync_replication_slots: 'true', wal_log_hints: 'yes' },
      });
    });

    it('rejects a memory parameter CNPG cannot parse, accepts PostgreSQL sizes', async () => {
      for (const key of ['shared_buffers', 'min_wal_size', 'max_wal_size']) {
        await expectInvalid(
          createCluster(unique('mem'), { class: 'c', postgresqlConfig: { [key]: '1G' } }),
          'spec.postgresqlConfig',
          `postgresqlConfig.${key} must be a size such as 128MB or 1GB`,
        );
      }
      for (const value of ['128', '128MB', '1.5GB', '8 kB', '1TB', '16384B']) {
        await createCluster(unique('mem-ok'), { class: 'c', postgresqlConfig: { shared_buffers: value } });
      }
    });

    it('rejects min_wal_size not smaller than max_wal_size, accepts a smaller one', async () => {
      await refusesThenAccepts(
        { postgresqlConfig: { min_wal_size: '2GB', max_wal_size: '2048MB' } },
        'spec.postgresqlConfig',
        'postgresqlConfig.min_wal_size must be smaller than postgresqlConfig.max_wal_size',
        { postgresqlConfig: { min_wal_size: '1GB', max_wal_size: '2GB' } },
      );
    });

    it('rejects a postgresVersion below 13, accepts 13', async () => {
      await refusesThenAccepts(
        { postgresVersion: '12.22' },
        'spec.postgresVersion',
        'postgresVersion must be 13 or newer',
        { postgresVersion: '13' },
      );
    });

    it('rejects a major upgrade to 14 or 15, accepts one to 16', async () => {
      const name = unique('upgrade');
      await createCluster(name, { class: 'c', postgresVersion: '13' });
      await expectInvalid(
        patchCluster(name, { postgresVersion: '15' }),
        'spec.postgresVersion',
        'a major upgrade of postgresVersion must go to 16 or newer',
      );
      await patchCluster(name, { postgresVersion: '16' });
    });

    it('rejects a request greater than its limit, accepts an equal one', async () => {
      for (const [resource, request, limit] of [
        ['cpu', '2', '1500m'],
        ['memory', '2Gi', '1Gi'],
        ['ephemeral-storage', '2Gi', '1G'],
      ]) {
        await expectInvalid(
          createCluster(unique('req'), {
            class: 'c',
            resources: { requests: { [resource as string]: request }, limits: { [resource as string]: limit } },
          }),
          'spec.resources',
          `resources.requests.${resource} must be less than or equal to resources.limits.${resource}`,
        );
      }
      await createCluster(unique('req-ok'), {
        class: 'c',
        resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } },
      });
    });

    it('rejects hugepages whose request differs from the limit or that come without cpu or memory', async () => {
      await expectInvalid(
        createCluster(unique('huge'), {
          class: 'c',
          resources: { requests: { memory: '1Gi', 'hugepages-2Mi': '1Gi' }, limits: { 'hugepages-2Mi': '2Gi' } },
        }),
        'spec.resources',
        'resources.requests.hugepages-* must equal resources.limits.hugepages-*',
      );
      await expectInvalid(
        createCluster(unique('huge'), { class: 'c', resources: { limits: { 'hugepages-2Mi': '1Gi' } } }),
        'spec.resources',
        'resources with hugepages-* must also set a cpu or memory request or limit',
      );
      await createCluster(unique('huge-ok'), {
        class: 'c',
        resources: { requests: { memory: '1Gi', 'hugepages-2Mi': '1Gi' }, limits: { 'hugepages-2Mi': '1Gi' } },
      });
    });

    it('rejects a memory request below shared_buffers, accepts one that holds it', async () => {
      await expectInvalid(
        createCluster(unique('sb'), {
          class: 'c',
          postgresqlConfig: { shared_buffers: '1GB' },
          resources: { requests: { memory: '1G' } },
        }),
        'spec',
        'resources.requests.memory must be at least postgresqlConfig.shared_buffers',
      );
      // CNPG reads MB and GB as binary units: 1GB is 1Gi.
      await createCluster(unique('sb-ok'), {
        class: 'c',
        postgresqlConfig: { shared_buffers: '1GB' },
        resources: { requests: { memory: '1Gi' } },
      });
      await createCluster(unique('sb-huge'), {
        class: 'c',
        postgresqlConfig: { shared_buffers: '2GB' },
        resources: { requests: { memory: '1Gi', 'hugepages-1Gi': '2Gi' }, limits: { 'hugepages-1Gi': '2Gi' } },
      });
    });

    it('rejects wal_log_hints off with more than one instance, accepts it with one', async () => {
      await refusesThenAccepts(
        { instances: 3, postgresqlConfig: { wal_log_hints: 'off' } },
        'spec',
        'postgresqlConfig.wal_log_hints must be on when instances is greater than 1',
        { instances: 1, postgresqlConfig: { wal_log_hints: 'off' } },
      );
    });

    it('rejects a postgresVersion that is no version tag (latest), accepts 17.2', async () => {
      await refusesThenAccepts({ postgresVersion: 'latest' }, 'spec.postgresVersion', 'should match', {
        postgresVersion: '17.2',
      });
    });

    it('rejects a storage that is no quantity, accepts 10Gi', async () => {
      await refusesThenAccepts({ storage: 'ten gigs' }, 'spec.storage', 'should match', { storage: '10Gi' });
    });

    it('rejects duplicate managed role names, accepts distinct ones', async () => {
      await refusesThenAccepts(
        { managedRoles: [{ name: 'app' }, { name: 'app' }] },
        'spec.managedRoles[1]',
        'Duplicate value',
        { managedRoles: [{ name: 'app' }, { name: 'app2' }] },
      );
    });

    it('rejects a name that is no DNS-1035 label (my.db, 1orders), accepts orders-1', async () => {
      for (const name of ['my.db', '1orders']) {
        await expectInvalid(
          createCluster(name, { class: 'c' }),
          'metadata.name',
          'metadata.name must be a DNS-1035 label',
        );
      }
      await createCluster('orders-1', { class: 'c' });
    });

    it('bounds postgresqlConfig: 256 parameters of 128-character names and 1024-character values, no more', async () => {
      const many = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, '1']));
      await createCluster(unique('params-ok'), {
        class: 'c',
        postgresqlConfig: { ...many(255), ['n'.repeat(128)]: 'v'.repeat(1024) },
      });
      await expectInvalid(
        createCluster(unique('params'), { class: 'c', postgresqlConfig: many(257) }),
        'spec.postgresqlConfig',
        'must have at most 256 items',
      );
      await expectInvalid(
        createCluster(unique('params'), { class: 'c', postgresqlConfig: { ['n'.repeat(129)]: '1' } }),
        'spec.postgresqlConfig',
        'postgresqlConfig parameter names must be at most 128 characters',
      );
      await expectInvalid(
        createCluster(unique('params'), { class: 'c', postgresqlConfig: { work_mem: 'v'.repeat(1025) } }),
        'spec.postgresqlConfig.work_mem',
        'may not be more than 1024 bytes',
      );
    });

    it('bounds pgHBA, managedRoles and resources', async () => {
      const roles = (count: number) => Array.from({ length: count }, (_, i) => ({ name: `role${i}` }));
      // Names a PostgreSQL pod can be given (the CRD refuses others): cpu, memory, ephemeral-storage, huge pages.
      const names = [
        'cpu',
        'memory',
        'ephemeral-storage',
        ...['2', '4', '8', '16', '32'].flatMap((n) => ['Ki', 'Mi', 'Gi'].map((u) => `hugepages-${n}${u}`)),
      ];
      const resources = (count: number) => Object.fromEntries(names.slice(0, count).map((name) => [name, '1']));
      await createCluster(unique('lists-ok'), {
        class: 'c',
        pgHBA: Array.from({ length: 256 }, () => `host all all 10.0.0.0/8 ${'x'.repeat(1000)}`),
        managedRoles: roles(128),
        resources: { requests: resources(16) },
      });
      await expectInvalid(
        createCluster(unique('hba'), { class: 'c', pgHBA: Array.from({ length: 257 }, () => 'host all all') }),
        'spec.pgHBA',
        'must have at most 256 items',
      );
      await expectInvalid(
        createCluster(unique('hba'), { class: 'c', pgHBA: ['h'.repeat(1025)] }),
        'spec.pgHBA[0]',
        'may not be more than 1024 bytes',
      );
      await expectInvalid(
        createCluster(unique('roles'), { class: 'c', managedRoles: roles(129) }),
        'spec.managedRoles',
        'must have at most 128 items',
      );
      await expectInvalid(
        createCluster(unique('res'), { class: 'c', resources: { limits: resources(17) } }),
        'spec.resources.limits',
        'must have at most 16 items',
      );
    });
  });

  describe('CNPG admission rules on a PostgresClusterClass', () => {
    const pooled = (parameters: Record<string, string>) => ({
      provisioner: 'postgresql.cnpg.io',
      cnpg: { connectionPooler: { parameters } },
    });

    it('rejects PgBouncer parameters CNPG reserves (listen_port, pool_mode), accepts allowed ones', async () => {
      for (const key of ['listen_port', 'pool_mode', 'unix_socket_dir']) {
        await expectInvalid(
          createClass(unique('pgb'), pooled({ default_pool_size: '10', [key]: 'x' })),
          'spec.cnpg.connectionPooler.parameters',
          `cnpg.connectionPooler.parameters.${key} cannot be set: CloudNativePG reserves it or does not know it`,
        );
      }
      await createClass(unique('pgb-ok'), pooled({ default_pool_size: '10', max_client_conn: '500', verbose: '1' }));
    });

    it('applies the config rules to the class config too (fixed parameter, version, requests, wal_log_hints)', async () => {
      const klass = (config: Record<string, unknown>) => ({ provisioner: 'postgresql.cnpg.io', config });
      await expectInvalid(
        createClass(unique('cfg'), klass({ postgresqlConfig: { listen_addresses: '*' } })),
        'spec.config.postgresqlConfig',
        'postgresqlConfig.listen_addresses cannot be set',
      );
      await expectInvalid(
        createClass(unique('cfg'), klass({ postgresVersion: '11' })),
        'spec.config.postgresVersion',
        'postgresVersion must be 13 or newer',
      );
      await expectInvalid(
        createClass(unique('cfg'), klass({ resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } })),
        'spec.config.resources',
        'resources.requests.cpu must be less than or equal to resources.limits.cpu',
      );
      await expectInvalid(
        createClass(unique('cfg'), klass({ instances: 2, postgresqlConfig: { wal_log_hints: 'false' } })),
        'spec.config',
        'postgresqlConfig.wal_log_hints must be on when instances is greater than 1',
      );
      await createClass(
        unique('cfg-ok'),
        klass({
          instances: 2,
          postgresVersion: '18',
          postgresqlConfig: { wal_log_hints: 'on', shared_buffers: '256MB' },
          resources: { requests: { cpu: '1', memory: '512Mi' }, limits: { cpu: '1' } },
        }),
      );
    });
  });

  describe('PostgresClusterClass', () => {
    it('accepts a pooler-enabled class with cnpg.connectionPooler', async () => {
      await createClass(unique('pooled'), {
        provisioner: 'postgresql.cnpg.io',
        config: { instances: 2, storage: '5Gi', postgresVersion: '17', connectionPoolerEnabled: true },
        cnpg: { connectionPooler: { instances: 2, mode: 'session' } },
      });
    });

    it('rejects pool mode statement', async () => {
      await expectInvalid(
        createClass(unique('statement'), {
          provisioner: 'postgresql.cnpg.io',
          config: { connectionPoolerEnabled: true },
          cnpg: { connectionPooler: { mode: 'statement' } },
        }),
        'spec.cnpg.connectionPooler.mode',
        'Unsupported value: "statement"',
      );
    });

    it('rejects a pooler-enabled class without cnpg.connectionPooler', async () => {
      await expectInvalid(
        createClass(unique('no-pooler'), {
          provisioner: 'postgresql.cnpg.io',
          config: { connectionPoolerEnabled: true },
        }),
        'spec.cnpg',
        'cnpg.connectionPooler must be set when config.connectionPoolerEnabled is true',
      );
    });

    it('rejects instances out of range in a class too', async () => {
      await expectInvalid(
        createClass(unique('class-instances'), { provisioner: 'postgresql.cnpg.io', config: { instances: 11 } }),
        'spec.config.instances',
        'less than or equal to 10',
      );
    });
  });

  // Issue 36: the backup policy of a class, a cluster's overrides and its restore.
  describe('backups and restore', () => {
    const policy = {
      objectStore: { destinationPath: 's3://pg-backups/prod', credentials: { secretName: 's3-creds' } },
      schedule: '30 2 * * *',
      retention: '7d',
    };

    it('refuses a 6-field backup schedule, naming the field; accepts the 5-field form', async () => {
      await refusesThenAccepts(
        { backup: { schedule: '0 30 2 * * *' } },
        'spec.backup.schedule',
        'schedule must be a 5-field cron',
        { backup: { schedule: '*/30 1-5 * * MON-FRI' } },
      );
      await expectInvalid(
        createClass(unique('six'), {
          provisioner: 'postgresql.cnpg.io',
          backup: { ...policy, schedule: '0 0 2 * * *' },
        }),
        'spec.backup.schedule',
        'schedule must be a 5-field cron',
      );
    });

    it('refuses a backup policy without credentials or with lz4 base backups; defaults the credential keys', async () => {
      const { credentials: _, ...noCredentials } = policy.objectStore;
      await expectInvalid(
        createClass(unique('no-creds'), {
          provisioner: 'postgresql.cnpg.io',
          backup: { ...policy, objectStore: noCredentials },
        }),
        'spec.backup.objectStore.credentials',
        'Required value',
      );
      await expectInvalid(
        createClass(unique('lz4'), {
          provisioner: 'postgresql.cnpg.io',
          backup: { ...policy, dataCompression: 'lz4' },
        }),
        'spec.backup.dataCompression',
        'Unsupported value: "lz4"',
      );
      const created = (await createClass(unique('policy'), {
        provisioner: 'postgresql.cnpg.io',
        backup: { ...policy, walCompression: 'lz4', dataCompression: 'gzip' },
      })) as { spec: { backup: { objectStore: { credentials: Record<string, string> } } } };
      expect(created.spec.backup.objectStore.credentials).toEqual({
        secretName: 's3-creds',
        accessKeyIdKey: 'ACCESS_KEY_ID',
        secretAccessKeyKey: 'ACCESS_SECRET_KEY',
      });
    });

    it('refuses schedule or retention beside backup.enabled false', async () => {
      await refusesThenAccepts(
        { backup: { enabled: false, retention: '7d' } },
        'spec.backup',
        'have no effect when backup.enabled is false',
        { backup: { enabled: true, retention: '7d' } },
      );
    });

    it('refuses a restore target time without a zone, naming the field; accepts RFC 3339 with one', async () => {
      await refusesThenAccepts(
        { restore: { source: { cluster: 'old' }, targetTime: '2026-11-20T10:15:30' } },
        'spec.restore.targetTime',
        'restore.targetTime must be an RFC 3339 time with a zone',
        { restore: { source: { cluster: 'old' }, targetTime: '2026-11-20T10:15:30.123456+01:00' } },
      );
    });

    it('refuses a restore source naming both or neither of cluster and serverName, or the cluster itself', async () => {
      await refusesThenAccepts(
        { restore: { source: { cluster: 'old', serverName: 'old-3f2a9c1d' } } },
        'spec.restore.source',
        'restore.source must name exactly one of cluster and serverName',
        { restore: { source: { serverName: 'old-3f2a9c1d' } } },
      );
      await expectInvalid(
        createCluster(unique('neither'), { class: 'c', restore: { source: {} } }),
        'spec.restore.source',
        'exactly one of cluster and serverName',
      );
      await expectInvalid(
        createCluster('itself', { class: 'c', restore: { source: { cluster: 'itself' } } }),
        '',
        'spec.restore.source.cluster must name another PostgresCluster',
      );
    });

    it('refuses a restore added to, changed on or removed from an existing cluster', async () => {
      const plain = unique('plain');
      await createCluster(plain, { class: 'c' });
      await expectInvalid(
        patchCluster(plain, { restore: { source: { cluster: 'old' } } }),
        'spec.restore',
        'restore cannot be added, changed nor removed',
      );
      const restored = unique('restored');
      await createCluster(restored, { class: 'c', restore: { source: { cluster: 'old' } } });
      await expectInvalid(
        patchCluster(restored, { restore: { source: { cluster: 'other' } } }),
        'spec.restore',
        'restore cannot be added, changed nor removed',
      );
      await expectInvalid(
        patchCluster(restored, { restore: null }),
        'spec.restore',
        'restore cannot be added, changed nor removed',
      );
      await patchCluster(restored, { instances: 2 });
    });
  });
});

/**
 * The rules above and the merge check copy CNPG's; here CNPG's own webhooks (CNPG_VERSION, run by the control plane) judge
 * the very objects pgfsm would write, and pgfsm's merge check judges the same config: they must agree, case by case,
 * except where docs/cnpg-admission.md says pgfsm is stricter.
 */
describe("pgfsm's merge check against CloudNativePG's real webhooks", () => {
  const BASE: MergedConfig = {
    instances: 1,
    postgresVersion: '17',
    storage: '1Gi',
    resources: {},
    postgresqlConfig: {},
    pgHBA: [],
    primaryUpdateMethod: 'switchover',
    managedRoles: [],
    deletionPolicy: 'Retain',
  };
  const cnpgApi = { group: 'postgresql.cnpg.io', version: 'v1', namespace };

  /** CNPG's verdict on an object (a dry run: its webhooks judge, nothing is stored): undefined when accepted. */
  async function cnpgRefusal(plural: string, body: object): Promise<string | undefined> {
    try {
      await api().createNamespacedCustomObject({ ...cnpgApi, plural, body, dryRun: 'All' });
      return undefined;
    } catch (error) {
      if (!(error instanceof ApiException)) throw error;
      const status = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
      return String(status?.message ?? error.code);
    }
  }

  /** The fixture world with the cluster named `name` in this test's namespace and its spec set to `config`. */
  function observationOf(name: string, config: MergedConfig): Observation {
    const base = observe(healthyFacts);
    const spec: PostgresClusterSpec = {
      class: 'standard',
      instances: config.instances,
      postgresVersion: config.postgresVersion,
      storage: config.storage,
      resources: config.resources,
      postgresqlConfig: config.postgresqlConfig,
      managedRoles: config.managedRoles,
    };
    for (const key of [
      'imageName',
      'storageClass',
      'walStorage',
      'affinity',
      'topologySpreadConstraints',
      'monitoring',
    ] as const) {
      if (config[key] !== undefined) Object.assign(spec, { [key]: config[key] });
    }
    return {
      ...base,
      cnpg: undefined,
      clusterClass: makeClass(),
      cluster: { ...base.cluster, metadata: { ...base.cluster.metadata, name, namespace }, spec },
    };
  }

  const p = (postgresqlConfig: Record<string, string>) => ({ postgresqlConfig });
  const r = (requests: Record<string, string>, limits: Record<string, string> = {}) => ({
    resources: { requests, limits },
  });
  // [what, config change, cluster name, pgfsm stricter than CNPG]
  const cases: Array<[string, Partial<MergedConfig>, string?, boolean?]> = [
    ['a plain cluster', {}],
    ['port at CNPG’s own value 5432', p({ port: '5432' })],
    ['port 5433', p({ port: '5433' })],
    ['listen_addresses', p({ listen_addresses: '*' })],
    ['wal_level minimal with max_wal_senders 0', p({ wal_level: 'minimal', max_wal_senders: '0' })],
    ['wal_level Replica', p({ wal_level: 'Replica' })],
    ['wal_level logical', p({ wal_level: 'logical' })],
    ['hot_standby_feedback ON', p({ hot_standby_feedback: 'ON' })],
    ['hot_standby_feedback maybe', p({ hot_standby_feedback: 'maybe' })],
    ['hot_standby_feedback o', p({ hot_standby_feedback: 'o' })],
    ['sync_replication_slots fals', p({ sync_replication_slots: 'fals' })],
    ['shared_buffers 128', p({ shared_buffers: '128' })],
    ['shared_buffers 1.5GB', p({ shared_buffers: '1.5GB' })],
    ['shared_buffers 8 kB', p({ shared_buffers: '8 kB' })],
    ['shared_buffers 16384B', p({ shared_buffers: '16384B' })],
    ['shared_buffers 1G', p({ shared_buffers: '1G' })],
    ['shared_buffers 1.5', p({ shared_buffers: '1.5' })],
    ['shared_buffers 1.5B', p({ shared_buffers: '1.5B' })],
    // PostgreSQL's units are case-sensitive: it would refuse 8KB at start-up, which CNPG lets through.
    ['shared_buffers 8KB', p({ shared_buffers: '8KB' }), undefined, true],
    ['min_wal_size 2GB over the default max', p({ min_wal_size: '2GB' })],
    ['max_wal_size 64MB under the default min', p({ max_wal_size: '64MB' })],
    ['min_wal_size 1GB, max_wal_size 2GB', p({ min_wal_size: '1GB', max_wal_size: '2GB' })],
    ['wal_log_hints off with 3 instances', { instances: 3, ...p({ wal_log_hints: 'off' }) }],
    ['wal_log_hints off with 1 instance', p({ wal_log_hints: 'off' })],
    ['pg_failover_slots without hot_standby_feedback', p({ 'pg_failover_slots.synchronize_slot_names': 'x' })],
    [
      'pg_failover_slots with hot_standby_feedback on',
      p({ 'pg_failover_slots.synchronize_slot_names': 'x', hot_standby_feedback: 'on' }),
    ],
    ['cpu request 2 over limit 1500m', r({ cpu: '2' }, { cpu: '1500m' })],
    ['cpu request over a zero limit', r({ cpu: '2' }, { cpu: '0' })],
    ['memory request 2Gi over limit 1Gi', r({ memory: '2Gi' }, { memory: '1Gi' })],
    ['ephemeral-storage request over its limit', r({ 'ephemeral-storage': '2Gi' }, { 'ephemeral-storage': '1G' })],
    ['hugepages request unlike the limit', r({ memory: '1Gi', 'hugepages-2Mi': '1Gi' }, { 'hugepages-2Mi': '2Gi' })],
    ['hugepages alone', r({}, { 'hugepages-2Mi': '1Gi' })],
    ['hugepages equal to the limit', r({ memory: '1Gi', 'hugepages-2Mi': '1Gi' }, { 'hugepages-2Mi': '1Gi' })],
    ['shared_buffers 1GB over memory 1G', { ...p({ shared_buffers: '1GB' }), ...r({ memory: '1G' }) }],
    ['shared_buffers 1GB within memory 1Gi', { ...p({ shared_buffers: '1GB' }), ...r({ memory: '1Gi' }) }],
    [
      'shared_buffers 2GB held by hugepages',
      { ...p({ shared_buffers: '2GB' }), ...r({ memory: '1Gi', 'hugepages-1Gi': '2Gi' }, { 'hugepages-1Gi': '2Gi' }) },
    ],
    ['PostgreSQL 12', { postgresVersion: '12' }],
    ['PostgreSQL 13', { postgresVersion: '13' }],
    ['role postgres', { managedRoles: [{ name: 'postgres' }] }],
    ['role streaming_replica', { managedRoles: [{ name: 'streaming_replica' }] }],
    ['role cnpg_x', { managedRoles: [{ name: 'cnpg_x' }] }],
    ['role pg_x', { managedRoles: [{ name: 'pg_x' }] }],
    ['role pgadmin', { managedRoles: [{ name: 'pgadmin' }] }],
    ['name my.db', {}, 'my.db'],
    // The day-one fields: CNPG's image, storage, toleration and anti-affinity rules.
    ['a pinned image', { imageName: 'ghcr.io/cloudnative-pg/postgresql:17.2-standard-bookworm' }],
    ['an image tagged latest', { imageName: 'ghcr.io/cloudnative-pg/postgresql:latest' }],
    ['an image by digest alone', { imageName: `ghcr.io/cloudnative-pg/postgresql@sha256:${'a'.repeat(64)}` }],
    // CNPG reads 17 from 17beta1; pgfsm wants a separator after the major.
    ['an image tagged 17beta1', { imageName: 'ghcr.io/cloudnative-pg/postgresql:17beta1' }, undefined, true],
    ['a storage class and a WAL volume', { storageClass: 'fast', walStorage: { size: '1Gi', storageClass: 'wal' } }],
    [
      'affinity, topology spread and monitoring',
      {
        affinity: {
          enablePodAntiAffinity: true,
          topologyKey: 'topology.kubernetes.io/zone',
          podAntiAffinityType: 'required',
          nodeSelector: { 'example.com/db': 'true' },
          tolerations: [{ key: 'db', operator: 'Exists', effect: 'NoSchedule' }],
        },
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }],
        monitoring: { enablePodMonitor: true },
      },
    ],
    ['a toleration without key, operator Equal', { affinity: { tolerations: [{ operator: 'Equal', value: 'x' }] } }],
    [
      'a toleration with a key that is no label name',
      { affinity: { tolerations: [{ key: 'a b', operator: 'Exists' }] } },
    ],
    [
      'tolerationSeconds without NoExecute',
      { affinity: { tolerations: [{ key: 'k', effect: 'NoSchedule', tolerationSeconds: 5 }] } },
    ],
    ['a toleration Exists with a value', { affinity: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] } }],
    [
      'a toleration with an unknown effect',
      { affinity: { tolerations: [{ key: 'k', effect: 'Evict' as 'NoExecute' }] } },
    ],
    ['an unknown anti-affinity type', { affinity: { podAntiAffinityType: 'strict' as 'required' } }],
    // CNPG does not look at these; the API server refuses the Pods CNPG would make of them.
    [
      'minDomains under ScheduleAnyway',
      {
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'z', whenUnsatisfiable: 'ScheduleAnyway', minDomains: 2 },
        ],
      },
      undefined,
      true,
    ],
    ['name 1orders', {}, '1orders'],
  ];

  it.each(cases)('the CNPG Cluster for %s', async (_what, change, name, stricter) => {
    const config = { ...BASE, ...change };
    const observation = observationOf(name ?? unique('agree'), config);
    const cluster = desiredCnpgCluster(observation, config);
    cluster.metadata.ownerReferences = [];
    cluster.spec.managed = { roles: config.managedRoles.map((role) => ({ name: role.name, ensure: 'present' })) };
    const refused = await cnpgRefusal('clusters', cluster);
    const merged = mergeConfig(observation);
    const pgfsm = merged.ok ? undefined : merged.message;
    // The CRD judges the same spec alone; it may leave a cross-field rule to the merge check, never refuse more.
    const crd = await api()
      .createNamespacedCustomObject({
        ...clusters,
        namespace,
        dryRun: 'All',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'PostgresCluster',
          metadata: { name: cluster.metadata.name },
          spec: observation.cluster.spec,
        },
      })
      .then(
        () => undefined,
        (error: unknown) => String(error),
      );
    if (stricter) {
      expect(refused, 'CNPG accepts it').toBeUndefined();
      expect(pgfsm, 'pgfsm refuses it').toBeDefined();
    } else {
      expect(pgfsm === undefined, `CNPG: ${refused ?? 'accepted'}; pgfsm: ${pgfsm ?? 'accepted'}`).toBe(
        refused === undefined,
      );
      if (crd !== undefined) expect(refused, `the CRD refuses what CNPG accepts: ${crd}`).toBeDefined();
    }
  });

  it.each([
    [{ listen_port: '6432' }],
    [{ pool_mode: 'session' }],
    [{ unix_socket_dir: '/tmp' }],
    [{ default_pool_size: '10', max_client_conn: '100', verbose: '1' }],
  ])('the CNPG Pooler for parameters %j', async (parameters) => {
    const observation = observationOf('pooled', BASE);
    observation.clusterClass = makeClass({ cnpg: { connectionPooler: { parameters } } });
    observation.cluster.spec = { ...observation.cluster.spec, connectionPoolerEnabled: true };
    const merged = mergeConfig(observation);
    const pooler = desiredPooler(observation, { instances: 1, mode: 'transaction', parameters }, 'rw');
    pooler.metadata.ownerReferences = [];
    const refused = await cnpgRefusal('poolers', pooler);
    expect(merged.ok, `CNPG: ${refused ?? 'accepted'}; pgfsm: ${merged.ok ? 'accepted' : merged.message}`).toBe(
      refused === undefined,
    );
  });

  /**
   * CNPG 1.29 added `${podselector:NAME}` references to pg_hba lines (expanded to the addresses of the Pods a
   * selector of `spec.podSelectorRefs` picks) and refuses a line whose reference it cannot expand; pgfsm writes no
   * selectors, so from 1.29 on every such line is refused. 1.28 copies it into pg_hba.conf as it is. pgfsm's CRD
   * and merge check refuse the line first (docs/cnpg-admission.md, C67; test/integration/cnpg-refusal.test.ts); this
   * shows what each CNPG would do with it.
   */
  it.each([
    ['host all all \u0024{podselector:app} scram-sha-256', true],
    ['host all all \u0024{node:a} md5', true],
    ['host all all 10.0.0.0/8 scram-sha-256', false],
    ['host all $user 10.0.0.0/8 md5', false],
  ])(
    'the CNPG Cluster for pg_hba line %j: refused by CNPG 1.29 and later when it holds a reference',
    async (line, reference) => {
      const config = { ...BASE, pgHBA: [line] };
      const cluster = desiredCnpgCluster(observationOf(unique('hba'), config), config);
      cluster.metadata.ownerReferences = [];
      expect(cluster.spec.postgresql?.pg_hba).toEqual([line]);
      expect(hasPgHbaReference(line)).toBe(reference);
      const [major = 0, minor = 0] = CNPG_VERSION.slice(1).split('.').map(Number);
      const expands = major > 1 || (major === 1 && minor >= 29);
      const refused = await cnpgRefusal('clusters', cluster);
      if (reference && expands) expect(refused).toMatch(/spec\.postgresql\.pg_hba\[0\]/);
      else expect(refused, `CNPG ${CNPG_VERSION} accepts it`).toBeUndefined();
    },
  );

  /** Issue 36: what the backup builders return, judged by CNPG's own webhooks (dry runs: nothing is stored). */
  describe('backups and restore', () => {
    const clusterClass = makeClass({
      backup: {
        objectStore: { destinationPath: 's3://pg-backups/prod', credentials: { secretName: 's3-creds' } },
        schedule: '30 2 * * 1-5',
        retention: '7d',
      },
    });
    const backedUp = (name: string, restore?: PostgresClusterSpec['restore']) => {
      const base = observationOf(name, BASE);
      const observation: Observation = {
        ...base,
        clusterClass,
        cluster: { ...base.cluster, spec: { ...base.cluster.spec, ...(restore ? { restore } : {}) } },
      };
      const merged = mergeConfig(observation);
      if (!merged.ok) throw new Error(merged.message);
      return { observation, config: merged.config };
    };
    const unowned = <T extends { metadata: { ownerReferences?: unknown[] } }>(object: T): T => {
      object.metadata.ownerReferences = [];
      return object;
    };

    it('the CNPG Cluster that archives through the plugin; refused beside an in-tree object store', async () => {
      const { observation, config } = backedUp(unique('backed'));
      const cluster = unowned(desiredCnpgCluster(observation, config));
      expect(cluster.spec.plugins).toHaveLength(1);
      expect(await cnpgRefusal('clusters', cluster)).toBeUndefined();
      cluster.spec.backup = {
        barmanObjectStore: { destinationPath: 's3://x', s3Credentials: { inheritFromIAMRole: true } },
      };
      expect(await cnpgRefusal('clusters', cluster)).toContain('WAL archiver plugin');
    });

    it('the CNPG Cluster restored from an archive to a point in time', async () => {
      const { observation, config } = backedUp(unique('restored'), {
        source: { serverName: 'gone-3f2a9c1d' },
        targetTime: '2026-11-20T10:15:30.123456+01:00',
      });
      const restore = restoreOf(observation, config, Date.parse('2026-12-01T00:00:00Z'));
      const cluster = unowned(desiredCnpgCluster(observation, config, restore));
      expect(cluster.spec.bootstrap?.recovery?.recoveryTarget?.targetTime).toBe('2026-11-20T10:15:30.123456+01:00');
      expect(await cnpgRefusal('clusters', cluster)).toBeUndefined();
    });

    it('the ScheduledBackup and the on-demand Backup', async () => {
      const { observation, config } = backedUp(unique('scheduled'));
      if (!config.backup) throw new Error('not backed up');
      const scheduled = unowned(desiredScheduledBackup(observation.cluster, config.backup));
      expect(scheduled.spec.schedule).toBe('0 30 2 * * 1-5');
      expect(await cnpgRefusal('scheduledbackups', scheduled)).toBeUndefined();
      const name = onDemandBackupName(observation.cluster.metadata.name, '1733572800');
      expect(await cnpgRefusal('backups', unowned(desiredOnDemandBackup(observation.cluster, name)))).toBeUndefined();
    });
  });
});

describe('PostgresDatabase create and update', () => {
  const databases = { group: GROUP, version: VERSION, plural: 'postgresdatabases' };
  const valid = {
    cluster: 'orders',
    name: 'app',
    owner: 'app_owner',
    users: [
      { name: 'writer', access: 'readWrite' },
      { name: 'reporting', access: 'readOnly' },
    ],
    schemas: [{ name: 'sales' }],
    extensions: [{ name: 'pg_stat_statements' }],
    deletionPolicy: 'Delete',
  };
  const createDatabase = (name: string, spec: Record<string, unknown>) =>
    api().createNamespacedCustomObject({
      ...databases,
      namespace,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'PostgresDatabase', metadata: { name }, spec },
    });
  const patchDatabase = (name: string, spec: Record<string, unknown>) =>
    api().patchNamespacedCustomObject({ ...databases, namespace, name, body: { spec } }, mergePatch);

  it('accepts a full valid spec, and defaults the policy to Retain and the access to readWrite', async () => {
    await createDatabase(unique('db'), valid);
    const name = unique('db');
    await createDatabase(name, { cluster: 'orders', name: 'plain', owner: 'plain_owner', users: [{ name: 'u' }] });
    const stored = (await api().getNamespacedCustomObject({ ...databases, namespace, name })) as {
      spec: { deletionPolicy: string; users: Array<{ access: string }> };
    };
    expect(stored.spec.deletionPolicy).toBe('Retain');
    expect(stored.spec.users[0]?.access).toBe('readWrite');
  });

  it.each([
    [{ name: 'App' }, 'spec.name', 'plain PostgreSQL identifier'],
    [{ name: '1app' }, 'spec.name', 'plain PostgreSQL identifier'],
    [{ name: 'postgres' }, 'spec.name', 'name cannot be postgres, template0, template1'],
    [{ name: 'template1' }, 'spec.name', 'PostgreSQL keeps them'],
    [{ owner: 'postgres' }, 'spec.owner', 'CloudNativePG and PostgreSQL reserve them'],
    [{ owner: 'pg_owner' }, 'spec.owner', 'nor start with cnpg_ or pg_'],
    [{ owner: 'has-dash' }, 'spec.owner', 'plain PostgreSQL identifier'],
    [{ users: [{ name: 'app_owner' }] }, 'spec.users', 'users[].name must differ from owner'],
    [{ users: [{ name: 'public' }] }, 'spec.users[0].name', 'reserve them'],
    [{ users: [{ name: 'u', access: 'admin' }] }, 'spec.users[0].access', 'Unsupported value'],
    [{ users: [{ name: 'u' }, { name: 'u' }] }, 'spec.users[1]', 'Duplicate value'],
    [{ schemas: [{ name: 'Sales' }] }, 'spec.schemas[0].name', 'schema name must be a plain PostgreSQL identifier'],
    [{ deletionPolicy: 'Drop' }, 'spec.deletionPolicy', 'Unsupported value'],
  ])('refuses %j naming %s', async (change, field, text) => {
    await expectInvalid(createDatabase(unique('db'), { ...valid, ...change }), field, text);
  });

  it('refuses a name whose Secrets could not be named', async () => {
    await expectInvalid(createDatabase(`x${'a'.repeat(50)}`, valid), 'metadata.name', 'at most 50 characters');
  });

  it.each([
    [{ cluster: 'other' }, 'spec.cluster', 'cluster is immutable'],
    [{ name: 'other' }, 'spec.name', 'name is immutable'],
    [{ owner: 'other_owner' }, 'spec.owner', 'owner is immutable'],
  ])('keeps %j immutable', async (change, field, text) => {
    const name = unique('db');
    await createDatabase(name, valid);
    await expectInvalid(patchDatabase(name, change), field, text);
    await patchDatabase(name, { users: [{ name: 'writer', access: 'readOnly' }] });
  });
});
