/**
 * CloudNativePG's real operator beside the local control plane, for its admission webhooks (and, in one
 * namespace, its controllers).
 *
 * - CNPG's real CRDs, read at run time from its Go module directory (`config/crd/bases`), all of them: the
 *   controller watches every kind it owns and would not start with one missing.
 * - `manager controller` runs out of cluster with the admin kubeconfig. `WEBHOOK_CERT_DIR` hands it a serving
 *   certificate for 127.0.0.1 signed by the control plane's CA, so it skips its own PKI set-up (a Service, a
 *   Secret, patching the webhook configurations). `WATCH_NAMESPACE` keeps its controllers in one namespace
 *   that nothing else uses; everywhere else the CNPG simulator plays the controller.
 * - The mutating and validating webhook configurations of `config/webhook/manifests.yaml`, renamed `cnpg-…`,
 *   each `clientConfig.service` replaced by a loopback `url` and the CA bundle. They are cluster-wide: every
 *   Cluster and Pooler written in any namespace is defaulted and validated by CNPG's own code.
 * - It lists `operator/manager_<arch>` relative to its working directory to learn which architectures it can
 *   run, and fails every status update without one; its working directory holds a link to the binary there.
 */
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  loadAllYaml,
} from '@kubernetes/client-node';
import { createManifests, installCrds, manifestFiles } from '../install/manifests.ts';
import type { CnpgAssets } from './build.ts';
import { issueServingCertificate, type Pki } from './certs.ts';
import type { Log } from './log.ts';
import { freePorts } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntil } from './processes.ts';

/** The namespace CNPG's controllers watch and act in; the simulator stays out of it. */
export const CNPG_WATCH_NAMESPACE = 'cnpg-controlled';
/** The namespace CNPG considers its own (its optional configuration ConfigMap/Secret would live there). */
export const CNPG_OPERATOR_NAMESPACE = 'cnpg-system';
export const CNPG_WEBHOOK_CONFIGURATIONS = {
  mutating: 'cnpg-mutating-webhook-configuration',
  validating: 'cnpg-validating-webhook-configuration',
} as const;

export interface RunningCnpg {
  /** e.g. `v1.30.1`, from the binary itself. */
  readonly version: string;
  readonly watchNamespace: string;
  readonly operatorNamespace: string;
  /** `https://127.0.0.1:<port>` */
  readonly webhookUrl: string;
  /** Names of the CRDs installed from CNPG's module. */
  readonly crds: string[];
  readonly moduleDir: string;
  readonly logFile: string;
}

/** Go's name for this machine's architecture, as in CNPG's `operator/manager_<arch>`. */
export function goArch(arch: string = process.arch): string {
  const names: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };
  return names[arch] ?? arch;
}

export const cnpgCrdFiles = (moduleDir: string) => manifestFiles(join(moduleDir, 'config/crd/bases'));

interface WebhookConfiguration extends KubernetesObject {
  webhooks?: Array<{ clientConfig?: { service?: { path?: string }; url?: string; caBundle?: string } }>;
}

/**
 * CNPG's two webhook configurations, renamed `cnpg-…`, with every `clientConfig` pointing at `webhookUrl` plus
 * the webhook's own path, trusted through `caBundle` (base64 PEM).
 */
export function cnpgWebhookConfigurations(
  moduleDir: string,
  webhookUrl: string,
  caBundle: string,
): WebhookConfiguration[] {
  const objects = loadAllYaml(
    readFileSync(join(moduleDir, 'config/webhook/manifests.yaml'), 'utf8'),
  ) as Array<WebhookConfiguration | null>;
  const configurations = objects.filter((o): o is WebhookConfiguration => typeof o?.kind === 'string');
  const wanted = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];
  if (wanted.some((kind) => !configurations.some((c) => c.kind === kind))) {
    throw new Error(`${moduleDir}/config/webhook/manifests.yaml lacks one of ${wanted.join(', ')}`);
  }
  return configurations.map((configuration) => ({
    ...configuration,
    metadata: {
      name:
        configuration.kind === 'MutatingWebhookConfiguration'
          ? CNPG_WEBHOOK_CONFIGURATIONS.mutating
          : CNPG_WEBHOOK_CONFIGURATIONS.validating,
    },
    webhooks: (configuration.webhooks ?? []).map((webhook) => {
      const path = webhook.clientConfig?.service?.path;
      if (!path) throw new Error(`a CNPG webhook without clientConfig.service.path: ${JSON.stringify(webhook)}`);
      return { ...webhook, clientConfig: { url: `${webhookUrl}${path}`, caBundle } };
    }),
  }));
}

