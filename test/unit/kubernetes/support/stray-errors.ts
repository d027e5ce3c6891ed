/**
 * A process with `pgfsm run`'s last resort (installLastResort, src/operator/cli/run.ts) that provokes the
 * errors a flaky network throws at the operator, one kind after the other, against a local API-server
 * stand-in over the pooled keep-alive agent; test/unit/kubernetes/stray-errors.test.ts reads its JSON log.
 *
 *   node --conditions=development --import tsx stray-errors.ts network   each kind; exits 0 if it lives
 *   node --conditions=development --import tsx stray-errors.ts throw     a bug in a timer: must exit 1
 *   node --conditions=development --import tsx stray-errors.ts reject    a bug's rejection: must exit 1
 */
import { type Agent, createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { installLastResort } from '../../../../src/operator/cli/run.ts';
import type { KubeObject } from '../../../../src/operator/domain/objects.ts';
import { createLogger } from '../../../../src/operator/driver/logger.ts';
import { connectionPoolOf, withKeepAlive } from '../../../../src/operator/kubernetes/connection.ts';
import { Informer } from '../../../../src/operator/kubernetes/informer.ts';
import { RESOURCES } from '../../../../src/operator/kubernetes/resources.ts';
import { RestClient } from '../../../../src/operator/kubernetes/rest.ts';

const log = createLogger({ level: 'info' });
await installLastResort(log);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const networkError = (code: string) => Object.assign(new Error(`read ${code}`), { code });

const list = JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] });
const added = (name: string) =>
  `${JSON.stringify({ type: 'ADDED', object: { metadata: { namespace: 'db', name, resourceVersion: '2' } } })}\n`;

/** Lists answer at once; the first watch is cut mid-chunk, the later ones deliver `later` and stay open. */
let watches = 0;
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  if (!req.url?.includes('watch=true')) {
    res.end(list);
    return;
  }
  if (++watches === 1) {
    res.write(added('first'));
    // Half an event, then a reset: the response errors mid-stream.
    res.write(added('cut').slice(0, 20), () => (req.socket as Socket).resetAndDestroy());
    return;
  }
  res.write(added('later'));
});
const serverSockets = new Set<Socket>();
server.on('connection', (socket: Socket) => {
  serverSockets.add(socket);
  socket.on('close', () => serverSockets.delete(socket));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const kubeConfig = (server: string) => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'f', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'f', cluster: 'f', user: 'u' }],
    currentContext: 'f',
  });
  return withKeepAlive(kc);
};
const kc = kubeConfig(url);
const rest = new RestClient(kc);
const get = () => rest.request({ method: 'GET', path: '/api/v1/namespaces/db/configmaps' });
const pooled = () => connectionPoolOf(kc)?.agents()[0] as Agent;
const idleSockets = () => Object.values(pooled().freeSockets).flatMap((sockets) => sockets ?? []);

const steps: Record<string, () => Promise<void>> = {
  /** An idle pooled connection the server resets, then one that errors with nobody listening. */
  async 'socket error on a kept-alive pooled connection'() {
    await get();
    // The server resets it: the pool's own listener takes the error and drops the connection.
    for (const socket of serverSockets) socket.resetAndDestroy();
    await sleep(50);
    await get();
    // Node leaves a socket it hands back to the pool without an 'error' listener for a moment (its
    // responseKeepAlive says so); an error in that moment reaches the process.
    const [socket] = idleSockets();
    socket?.removeAllListeners('error');
    socket?.destroy(networkError('ECONNRESET'));
    await sleep(50);
    await get();
  },
  /** A watch reset mid-event (the informer fails it and relists), then a stream nobody listens to. */
  async 'stream error mid-watch'() {
    const informer = new Informer<KubeObject>(kc, {
      resource: RESOURCES.configMaps,
      namespace: 'db',
      backoffBaseMs: 10,
      backoffMaxMs: 50,
      log,
    });
    const names: string[] = [];
    informer.on((event) => names.push(event.object.metadata.name));
    informer.start();
    while (!names.includes('later')) await sleep(20);
    log.info({ stats: informer.stats, names }, 'informer recovered');
    await informer.stop();
    new PassThrough().destroy(networkError('ECONNRESET'));
    await sleep(50);
  },
  /** A request made in a timer callback whose promise nobody awaits, to a server that is gone. */
  async 'rejected promise in a timer callback'() {
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const port = (gone.address() as AddressInfo).port;
    await new Promise((resolve) => gone.close(resolve));
    const refused = new RestClient(kubeConfig(`http://127.0.0.1:${port}`));
    setTimeout(() => {
      void refused.request({ method: 'GET', path: '/api' });
    }, 0);
    await sleep(100);
  },
  /**
   * A request aborted through Node's own `signal` option once its whole answer arrived, as a library's
   * request would be (the operator's own requests use abortOnSignal): Node's socket error of issue 28.
   */
  async 'request aborted after its response ended'() {
    await get();
    const abort = new AbortController();
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${url}/api/v1/namespaces/db/configmaps`,
        { agent: pooled(), signal: abort.signal },
        (res) => {
          res.on('data', () => abort.abort());
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    await sleep(50);
    await get();
  },
};

const scenario = process.argv[2];
if (scenario === 'network') {
  for (const [step, run] of Object.entries(steps)) {
    await run();
    log.info({ step }, 'step done');
  }
  log.info('alive');
  process.exit(0);
} else if (scenario === 'throw') {
  setTimeout(() => {
    throw new TypeError('a bug');
  }, 0);
} else if (scenario === 'reject') {
  setTimeout(() => {
    void Promise.reject(new RangeError('a bug'));
  }, 0);
}
// A bug must end the process; if it did not, this says so.
await sleep(2_000);
log.info('alive');
process.exit(0);
