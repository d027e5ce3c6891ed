/**
 * The request-level fence (src/operator/kubernetes/fence.ts): a write request made through client-node's
 * generated clients or through the ports' own requests (rest.ts, which authenticate through the same seam)
 * asks the leadership right before it is sent, so a replica that lost the lease sends
 * nothing, even a write that follows a read inside one port call (an owner change reads the owners first).
 * Reads and the Lease's own requests always go out; a write that must wait for a new connection asks again
 * once the TLS handshake is done. Against fake API servers that record what arrives.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classOf } from '../../../src/operator/core/errors.ts';
import { withKeepAlive } from '../../../src/operator/kubernetes/connection.ts';
import { fenceWrites } from '../../../src/operator/kubernetes/fence.ts';
import { kubernetesPorts } from '../../../src/operator/kubernetes/index.ts';
import { RestClient } from '../../../src/operator/kubernetes/rest.ts';
import { createPki } from '../../../src/tools/control-plane/certs.ts';

const arrived: string[] = [];
/** Runs when a GET arrives, before it is answered. */
let onGet: (() => void) | undefined;
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.push(`${req.method} ${req.url?.split('?')[0]}`);
      if (req.method === 'GET') onGet?.();
      const url = req.url ?? '';
      const object = {
        apiVersion: url.includes('coordination') ? 'coordination.k8s.io/v1' : 'v1',
        kind: url.includes('leases') ? 'Lease' : 'ConfigMap',
        metadata: { name: 'x', namespace: 'ns', resourceVersion: '7' },
      };
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(object));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** `prefix`: the path a proxy in front of the API server serves it under (e.g. Rancher's `/k8s/clusters/<id>`). */
function fencedConfig(leadership: { leading: boolean }, prefix = '') {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}${prefix}`, skipTLSVerify: true }],
    users: [{ name: 'pgfsm', token: 'test' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'pgfsm' }],
    currentContext: 'fake',
  });
  return fenceWrites(kc, { identity: 'replica-a', isLeader: () => leadership.leading });
}

/** A KubeConfig for a local HTTPS server whose certificate `caCert`'s CA signed. */
function tlsConfig(tls: HttpsServer, caCert: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'tls',
        server: `https://localhost:${(tls.address() as AddressInfo).port}`,
        caData: readFileSync(caCert).toString('base64'),
      },
    ],
    users: [{ name: 'pgfsm', token: 'test' }],
    contexts: [{ name: 'tls', cluster: 'tls', user: 'pgfsm' }],
    currentContext: 'tls',
  });
  return kc;
}

