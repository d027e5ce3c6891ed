/**
 * Installs the Barman Cloud Plugin (issue 36) into CloudNativePG's namespace from objects of our own, without
 * cert-manager: the ObjectStore CRD and the RBAC from the plugin's Go module (`config/crd`, `config/rbac`, read
 * where Go put the module, as CloudNativePG's manifests are), TLS Secrets made with openssl, the Deployment, and
 * the Service whose label and annotations CloudNativePG discovers plugins by.
 *
 * CloudNativePG's operator runs as a Pod of the node (install.ts), so it resolves the name it dials,
 * `barman-cloud.cnpg-system.svc`, with the node's CoreDNS like any Pod. Its plugin controller checks the server's
 * certificate against the server Secret's `tls.crt` with that name, and presents the client Secret's certificate,
 * which the plugin checks against the client Secret's `tls.crt`.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { createCa, issueCertificate } from '../control-plane/certs.ts';
import type { Log } from '../control-plane/log.ts';
import { waitUntil } from '../control-plane/processes.ts';
import { packageFile } from '../package-files.ts';
import { CNPG_NAMESPACE, deploymentRolledOut } from './install.ts';
import type { RealNode } from './node.ts';

const execFileAsync = promisify(execFile);

export const PLUGIN_NAME = 'barman-cloud.cloudnative-pg.io';
export const PLUGIN_SERVICE = 'barman-cloud';
export const PLUGIN_PORT = 9090;
export const SERVER_SECRET = 'barman-cloud-server-tls';
export const CLIENT_SECRET = 'barman-cloud-client-tls';
/** The ServiceAccount the module's config/rbac binds its ClusterRole and leader-election Role to. */
export const PLUGIN_SERVICE_ACCOUNT = 'plugin-barman-cloud';
/** The names CloudNativePG may dial the plugin by (1.28: bare; 1.29.2 and later: `<name>.<namespace>.svc`). */
export const PLUGIN_SERVER_NAMES = [PLUGIN_SERVICE, `${PLUGIN_SERVICE}.${CNPG_NAMESPACE}.svc`];

const WRAPPER = packageFile('src/tools/control-plane/modules/barman-cloud');
const MODULE = 'github.com/cloudnative-pg/plugin-barman-cloud';

/** Where Go put the plugin's module (the wrapper pins its version): its config/crd and config/rbac are read there. */
export async function barmanCloudModuleDir(): Promise<string> {
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', GOFLAGS: '-mod=readonly' };
  const go = process.env.GO || 'go';
  await execFileAsync(go, ['mod', 'download', MODULE], { cwd: WRAPPER, env, timeout: 600_000 });
  const { stdout } = await execFileAsync(go, ['list', '-m', '-f', '{{.Dir}}', MODULE], { cwd: WRAPPER, env });
  return stdout.trim();
}

/** A Secret of kind kubernetes.io/tls with the CA beside the pair, the shape cert-manager gives upstream. */
const tlsSecret = (name: string, files: { cert: string; key: string; ca: string }) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: CNPG_NAMESPACE },
  type: 'kubernetes.io/tls',
  data: {
    'tls.crt': readFileSync(files.cert).toString('base64'),
    'tls.key': readFileSync(files.key).toString('base64'),
    'ca.crt': readFileSync(files.ca).toString('base64'),
  },
});

/**
 * A CA of the plugin's own, a server certificate for the names CloudNativePG dials and a client certificate for
 * CloudNativePG; each Secret's `tls.crt` carries its certificate then the CA, so that either side, trusting that
 * file, accepts the chain.
 */
export async function pluginCertificates(dir: string) {
  await createCa(dir, 'pgfsm-barman-cloud-ca', '30');
  const san = PLUGIN_SERVER_NAMES.map((n) => `DNS:${n}`).join(',');
  await issueCertificate(
    dir,
    'server',
    `/CN=${PLUGIN_SERVICE}`,
    `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`,
  );
  await issueCertificate(
    dir,
    'client',
    `/CN=${PLUGIN_SERVICE}-client`,
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n',
  );
  const ca = join(dir, 'ca.crt');
  const chain = (name: string) => {
    const path = join(dir, `${name}-chain.crt`);
    writeFileSync(path, readFileSync(join(dir, `${name}.crt`), 'utf8') + readFileSync(ca, 'utf8'));
    return path;
  };
  return [
    tlsSecret(SERVER_SECRET, { cert: chain('server'), key: join(dir, 'server.key'), ca }),
    tlsSecret(CLIENT_SECRET, { cert: chain('client'), key: join(dir, 'client.key'), ca }),
  ];
}

/**
 * The plugin's Deployment and Service. `image` runs the operator part here and is the sidecar CloudNativePG's
 * instance Pods get (`SIDECAR_IMAGE`); it exists only in the node's image store, hence `Never`.
 */
