/** A kubeconfig for a plain-HTTP test server on loopback, with a bearer token: what the unit tests of the adapters talk to. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export function localKubeConfig(server: Server): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain HTTP unless TLS verification is off (there is no TLS to verify).
    clusters: [
      { name: 'f', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'f', cluster: 'f', user: 'u' }],
    currentContext: 'f',
  });
  return kc;
}
