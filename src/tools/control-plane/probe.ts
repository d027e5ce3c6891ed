/** Minimal HTTP(S) GET for readiness probes; node:http keeps it independent of client-node. */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface Tls {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Only for servers with a certificate we did not issue (kube-controller-manager's self-signed one). */
  insecure?: boolean;
}

export interface Response {
  status: number;
  body: string;
}

export function get(url: string, tls: Tls = {}, timeoutMs = 3_000): Promise<Response> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const onResponse = (res: import('node:http').IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req =
      target.protocol === 'https:'
        ? httpsRequest(
            target,
            {
              ca: tls.ca,
              cert: tls.cert,
              key: tls.key,
              rejectUnauthorized: !tls.insecure,
              timeout: timeoutMs,
              // A fresh connection per probe: a pooled one could outlive the server we are polling.
              agent: false,
            },
            onResponse,
          )
        : httpRequest(target, { timeout: timeoutMs, agent: false }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