export function pluginWorkload(image: string) {
  const labels = { app: PLUGIN_SERVICE };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: PLUGIN_SERVICE, namespace: CNPG_NAMESPACE, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      strategy: { type: 'Recreate' },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: PLUGIN_SERVICE_ACCOUNT,
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: PLUGIN_SERVICE,
              image,
              imagePullPolicy: 'Never',
              args: [
                'operator',
                '--server-cert=/server/tls.crt',
                '--server-key=/server/tls.key',
                '--client-cert=/client/tls.crt',
                `--server-address=:${PLUGIN_PORT}`,
                '--leader-elect',
              ],
              env: [{ name: 'SIDECAR_IMAGE', value: image }],
              ports: [{ containerPort: PLUGIN_PORT, protocol: 'TCP' }],
              readinessProbe: { tcpSocket: { port: PLUGIN_PORT }, periodSeconds: 2 },
              securityContext: {
                allowPrivilegeEscalation: false,
                capabilities: { drop: ['ALL'] },
                readOnlyRootFilesystem: true,
                runAsUser: 10001,
                runAsGroup: 10001,
              },
              volumeMounts: [
                { name: 'server', mountPath: '/server' },
                { name: 'client', mountPath: '/client' },
              ],
            },
          ],
          volumes: [
            { name: 'server', secret: { secretName: SERVER_SECRET } },
            { name: 'client', secret: { secretName: CLIENT_SECRET } },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: PLUGIN_SERVICE,
      namespace: CNPG_NAMESPACE,
      // What CloudNativePG's plugin controller looks for on Services of its own namespace.
      labels: { ...labels, 'cnpg.io/pluginName': PLUGIN_NAME },
      annotations: {
        'cnpg.io/pluginClientSecret': CLIENT_SECRET,
        'cnpg.io/pluginServerSecret': SERVER_SECRET,
        'cnpg.io/pluginPort': String(PLUGIN_PORT),
      },
    },
    spec: { selector: labels, ports: [{ port: PLUGIN_PORT, targetPort: PLUGIN_PORT, protocol: 'TCP' }] },
  };
  return { deployment, service };
}

/** `Successfully registered plugin …`: the Event CloudNativePG (≥ 1.29) records on the Service once it dialled it. */
export async function pluginRegistered(node: RealNode): Promise<string | undefined> {
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  const events = await core.listNamespacedEvent({
    namespace: CNPG_NAMESPACE,
    fieldSelector: `involvedObject.kind=Service,involvedObject.name=${PLUGIN_SERVICE}`,
  });
  const failed = events.items.filter((e) => e.reason === 'PluginRegistrationFailed').map((e) => e.message);
  const registered = events.items.find((e) => e.reason === 'PluginRegistered');
  if (!registered && failed.length > 0) throw new Error(`not registered yet: ${failed.at(-1)}`);
  return registered?.message;
}

/**
 * Installs the plugin and waits, in order, for its Deployment to roll out and for CloudNativePG to say it
 * registered it. The Service comes last, so that CloudNativePG's first dial finds a ready plugin. Returns the
 * seconds each step took.
 */
export async function installBarmanCloud(
  node: RealNode,
  options: { moduleDir: string; image: string; log: Log; timeoutMs?: number },
): Promise<Record<string, number>> {
  const timeoutMs = options.timeoutMs ?? 180_000;
  const timings: Record<string, number> = {};
  let began = Date.now();
  const lap = (step: string) => {
    timings[step] = (Date.now() - began) / 1000;
    began = Date.now();
  };
  const overlay = join(node.dirs.run, 'barman-cloud-install');
  mkdirSync(overlay, { recursive: true });
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      `namespace: ${CNPG_NAMESPACE}`,
      'resources:',
      // kustomize takes a base by relative path only.
      `  - ${relative(overlay, join(options.moduleDir, 'config', 'crd'))}`,
      `  - ${relative(overlay, join(options.moduleDir, 'config', 'rbac'))}`,
      '',
    ].join('\n'),
  );
  const rendered = await node.kubectl(['kustomize', overlay]);
  await node.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: rendered });
  await node.kubectl(['wait', '--for=condition=Established', 'crd/objectstores.barmancloud.cnpg.io', '--timeout=60s']);
  lap('CRD and RBAC');

  const secrets = await pluginCertificates(join(node.dirs.pki, 'barman-cloud'));
  const { deployment, service } = pluginWorkload(options.image);
  await node.kubectl(['apply', '--server-side', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...secrets, deployment] }),
  });
  const apps = node.kubeConfig.makeApiClient(AppsV1Api);
  await waitUntil(
    `Deployment ${CNPG_NAMESPACE}/${PLUGIN_SERVICE} rolled out`,
    async () =>
      deploymentRolledOut(await apps.readNamespacedDeployment({ name: PLUGIN_SERVICE, namespace: CNPG_NAMESPACE })),
    { timeoutMs, watch: [] },
  );
  lap('plugin Deployment ready');

  await node.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(service) });
  let said = '';
  await waitUntil(
    `CloudNativePG registering the plugin ${PLUGIN_NAME}`,
    async () => {
      said = (await pluginRegistered(node)) ?? '';
      return said !== '';
    },
    { timeoutMs, watch: [] },
  );
  lap('registered by CloudNativePG');
  options.log(`Barman Cloud Plugin installed: ${said}`);
  return timings;
}
