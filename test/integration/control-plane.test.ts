/**
 * The real control plane itself: a kube-apiserver + etcd (+ kube-controller-manager, + CloudNativePG's operator)
 * on 127.0.0.1, reached through @kubernetes/client-node 1.4.0. These tests prove the harness gives later
 * integration tests what they rely on: a ready server, persistence, enforced RBAC, real signed service-account
 * tokens, (when the controller manager runs) real garbage collection, CNPG's webhooks registered on loopback; and
 * that a CNPG binary or module that cannot be had is a loud failure naming the step, never a skip.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  ApiException,
  AuthenticationV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCnpgModule } from '../../src/tools/control-plane/build.ts';
import {
  CNPG_VERSION,
  type ControlPlane,
  describeControlPlane,
  ensureBinaries,
  KUBERNETES_VERSION,
  MissingBinariesError,
  startControlPlane,
} from '../../src/tools/control-plane/index.ts';

let controlPlane: ControlPlane | undefined;

function cp(): ControlPlane {
  if (!controlPlane) throw new Error('the control plane did not start (see the beforeAll error)');
  return controlPlane;
}

/** GET with exactly the TLS material client-node would use for this KubeConfig. */
async function rawGet(kc: KubeConfig, path: string): Promise<{ status: number; body: string }> {
  const options: import('node:https').RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = new URL(path, kc.getCurrentCluster()?.server);
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, method: 'GET', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** HTTP status of a client-node call: 200 when it succeeds, the ApiException code when it fails. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

/** Polls until `check` returns true; RBAC and the controllers act through caches, so effects lag a little. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const suffix = Date.now().toString(36);

beforeAll(async () => {
  controlPlane = await startControlPlane();
  console.log(describeControlPlane(controlPlane));
});

afterAll(async () => {
  if (!controlPlane) return;
  const { dir, pids } = controlPlane;
  await controlPlane.stop();
  // Teardown is part of the contract: no server survives and no temp files stay behind.
  expect(existsSync(dir)).toBe(false);
  for (const [name, pid] of Object.entries(pids)) expect(isAlive(pid), `${name} (pid ${pid})`).toBe(false);
});

describe('real control plane', () => {
  it('runs the kube-apiserver binary it was given, on loopback', async () => {
    expect(cp().serverVersion).toBe(cp().binaries.versions.kubeApiserver);
    expect(cp().serverVersion).toMatch(/^v1\.\d+\.\d+$/);
    // The version a compat row picks (PGFSM_KUBERNETES_VERSION) is the one that runs, unless binaries were handed in.
    const handedIn = Boolean(process.env.TEST_ASSET_KUBE_APISERVER || process.env.KUBEBUILDER_ASSETS);
    expect(cp().serverVersion).toBe(handedIn ? cp().binaries.versions.kubeApiserver : KUBERNETES_VERSION);
    expect(cp().url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(existsSync(cp().kubeconfigPath)).toBe(true);
  });

  it('is ready, including etcd and the RBAC bootstrap policy', async () => {
    const ready = await rawGet(cp().kubeConfig, '/readyz');
    expect(ready).toEqual({ status: 200, body: 'ok' });
    const verbose = await rawGet(cp().kubeConfig, '/readyz?verbose');
    expect(verbose.body).toContain('[+]etcd ok');
    expect(verbose.body).toContain('[+]poststarthook/rbac/bootstrap-roles ok');
  });

  it('stores and returns a Namespace and a ConfigMap, and validates them server-side', async () => {
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    const namespace = `cp-objects-${suffix}`;
    const ns = await core.createNamespace({ body: { metadata: { name: namespace } } });
    expect(ns.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(ns.status?.phase).toBe('Active');

    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'settings', labels: { app: 'pgfsm' } }, data: { greeting: 'hello' } },
    });
    const read = await core.readNamespacedConfigMap({ name: 'settings', namespace });
    expect(read.data).toEqual({ greeting: 'hello' });
    expect(read.metadata?.resourceVersion).toMatch(/^\d+$/);
    const listed = await core.listNamespacedConfigMap({ namespace, labelSelector: 'app=pgfsm' });
    expect(listed.items.map((cm) => cm.metadata?.name)).toEqual(['settings']);

    // Only a real API server rejects an invalid object name (422 Unprocessable Entity).
    const invalid = core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'Not_A_DNS_Name' } } });
    expect(await statusOf(invalid)).toBe(422);
  });

  it('enforces RBAC for a ServiceAccount token: 403 without a RoleBinding, 200 with one', async () => {
    const admin = cp().kubeConfig;
    const core = admin.makeApiClient(CoreV1Api);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const namespace = `cp-rbac-${suffix}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'db-password' }, stringData: { p: 'x' } },
    });
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'reader' } } });

    const token = await cp().tokenFor(`${namespace}/reader`);
    const readerConfig = cp().kubeConfigForToken(token);
    const reader = readerConfig.makeApiClient(CoreV1Api);

    // The token is a real, signed service-account token: the server maps it to the ServiceAccount's identity.
    const review = await readerConfig.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${namespace}:reader`);

    expect(await statusOf(reader.listNamespacedSecret({ namespace }))).toBe(403);

    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'secret-reader' },
        rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'reader-reads-secrets' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'secret-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
      },
    });
    // The authorizer sees new bindings through its informer, typically within milliseconds.
    await eventually('the RoleBinding takes effect', async () => {
      return (await statusOf(reader.listNamespacedSecret({ namespace }))) === 200;
    });
    const secrets = await reader.listNamespacedSecret({ namespace });
    expect(secrets.items.map((s) => s.metadata?.name)).toEqual(['db-password']);

    // The grant is exactly what the Role says: no other namespace, no other verb.
    expect(await statusOf(reader.listNamespacedSecret({ namespace: 'default' }))).toBe(403);
    const write = reader.createNamespacedSecret({ namespace, body: { metadata: { name: 'sneaky' } } });
    expect(await statusOf(write)).toBe(403);
  });

  it('rejects a service-account token whose signature was tampered with (401)', async () => {
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    const namespace = `cp-tamper-${suffix}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'bot' } } });
    const token = await cp().tokenFor({ namespace, name: 'bot' });
    const [header, payload, signature] = token.split('.');
    expect(signature?.length).toBeGreaterThan(100);
    const middle = Math.floor((signature ?? '').length / 2);
    const flipped = signature?.[middle] === 'A' ? 'B' : 'A';
    const forged = `${header}.${payload}.${signature?.slice(0, middle)}${flipped}${signature?.slice(middle + 1)}`;

    const genuine = cp().kubeConfigForToken(token).makeApiClient(AuthenticationV1Api);
    const fake = cp().kubeConfigForToken(forged).makeApiClient(AuthenticationV1Api);
    const body = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };
    expect(await statusOf(genuine.createSelfSubjectReview({ body }))).toBe(200);
    expect(await statusOf(fake.createSelfSubjectReview({ body }))).toBe(401);
  });

  it('garbage-collects owned objects and finishes namespace deletion only when kube-controller-manager runs', async () => {
    const core = cp().kubeConfig.makeApiClient(CoreV1Api);
    const namespace = `cp-gc-${suffix}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'owner' } } });
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'dependent',
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' }],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace });
    const dependentGone = async () =>
      (await statusOf(core.readNamespacedConfigMap({ name: 'dependent', namespace }))) === 404;

    if (cp().controllerManager) {
      await eventually('the garbage collector deletes the dependent', dependentGone);
      await core.deleteNamespace({ name: namespace });
      await eventually(
        'the namespace controller finishes deleting the namespace',
        async () => (await statusOf(core.readNamespace({ name: namespace }))) === 404,
      );
    } else {
      // envtest semantics (assets without kube-controller-manager): nothing collects the dependent.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await dependentGone()).toBe(false);
    }
  });
});

describe("CloudNativePG's operator with the control plane", () => {
  it('runs as one of its processes, its webhooks registered under cnpg-… names with loopback URLs and our CA', async () => {
    expect(cp().pids['cnpg-manager']).toBeGreaterThan(0);
    expect(describeControlPlane(cp())).toMatch(
      new RegExp(
        `^kube-apiserver v1\\.\\d+\\.\\d+ at https://127\\.0\\.0\\.1:\\d+, CloudNativePG ${CNPG_VERSION} webhooks active$`,
      ),
    );
    const admission = cp().kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const mutating = await admission.readMutatingWebhookConfiguration({ name: 'cnpg-mutating-webhook-configuration' });
    const validating = await admission.readValidatingWebhookConfiguration({
      name: 'cnpg-validating-webhook-configuration',
    });
    const webhooks = [...(mutating.webhooks ?? []), ...(validating.webhooks ?? [])];
    expect(webhooks.map((w) => w.name)).toEqual(
      expect.arrayContaining(['mcluster.cnpg.io', 'vcluster.cnpg.io', 'vpooler.cnpg.io']),
    );
    for (const webhook of webhooks) {
      expect(webhook.clientConfig.service).toBeUndefined();
      expect(webhook.clientConfig.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/(mutate|validate)-postgresql-cnpg-io-v1-/);
      expect(webhook.clientConfig.caBundle).toBeTruthy();
      expect(webhook.failurePolicy).toBe('Fail');
    }
  });
});

describe('getting CloudNativePG: loud failures, never a skip', () => {
  /** Runs `fn` with some environment variables set (undefined: unset), restoring them afterwards. */
  async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(vars)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    try {
      return await fn();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }

  const scratch = mkdtempSync(join(tmpdir(), 'pgfsm-cnpg-fetch-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  /** A `go` that is new enough but fails every other command, saying so on stderr. */
  const failingGo = join(scratch, 'go');
  writeFileSync(
    failingGo,
    '#!/bin/sh\nif [ "$1 $2" = "env GOVERSION" ]; then echo go1.26.8; exit 0; fi\n' +
      'echo "go: github.com/cloudnative-pg/cloudnative-pg@v1.28.0: reading proxy: 403 Forbidden" >&2; exit 1\n',
  );
  chmodSync(failingGo, 0o755);
  const known = () => cp().binaries;

  it('without the binary and without Go: MissingBinariesError naming CNPG and how to get it', async () => {
    const error = await withEnv(
      {
        GO: join(scratch, 'no-such-go'),
        PGFSM_CONTROL_PLANE_CACHE: join(scratch, 'empty-cache'),
        PGFSM_CNPG_MODULE_DIR: undefined,
        TEST_ASSET_CNPG_MANAGER: undefined,
        KUBEBUILDER_ASSETS: undefined,
        TEST_ASSET_KUBE_APISERVER: known().kubeApiserver,
        TEST_ASSET_ETCD: known().etcd,
      },
      () =>
        ensureBinaries({ cnpg: true, log: () => {} }).then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    expect(error).toBeInstanceOf(MissingBinariesError);
    const message = (error as Error).message;
    expect(message).toContain(`cnpg-manager ${CNPG_VERSION} not found`);
    expect(message).toContain('npm run control-plane -- build');
    expect(message).toContain('TEST_ASSET_CNPG_MANAGER');
  });

  it("a failing step of the module fetch fails with the step's command and its output", async () => {
    const error = await withEnv({ GO: failingGo, PGFSM_CNPG_MODULE_DIR: undefined }, () =>
      ensureCnpgModule({ cacheDir: join(scratch, 'fetch-cache'), log: () => {} }).then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    const message = (error as Error).message;
    expect(message).toContain(`fetching github.com/cloudnative-pg/cloudnative-pg ${CNPG_VERSION} failed during`);
    expect(message).toContain('go mod download github.com/cloudnative-pg/cloudnative-pg (exit 1)');
    expect(message).toContain('reading proxy: 403 Forbidden');
  });

  it('a failing build fails with the step and its output, and leaves no binary in the cache', async () => {
    const cacheDir = join(scratch, 'build-cache');
    const error = await withEnv(
      {
        GO: failingGo,
        TEST_ASSET_CNPG_MANAGER: undefined,
        KUBEBUILDER_ASSETS: undefined,
        TEST_ASSET_KUBE_APISERVER: known().kubeApiserver,
        TEST_ASSET_ETCD: known().etcd,
      },
      () =>
        ensureBinaries({ cnpg: true, cacheDir, log: () => {} }).then(
          () => undefined,
          (e: unknown) => e,
        ),
    );
    const message = (error as Error).message;
    expect(message).toContain(`building cnpg-manager ${CNPG_VERSION} failed during module download`);
    expect(message).toContain('reading proxy: 403 Forbidden');
    expect(existsSync(join(cacheDir, `cnpg-manager-${CNPG_VERSION}`, 'cnpg-manager'))).toBe(false);
  });
});
