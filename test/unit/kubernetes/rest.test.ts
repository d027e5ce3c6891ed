/**
 * The ports' request client (src/operator/kubernetes/rest.ts) against a local HTTP server that records what
 * arrives and answers as told: what it sends (method, path, query, Content-Type, the KubeConfig's token),
 * what it answers (the parsed body; nothing for an empty one), and how its failures are classed by
 * errors.ts (the API server's Status kept, the body never in the message; a cut connection is transient).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PortError } from '../../../src/operator/core/errors.ts';
import { reuseAuthentication } from '../../../src/operator/kubernetes/authentication.ts';
import { toPortError } from '../../../src/operator/kubernetes/errors.ts';
import { resourcePath } from '../../../src/operator/kubernetes/resources.ts';
import { ApiError, CONTENT, RestClient } from '../../../src/operator/kubernetes/rest.ts';

interface Arrived {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** 'cut': the connection is closed unanswered; 'silent': never answered; 'stalled': headers, then nothing. */
type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'cut' | 'silent' | 'stalled';

let server: Server;
let answer: Answer = { status: 200, body: '{}' };
const arrived: Arrived[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      arrived.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (answer === 'cut') {
        req.socket.destroy();
        return;
      }
      if (answer === 'silent') return;
      if (answer === 'stalled') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"kind":');
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const kubeConfigOptions = () => ({
  // client-node refuses plain HTTP unless TLS verification is off, as for the generated clients.
  clusters: [
    { name: 'fake', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, skipTLSVerify: true },
  ],
  users: [{ name: 'pgfsm', token: 'the-token' }],
  contexts: [{ name: 'fake', cluster: 'fake', user: 'pgfsm' }],
  currentContext: 'fake',
});

function client(silenceMs?: number): RestClient {
  const kc = new KubeConfig();
  kc.loadFromOptions(kubeConfigOptions());
  return new RestClient(kc, silenceMs);
}

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

describe('RestClient', () => {
  it('names each kind where the API serves it, names escaped', () => {
    expect(resourcePath({ apiVersion: 'v1', plural: 'secrets' }, { namespace: 'db', name: 'a' })).toBe(
      '/api/v1/namespaces/db/secrets/a',
    );
    expect(
      resourcePath(
        { apiVersion: 'pgfsm.io/v1alpha1', plural: 'postgresclusters' },
        { namespace: 'db', name: 'a' },
        'status',
      ),
    ).toBe('/apis/pgfsm.io/v1alpha1/namespaces/db/postgresclusters/a/status');
    expect(resourcePath({ apiVersion: 'pgfsm.io/v1alpha1', plural: 'postgresclusterclasses' }, { name: 'x y' })).toBe(
      '/apis/pgfsm.io/v1alpha1/postgresclusterclasses/x%20y',
    );
    expect(resourcePath({ apiVersion: 'events.k8s.io/v1', plural: 'events' }, { namespace: 'db' })).toBe(
      '/apis/events.k8s.io/v1/namespaces/db/events',
    );
  });

  it('sends the body as JSON with the Content-Type asked for, the query and the token; answers the parsed body', async () => {
    arrived.length = 0;
    answer = { status: 201, body: JSON.stringify({ metadata: { name: 'a', resourceVersion: '5' } }) };
    const written = await client().request({
      method: 'PATCH',
      path: '/api/v1/namespaces/db/configmaps/a',
      query: { fieldManager: 'pgfsm', force: true, dryRun: undefined },
      body: { data: { k: 'v' } },
      contentType: CONTENT.apply,
    });
    expect(written).toEqual({ metadata: { name: 'a', resourceVersion: '5' } });
    const [request] = arrived;
    expect(request?.method).toBe('PATCH');
    expect(request?.url).toBe('/api/v1/namespaces/db/configmaps/a?fieldManager=pgfsm&force=true');
    expect(request?.headers['content-type']).toBe('application/apply-patch+yaml');
    expect(request?.headers.authorization).toBe('Bearer the-token');
    expect(JSON.parse(request?.body ?? '')).toEqual({ data: { k: 'v' } });
  });

  it('sends no body and no Content-Type without one, and answers undefined for an empty answer', async () => {
    arrived.length = 0;
    answer = { status: 200 };
    await expect(client().request({ method: 'DELETE', path: '/api/v1/namespaces/db/configmaps/a' })).resolves.toBe(
      undefined,
    );
    expect(arrived[0]?.headers['content-type']).toBeUndefined();
    expect(arrived[0]?.body).toBe('');
  });

  it('drops a 2xx answer unparsed when the caller ignores it, but still reads an error answer', async () => {
    answer = { status: 201, body: JSON.stringify({ metadata: { name: 'a' } }) };
    const path = '/apis/events.k8s.io/v1/namespaces/db/events';
    await expect(client().request({ method: 'POST', path, body: {}, ignoreAnswer: true })).resolves.toBe(undefined);
    answer = { status: 403, body: status(403, 'Forbidden', 'events is forbidden') };
    const error = await client()
      .request({ method: 'POST', path, body: {}, ignoreAnswer: true })
      .catch((e: unknown) => toPortError(e, { what: 'create Event' }));
    expect(error).toMatchObject({
      errorClass: 'forbidden',
      message: 'create Event: HTTP 403 Forbidden: events is forbidden',
    });
  });

  it('throws an ApiError outside 2xx, which errors.ts classes by the Status and words without the body', async () => {
    answer = {
      status: 422,
      body: status(422, 'Invalid', 'spec.instances: Invalid value: 0'),
    };
    const error = await client()
      .request({ method: 'POST', path: '/api/v1/namespaces/db/secrets', body: { data: { password: 'c2VjcmV0' } } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).message).toBe('HTTP 422');
    const classed = toPortError(error, { what: 'create Secret db/a', sensitive: true });
    expect(classed.errorClass).toBe('rejected');
    expect(classed.message).toBe('create Secret db/a: HTTP 422 Invalid');
    expect(toPortError(error, { what: 'apply Cluster db/a' }).refusal).toBe('spec.instances: Invalid value: 0');
  });

  it('carries a 429’s Retry-After to the port error', async () => {
    answer = { status: 429, body: status(429, 'TooManyRequests', 'slow down'), headers: { 'Retry-After': '2' } };
    const error = await client()
      .request({ method: 'GET', path: '/api/v1/namespaces/db/configmaps/a' })
      .catch((e: unknown) => toPortError(e, { what: 'get ConfigMap db/a' }));
    expect(error).toBeInstanceOf(PortError);
    expect(error).toMatchObject({ errorClass: 'tooManyRequests', retryAfterMs: 2000 });
  });

  it('fails with Node’s own code when the connection is cut, classed as unavailable (transient)', async () => {
    answer = 'cut';
    const error = await client()
      .request({ method: 'GET', path: '/api/v1/namespaces/db/configmaps/a' })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('ECONNRESET');
    expect(toPortError(error, { what: 'get ConfigMap db/a' }).errorClass).toBe('unavailable');
  });

  it('abandons a request the server never answers, or stops answering, as a transient timeout', async () => {
    for (const silence of ['silent', 'stalled'] as const) {
      answer = silence;
      const error = await client(100)
        .request({ method: 'PATCH', path: '/api/v1/namespaces/db/configmaps/a', body: {} })
        .catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe('ETIMEDOUT');
      expect(String(error)).toContain('no answer within 100 ms');
      expect(toPortError(error, { what: 'patch ConfigMap db/a' }).errorClass).toBe('timeout');
    }
  });

  it('authenticates afresh after a 401: the credentials kept for reuse were refused', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions(kubeConfigOptions());
    const library = vi.spyOn(kc, 'applySecurityAuthentication');
    // Kept for good but for a 401: only the refusal can make the library be asked again.
    const rest = new RestClient(reuseAuthentication(kc, Number.POSITIVE_INFINITY));
    const get = () =>
      rest.request({ method: 'GET', path: '/api/v1/namespaces/db/configmaps/a' }).catch(() => undefined);
    answer = { status: 200, body: '{}' };
    await get();
    await get();
    expect(library).toHaveBeenCalledTimes(1);
    answer = { status: 401, body: status(401, 'Unauthorized', 'Unauthorized') };
    await get();
    expect(library).toHaveBeenCalledTimes(1);
    answer = { status: 200, body: '{}' };
    await get();
    expect(library).toHaveBeenCalledTimes(2);
    expect(arrived.at(-1)?.headers.authorization).toBe('Bearer the-token');
  });
});
