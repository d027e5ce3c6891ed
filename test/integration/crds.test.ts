/**
 * The generated CRDs (deploy/crds) on a real kube-apiserver: they install (so every CEL rule compiles and
 * fits the cost budget), the server rejects each invalid spec with 422 and a message naming the field,
 * and it accepts the valid specs and updates next to them.
 */
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../src/operator/api/schema.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
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

describe('pgfsm CRDs on a real API server', () => {
  it('install and become Established, so every CEL rule compiled', () => {
    expect([...installed].sort()).toEqual(['postgresclusterclasses.pgfsm.io', 'postgresclusters.pgfsm.io']);
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
});
