/**
 * Installs CloudNativePG and pgfsm on the real node the way their users do: kubectl inside the node's
 * namespace, CloudNativePG from its own kustomize tree (`config/default`, what its release manifest is built
 * from; webhooks served by its Pod through a Service, with the certificate its operator makes for itself) and
 * pgfsm from `kubectl apply -k deploy/overlays/local-image/`, which only swaps the image for the one built here.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import type { Log } from '../control-plane/log.ts';
import { waitUntil } from '../control-plane/processes.ts';
import { packageFile } from '../package-files.ts';
import type { RealNode } from './node.ts';

export const CNPG_NAMESPACE = 'cnpg-system';
export const CNPG_DEPLOYMENT = 'cnpg-controller-manager';
export const PGFSM_NAMESPACE = 'pgfsm-system';
export const PGFSM_DEPLOYMENT = 'pgfsm';

/** What a Deployment says of its rollout (a client-node V1Deployment, or a test's own narrower type). */
export interface DeploymentProgress {
  metadata?: { generation?: number };
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
}

/**
 * A Deployment whose current spec runs on every replica and nothing else: `replicas` too, since mid-rollout the old
 * Pod is still available while the new one is already counted updated.
 */
export function deploymentRolledOut(d: DeploymentProgress): boolean {
  const want = d.spec?.replicas ?? 1;
  return (
    (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
    (d.status?.updatedReplicas ?? 0) === want &&
    (d.status?.availableReplicas ?? 0) === want &&
    (d.status?.replicas ?? 0) === want
  );
}

async function rolledOut(node: RealNode, namespace: string, name: string, timeoutMs: number): Promise<void> {
  const apps = node.kubeConfig.makeApiClient(AppsV1Api);
  await waitUntil(
    `Deployment ${namespace}/${name} rolled out`,
    async () => deploymentRolledOut(await apps.readNamespacedDeployment({ name, namespace })),
    { timeoutMs, watch: [] },
  );
}

/**
 * CloudNativePG's operator as a Deployment from its own manifests. Its image reference and pull policy are set
 * with kustomize's `images` transformer, as upstream's release does with `kustomize edit set image`.
 */
export async function installCnpg(
  node: RealNode,
  options: { moduleDir: string; operatorImage: string; log: Log; timeoutMs?: number },
): Promise<void> {
  const started = Date.now();
  const overlay = join(node.dirs.run, 'cnpg-install');
  mkdirSync(overlay, { recursive: true });
  const [name, tag] = splitReference(options.operatorImage);
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      // kustomize takes a base by relative path only.
      `  - ${relative(overlay, join(options.moduleDir, 'config', 'default'))}`,
      'images:',
      '  - name: controller',
      `    newName: ${name}`,
      `    newTag: "${tag}"`,
      'patches:',
      '  - target: {group: apps, version: v1, kind: Deployment, name: cnpg-controller-manager}',
      '    patch: |-',
      '      - op: replace',
      '        path: /spec/template/spec/containers/0/imagePullPolicy',
      '        value: IfNotPresent',
      '',
    ].join('\n'),
  );
  const rendered = await node.kubectl(['kustomize', overlay]);
  // Server-side: CloudNativePG's CRDs are larger than the last-applied annotation may be.
  await node.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: rendered });
  await rolledOut(node, CNPG_NAMESPACE, CNPG_DEPLOYMENT, options.timeoutMs ?? 180_000);
  // Ready is not yet serving admission: wait until its webhook answers a dry-run Cluster.
  await waitUntil(
    "CloudNativePG's admission webhooks",
    async () => {
      await node.kubectl(['create', '--dry-run=server', '-o', 'name', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'postgresql.cnpg.io/v1',
          kind: 'Cluster',
          metadata: { name: 'webhook-probe', namespace: 'default' },
          spec: { instances: 1, storage: { size: '1Gi' } },
        }),
      });
      return true;
    },
    { timeoutMs: options.timeoutMs ?? 180_000, watch: [] },
  );
  options.log(`CloudNativePG's operator Deployment up, webhooks answering (${seconds(started)})`);
}

/** pgfsm as a user installs it, with the image built here (deploy/overlays/local-image). */
export async function installPgfsm(node: RealNode, options: { log: Log; timeoutMs?: number }): Promise<void> {
  const started = Date.now();
  await node.kubectl(['apply', '--server-side', '-k', packageFile('deploy/overlays/local-image')]);
  await rolledOut(node, PGFSM_NAMESPACE, PGFSM_DEPLOYMENT, options.timeoutMs ?? 180_000);
  options.log(`pgfsm Deployment up: 2 replicas Ready (${seconds(started)})`);
}

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)}s`;

/** `ghcr.io/a/b:1.2` → [`ghcr.io/a/b`, `1.2`]; a port in the registry host is not a tag. */
export function splitReference(reference: string): [string, string] {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  if (colon <= slash) return [reference, 'latest'];
  return [reference.slice(0, colon), reference.slice(colon + 1)];
}
