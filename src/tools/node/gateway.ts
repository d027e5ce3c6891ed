/**
 * The one way into the node from outside its network namespace: a TCP listener on this machine's loopback
 * per target, whose connections go over the relay's Unix socket (gateway-relay.mjs) and are opened from
 * inside the namespace. Tests, the harness's probes, the sandbox and `pgfsm` reach the API server, Services and
 * Pods this way, and the network rule holds: no interface of the root namespace ever carries node traffic.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface Gateway {
  /** A loopback port whose connections reach `host:port` as seen from inside the node. */
  open(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export function gatewayTo(relaySocket: string): Gateway {
  const servers = new Map<string, { server: Server; port: Promise<number> }>();
  const open = new Set<Socket>();
  return {
    open(host, port) {
      const key = `${host}:${port}`;
      const existing = servers.get(key);
      if (existing) return existing.port;
      const server = createServer((client) => {
        const relay = createConnection(relaySocket);
        open.add(client);
        client.once('close', () => open.delete(client));
        relay.once('connect', () => {
          relay.write(`${key}\n`);
          client.pipe(relay);
          relay.pipe(client);
        });
        relay.on('error', () => client.destroy());
        client.on('error', () => relay.destroy());
        relay.on('close', () => client.destroy());
        client.on('close', () => relay.destroy());
      });
      // Neither the listener nor its connections may keep a test or a CLI alive.
      server.unref();
      const listening = new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
          const address = server.address();
          if (address && typeof address === 'object') resolve(address.port);
          else reject(new Error('the gateway listener has no port'));
        });
      });
      servers.set(key, { server, port: listening });
      return listening;
    },
    async close() {
      const closed = [...servers.values()].map(
        ({ server }) => new Promise<void>((resolve) => server.close(() => resolve())),
      );
      for (const socket of open) socket.destroy();
      await Promise.all(closed);
      servers.clear();
    },
  };
}