/** The owner an owner change sets. */
const owner = { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', name: 'a', uid: 'u1', controller: true };

describe('fenceWrites', () => {
  it('refuses a write that follows a read within one port call, once leadership is lost in between', async () => {
    const leadership = { leading: true };
    const kc = fencedConfig(leadership);
    // Leadership is lost while the GET of the live object is on its way, as when the process is
    // paused there: the owner patch that follows is refused before it is sent.
    onGet = () => {
      leadership.leading = false;
    };
    const configMaps = kubernetesPorts(kc).configMaps;
    arrived.length = 0;
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'x' };
    const error = await configMaps.setOwner(ref, owner).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(classOf(error)).toBe('notLeader');
    expect(String(error)).toContain('replica-a does not hold the leader lease');
    expect(arrived).toEqual(['GET /api/v1/namespaces/ns/configmaps/x']);
    onGet = undefined;
  });

  it('lets reads and the Lease’s own writes through whether or not this replica leads, other writes only while it leads', async () => {
    const leadership = { leading: false };
    const kc = fencedConfig(leadership);
    const core = kc.makeApiClient(CoreV1Api);
    const leases = kc.makeApiClient(CoordinationV1Api);
    const body = { metadata: { name: 'x', namespace: 'ns' } };
    arrived.length = 0;
    await core.readNamespacedConfigMap({ name: 'x', namespace: 'ns' });
    await leases.replaceNamespacedLease({ name: 'x', namespace: 'ns', body });
    await expect(core.createNamespacedConfigMap({ namespace: 'ns', body })).rejects.toMatchObject({
      errorClass: 'notLeader',
    });
    await expect(core.deleteNamespacedConfigMap({ name: 'x', namespace: 'ns' })).rejects.toMatchObject({
      errorClass: 'notLeader',
    });
    expect(arrived).toEqual([
      'GET /api/v1/namespaces/ns/configmaps/x',
      'PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/x',
    ]);

    leadership.leading = true;
    await core.createNamespacedConfigMap({ namespace: 'ns', body });
    expect(arrived.at(-1)).toBe('POST /api/v1/namespaces/ns/configmaps');
  });

  it('tells the Lease’s writes from others below a server URL with a path of its own', async () => {
    const leadership = { leading: false };
    const kc = fencedConfig(leadership, '/k8s/clusters/c1');
    const body = { metadata: { name: 'x', namespace: 'ns' } };
    arrived.length = 0;
    await kc.makeApiClient(CoordinationV1Api).replaceNamespacedLease({ name: 'x', namespace: 'ns', body });
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap' as const, metadata: { name: 'x', namespace: 'ns' } };
    await expect(kubernetesPorts(kc).configMaps.apply(configMap, undefined)).rejects.toMatchObject({
      errorClass: 'notLeader',
    });
    leadership.leading = true;
    await kubernetesPorts(kc).configMaps.apply(configMap, undefined);
    expect(arrived).toEqual([
      'PUT /k8s/clusters/c1/apis/coordination.k8s.io/v1/namespaces/ns/leases/x',
      // The apply reads the live object first: the refusal comes at its write.
      'GET /k8s/clusters/c1/api/v1/namespaces/ns/configmaps/x',
      'GET /k8s/clusters/c1/api/v1/namespaces/ns/configmaps/x',
      'PATCH /k8s/clusters/c1/api/v1/namespaces/ns/configmaps/x',
    ]);
  });

  it('holds a write that waits for a TLS handshake, and refuses it when leadership was lost meanwhile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pgfsm-fence-'));
    const pki = await createPki(join(dir, 'pki'));
    const leadership = { leading: true };
    const requests: string[] = [];
    const context = createSecureContext({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) });
    // The server stops in the middle of each handshake, as a paused client would leave it, and leadership
    // is lost right there: after the request was built, before the connection could carry it.
    const tls = createHttpsServer(
      {
        cert: readFileSync(pki.serverCert),
        key: readFileSync(pki.serverKey),
        SNICallback: (_name, done) => {
          leadership.leading = false;
          done(null, context);
        },
      },
      (req, res) => {
        requests.push(`${req.method} ${req.url?.split('?')[0]}`);
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'ns' } }));
      },
    );
    await new Promise<void>((resolve) => tls.listen(0, resolve));
    try {
      const kc = tlsConfig(tls, pki.caCert);
      fenceWrites(kc, { identity: 'replica-a', isLeader: () => leadership.leading });
      const core = kc.makeApiClient(CoreV1Api);
      const error = await core.createNamespacedConfigMap({ namespace: 'ns', body: { metadata: { name: 'x' } } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(String(error)).toContain('replica-a does not hold the leader lease');
      expect(requests).toEqual([]);

      // The same path while leading: the handshake completes and the write goes out.
      const always = { leading: true };
      const kc2 = new KubeConfig();
      kc2.loadFromString(kc.exportConfig());
      fenceWrites(kc2, { identity: 'replica-a', isLeader: () => always.leading });
      await expect(
        kc2.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: 'ns', body: { metadata: { name: 'x' } } }),
      ).resolves.toBeDefined();
      expect(requests).toEqual(['POST /api/v1/namespaces/ns/configmaps']);
    } finally {
      await new Promise((resolve) => tls.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sends a write that waited for a busy connection of a full pool, and refuses one whose leadership went while it waited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pgfsm-fence-'));
    const pki = await createPki(join(dir, 'pki'));
    const requests: string[] = [];
    const leadership = { leading: true };
    /** Runs when a write arrives, before it is answered. */
    let onArrival: (() => void) | undefined;
    // Each answer takes a while, so the writes behind the first wait for its connection, the pool's only one.
    const tls = createHttpsServer(
      { cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) },
      (req, res) => {
        req.resume();
        req.on('end', () => {
          requests.push(`${req.method} ${req.url}`);
          onArrival?.();
          setTimeout(() => {
            res.writeHead(201, { 'content-type': 'application/json' });
            res.end('{}');
          }, 30);
        });
      },
    );
    await new Promise<void>((resolve) => tls.listen(0, resolve));
    try {
      const kc = tlsConfig(tls, pki.caCert);
      fenceWrites(withKeepAlive(kc, { maxSockets: 1 }), { identity: 'replica-a', isLeader: () => leadership.leading });
      const rest = new RestClient(kc);
      const write = (n: number) =>
        rest.request({ method: 'POST', path: `/api/v1/namespaces/ns/events?n=${n}`, body: {} }).then(
          () => 'sent',
          (e: unknown) => String(e),
        );
      // Three at once over one connection: the second and third are handed it as it frees, connected long
      // ago. They used to be held for a handshake that had come and gone, and never left.
      const deadline = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000));
      const three = Promise.all([write(1), write(2), write(3)]);
      expect(await Promise.race([three.then((r) => r.join()), deadline])).toBe('sent,sent,sent');
      expect(requests).toHaveLength(3);

      // Leadership lost while the second waits for the connection (the first has arrived): it is refused as
      // it gets it.
      requests.length = 0;
      onArrival = () => {
        leadership.leading = false;
      };
      const first = write(4);
      const second = write(5);
      expect(await first).toBe('sent');
      expect(await second).toContain('replica-a does not hold the leader lease');
      expect(requests).toEqual(['POST /api/v1/namespaces/ns/events?n=4']);
    } finally {
      tls.closeAllConnections();
      await new Promise((resolve) => tls.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
