/**
 * The API proxy (src/tools/faults/api-proxy.ts) in front of a test's control plane, with its own serving
 * certificate, and kubeconfigs that reach the API server through it with the operator's token: what the
 * proxy counts and breaks is what the operator does.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createPki } from '../../../src/tools/control-plane/certs.ts';
import type { ControlPlane } from '../../../src/tools/control-plane/index.ts';
import { ApiProxy, type ApiProxyOptions } from '../../../src/tools/faults/api-proxy.ts';

export interface ProxiedApi {
  proxy: ApiProxy;
  /** A kubeconfig for the proxy with `token` (default: none). */
  kubeConfig(token: string): KubeConfig;
  /** The same, written to a file in the scratch directory, for a process of its own. */
  kubeConfigFile(token: string, name: string): string;
}

/** Starts a proxy to `cp` whose certificates live under `dir`; `options` seed its faults or lag its watches. */
export async function proxyTo(
  cp: ControlPlane,
  dir: string,
  options: Pick<ApiProxyOptions, 'random' | 'watchLag'> = {},
): Promise<ProxiedApi> {
  const pki = await createPki(join(dir, 'pki'));
  const proxy = new ApiProxy({
    ...options,
    target: cp.url,
    targetCa: Buffer.from(cp.kubeConfig.getCurrentCluster()?.caData ?? '', 'base64'),
    serving: { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
  });
  await proxy.listen();
  const kubeConfig = (token: string) => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'proxy', server: proxy.url, caData: readFileSync(pki.caCert).toString('base64') }],
      users: [{ name: 'pgfsm', token }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'pgfsm' }],
      currentContext: 'proxy',
    });
    return kc;
  };
  return {
    proxy,
    kubeConfig,
    kubeConfigFile(token, name) {
      const path = join(dir, `${name}.kubeconfig`);
      writeFileSync(path, kubeConfig(token).exportConfig(), { mode: 0o600 });
      return path;
    },
  };
}

/** The bearer token of a kubeconfig's current user. */
export const tokenOf = (kc: KubeConfig) => kc.getCurrentUser()?.token ?? '';
