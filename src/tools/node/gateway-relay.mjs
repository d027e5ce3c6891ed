// The inner half of the node's gateway (see gateway.ts). It runs INSIDE the node's network namespace and
// listens on a Unix socket, which, unlike a TCP port, is reachable from the root namespace through the file
// system. Each connection names its target on its first line (`host:port\n`); the relay connects to it from
// inside the namespace (loopback, the node's address, a Pod or a ClusterIP) and then copies bytes both ways.
// Names are resolved by the node's CoreDNS only, never by the machine's resolver.
//
// Plain JavaScript with no imports of ours: it is started as `nsenter --net=… node gateway-relay.mjs <socket>
// <dns-ip>`, from the sources and from a build alike.

import { Resolver } from 'node:dns/promises';
import { rmSync } from 'node:fs';
import { createConnection, createServer, isIP } from 'node:net';

const [socketPath, dnsServer] = process.argv.slice(2);
if (!socketPath || !dnsServer) {
  process.stderr.write('usage: gateway-relay.mjs <socket> <dns-ip>\n');
  process.exit(2);
}
const resolver = new Resolver({ timeout: 2000, tries: 2 });
resolver.setServers([dnsServer]);

async function addressOf(host) {
  if (isIP(host)) return host;
  if (host === 'localhost') return '127.0.0.1';
  const [address] = await resolver.resolve4(host);
  return address;
}

const server = createServer((client) => {
  let head = Buffer.alloc(0);
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk]);
    const newline = head.indexOf(10);
    if (newline < 0) {
      if (head.length > 512) client.destroy();
      return;
    }
    client.off('data', onData);
    client.pause();
    const target = head.subarray(0, newline).toString('utf8').trim();
    const rest = head.subarray(newline + 1);
    const colon = target.lastIndexOf(':');
    const host = target.slice(0, colon);
    const port = Number(target.slice(colon + 1));
    addressOf(host).then(
      (address) => {
        const upstream = createConnection({ host: address, port });
        upstream.once('connect', () => {
          if (rest.length > 0) upstream.write(rest);
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
        });
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      },
      () => client.destroy(),
    );
  };
  client.on('data', onData);
  client.on('error', () => {});
});

rmSync(socketPath, { force: true });
server.listen(socketPath, () => process.stdout.write(`gateway relay listening on ${socketPath}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    rmSync(socketPath, { force: true });
    process.exit(0);
  });
}