/** A Cluster CNPG's defaulting webhook fills in (`imageName`), written as a server-side dry run only. */
const probeCluster = (namespace: string) => ({
  apiVersion: 'postgresql.cnpg.io/v1',
  kind: 'Cluster',
  metadata: { name: 'webhook-probe', namespace },
  spec: { instances: 1, storage: { size: '1Gi' } },
});

export interface StartCnpgOptions {
  assets: CnpgAssets;
  version: string;
  pki: Pki;
  /** A directory of the control plane's own (removed with it). */
  dir: string;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  log: Log;
  /** Receives the process as soon as it runs, so the control plane stops it whatever happens next. */
  onProcess: (process: ManagedProcess) => void;
  /** Processes whose death should end the wait (etcd, kube-apiserver). */
  watch: ManagedProcess[];
}

export async function startCnpg(options: StartCnpgOptions): Promise<RunningCnpg> {
  const { assets, kubeConfig: kc, log } = options;
  const crds = await installCrds(kc, cnpgCrdFiles(assets.moduleDir), options.timeoutMs);
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of [CNPG_OPERATOR_NAMESPACE, CNPG_WATCH_NAMESPACE]) {
    await core.createNamespace({ body: { metadata: { name } } });
  }

  const home = join(options.dir, 'cnpg');
  const certDir = join(home, 'webhook-certs');
  await issueServingCertificate(options.pki, certDir, { cert: 'apiserver.crt', key: 'apiserver.key' }, 'cnpg-webhook');
  mkdirSync(join(home, 'operator'), { recursive: true });
  symlinkSync(assets.manager, join(home, 'operator', `manager_${goArch()}`));

  const [port] = await freePorts(1);
  const webhookUrl = `https://127.0.0.1:${port}`;
  const logFile = join(options.dir, 'logs', 'cnpg-manager.log');
  const manager = startProcess({
    name: 'cnpg-manager',
    command: assets.manager,
    args: [
      'controller',
      `--webhook-port=${port}`,
      '--leader-elect=false',
      // "0" turns the metrics server off (its default is :8080 on every interface).
      '--metrics-bind-address=0',
    ],
    cwd: home,
    logFile,
    env: {
      ...options.env,
      KUBECONFIG: options.kubeconfigPath,
      WATCH_NAMESPACE: CNPG_WATCH_NAMESPACE,
      OPERATOR_NAMESPACE: CNPG_OPERATOR_NAMESPACE,
      WEBHOOK_CERT_DIR: certDir,
    },
  });
  options.onProcess(manager);

  const caBundle = readFileSync(options.pki.caCert).toString('base64');
  await createManifests(kc, cnpgWebhookConfigurations(assets.moduleDir, webhookUrl, caBundle));

  // Ready when the API server's call to CNPG's mutating webhook comes back with CNPG's defaults: the whole path
  // (API server → loopback URL → CNPG's TLS with our CA → CNPG's defaulting code) works.
  const custom = kc.makeApiClient(CustomObjectsApi);
  await waitUntil(
    `CloudNativePG's webhooks at ${webhookUrl}`,
    async () => {
      try {
        const defaulted = (await custom.createNamespacedCustomObject({
          group: 'postgresql.cnpg.io',
          version: 'v1',
          plural: 'clusters',
          namespace: CNPG_OPERATOR_NAMESPACE,
          body: probeCluster(CNPG_OPERATOR_NAMESPACE),
          dryRun: 'All',
        })) as { spec?: { imageName?: string } };
        if (defaulted.spec?.imageName) return true;
        throw new Error(`the dry-run Cluster came back without CNPG's defaults: ${JSON.stringify(defaulted.spec)}`);
      } catch (error) {
        if (error instanceof ApiException) throw new Error(`HTTP ${error.code}: ${String(error.body).slice(0, 300)}`);
        throw error;
      }
    },
    { timeoutMs: options.timeoutMs, watch: [...options.watch, manager] },
  );
  log(
    `CloudNativePG ${options.version} webhooks active at ${webhookUrl} (pid ${manager.pid}); its controllers ` +
      `watch namespace ${CNPG_WATCH_NAMESPACE}`,
  );
  return {
    version: options.version,
    watchNamespace: CNPG_WATCH_NAMESPACE,
    operatorNamespace: CNPG_OPERATOR_NAMESPACE,
    webhookUrl,
    crds,
    moduleDir: assets.moduleDir,
    logFile,
  };
}
