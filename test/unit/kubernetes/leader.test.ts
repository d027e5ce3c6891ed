/**
 * The Lease elector's requests under a server that stops answering (src/operator/kubernetes/leader.ts): each
 * attempt gives up at the renew deadline, and so does its request, so a silent API server cannot collect one
 * open connection per retry in the pool every other request shares. Against a local server that answers the
 * Lease's reads and never its writes; the real API server's election is in test/integration/leader.test.ts.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { expect, it } from 'vitest';
import { withKeepAlive } from '../../../src/operator/kubernetes/connection.ts';
import { LeaseElector } from '../../../src/operator/kubernetes/leader.ts';
import { localKubeConfig } from './support/local-kubeconfig.ts';

it('abandons each renewal a silent server holds at the renew deadline, freeing its connection', async () => {
  const writes: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    if (req.method !== 'GET') {
      // Taken, never answered: a frozen API server, or a proxy in front of one.
      writes.push(req);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'pgfsm-leader', namespace: 'pgfsm-system', resourceVersion: '1' },
        spec: { holderIdentity: '', leaseDurationSeconds: 1 },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kc = localKubeConfig(server);
  const elector = new LeaseElector(withKeepAlive(kc), {
    namespace: 'pgfsm-system',
    name: 'pgfsm-leader',
    identity: 'me',
    leaseDurationMs: 600,
    renewDeadlineMs: 200,
    retryPeriodMs: 50,
  });
  let led = false;
  elector.start({ onStartedLeading: () => (led = true), onStoppedLeading: () => {} });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const open = () => writes.filter((req) => !req.socket.destroyed).length;
  try {
    while (writes.length < 6) await sleep(20);
    // The writes before the newest were given up on, their connections closed by the client (one more may be
    // closing just now, on a busy machine). Kept open, they would be 6 by now, and one more every attempt.
    expect(open()).toBeLessThanOrEqual(2);
    // The release on stop is a write too, given up on at the same deadline; then none is left open.
    await elector.stop();
    await sleep(300);
    expect(open()).toBe(0);
    expect(
      writes.every(
        (req) =>
          req.method === 'PUT' &&
          req.url === '/apis/coordination.k8s.io/v1/namespaces/pgfsm-system/leases/pgfsm-leader',
      ),
    ).toBe(true);
    expect(led).toBe(false);
  } finally {
    await elector.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
