/**
 * The Kubernetes adapter's error mapping as far as retries go: which failures are transient, a 429's
 * Retry-After carried to the queue, and a single GET tried again within the pass (never a write).
 */
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PortError, retryFor } from '../../src/operator/core/errors.ts';
import {
  getOrUndefined,
  NOT_LEADER_CODE,
  parseRetryAfter,
  type ReadRetry,
  toPortError,
  unlessGone,
} from '../../src/operator/kubernetes/errors.ts';

const api = (code: number, body: object, headers: Record<string, string> = {}) =>
  new ApiException(code, 'x', JSON.stringify(body), headers);
const transport = (message: string, fields: Record<string, string>) => Object.assign(new Error(message), fields);
const classOf = (error: unknown) => toPortError(error, { what: 'op' }).errorClass;

describe('transient failures', () => {
  it('5xx other than a timeout is unavailable, and so transient', () => {
    for (const code of [500, 502, 503]) expect(classOf(api(code, { reason: 'InternalError' }))).toBe('unavailable');
    expect(classOf(api(503, {}))).toBe('unavailable');
    expect(retryFor('unavailable')).toBe('transient');
    // Timeouts keep their class, transient too.
    expect(classOf(api(500, { reason: 'ServerTimeout' }))).toBe('serverTimeout');
    expect(classOf(api(504, {}))).toBe('serverTimeout');
    expect(retryFor('serverTimeout')).toBe('transient');
    // Not Implemented will not be implemented by the next try.
    expect(classOf(api(501, {}))).toBe('other');
  });

  it('a broken connection is unavailable, a client timeout is a timeout: both transient', () => {
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']) {
      expect(classOf(transport('request failed', { code, type: 'system', name: 'FetchError' }))).toBe('unavailable');
    }
    expect(classOf(transport('socket hang up', { code: 'ECONNRESET' }))).toBe('unavailable');
    expect(classOf(transport('connect', { code: 'ETIMEDOUT' }))).toBe('timeout');
    expect(classOf(transport('network timeout', { name: 'FetchError', type: 'request-timeout' }))).toBe('timeout');
    expect(retryFor('timeout')).toBe('transient');
    expect(classOf(transport('bad json', { name: 'SyntaxError' }))).toBe('other');
  });

  it('a write fence.ts refused at its socket stays notLeader through node-fetch, which keeps only the code', () => {
    const rewrapped = transport('request to https://x/api failed, reason: refused: not the leader', {
      code: NOT_LEADER_CODE,
      type: 'system',
      name: 'FetchError',
    });
    expect(classOf(rewrapped)).toBe('notLeader');
  });

  it('conflicts, 429, denials and refusals are not transient', () => {
    expect(retryFor(classOf(api(409, { reason: 'Conflict' })))).toBe('conflict');
    expect(retryFor(classOf(api(429, { reason: 'TooManyRequests' })))).toBe('throttled');
    expect(retryFor(classOf(api(403, { reason: 'Forbidden' })))).toBe('persistent');
    expect(retryFor(classOf(api(422, { reason: 'Invalid' })))).toBe('persistent');
  });
});

describe('Retry-After', () => {
  it('parses delay-seconds and HTTP dates, and nothing else', () => {
    expect(parseRetryAfter('1')).toBe(1_000);
    expect(parseRetryAfter(' 120 ')).toBe(120_000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter('0')).toBe(0);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:07 GMT', now)).toBe(7_000);
    // A date already past: ask again at once (the queue then backs off on its own).
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
    for (const bad of [undefined, '', '  ', '-3', 'soon', '1e3', '0x10']) expect(parseRetryAfter(bad)).toBeUndefined();
  });

  it('a 429 carries the header, whatever the case of its name; other errors never do', () => {
    const throttled = toPortError(api(429, { reason: 'TooManyRequests' }, { 'retry-after': '2' }), { what: 'op' });
    expect(throttled.retryAfterMs).toBe(2_000);
    expect(
      toPortError(api(429, { reason: 'TooManyRequests' }, { 'Retry-After': '3' }), { what: 'op' }).retryAfterMs,
    ).toBe(3_000);
    expect(toPortError(api(429, { reason: 'TooManyRequests' }), { what: 'op' }).retryAfterMs).toBeUndefined();
    // The API server sends Retry-After on a 503 while it shuts down, and on 500 ServerTimeout: not ours to wait.
    expect(toPortError(api(503, {}, { 'retry-after': '60' }), { what: 'op' }).retryAfterMs).toBeUndefined();
    expect(
      toPortError(api(500, { reason: 'ServerTimeout' }, { 'retry-after': '60' }), { what: 'op' }).retryAfterMs,
    ).toBeUndefined();
  });
});

describe('a single GET is tried again within the pass', () => {
  /** A retry that records its waits instead of sleeping. */
  const recording = (attempts = 3) => {
    const waits: number[] = [];
    const retry: ReadRetry = {
      attempts,
      baseMs: 25,
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
      },
    };
    return { retry, waits };
  };

  /** A request that fails with each of `failures` in turn, then answers `value`. */
  const flaky = <T>(failures: unknown[], value: T) => {
    let calls = 0;
    const request = async () => {
      const failure = failures[calls++];
      if (failure !== undefined) throw failure;
      return value;
    };
    return { request, calls: () => calls };
  };

  it('a read that fails twice on the way, then answers, answers', async () => {
    const { retry, waits } = recording();
    const read = flaky([transport('socket hang up', { code: 'ECONNRESET' }), api(503, {})], { ok: true });
    expect(await getOrUndefined({ what: 'get Cluster ns/a' }, read.request, retry)).toEqual({ ok: true });
    expect(read.calls()).toBe(3);
    // Tens of milliseconds, doubling (random 0.5 is the middle of the ±50 % jitter).
    expect(waits).toEqual([25, 50]);
  });

  it('gives up after the last attempt with the last error, classified', async () => {
    const { retry } = recording();
    const read = flaky([api(503, {}), api(502, {}), api(500, { reason: 'InternalError' }), 'never'], {});
    const failure = await getOrUndefined({ what: 'get Cluster ns/a' }, read.request, retry).catch((e) => e);
    expect(failure).toBeInstanceOf(PortError);
    expect(failure.errorClass).toBe('unavailable');
    expect(failure.message).toBe('get Cluster ns/a: HTTP 500 InternalError');
    expect(read.calls()).toBe(3);
  });

  it('a 404 is an answer at once: undefined, not retried', async () => {
    const { retry, waits } = recording();
    const read = flaky([api(404, { reason: 'NotFound' })], { ok: true });
    expect(await getOrUndefined({ what: 'get Secret ns/a' }, read.request, retry)).toBeUndefined();
    expect(read.calls()).toBe(1);
    expect(waits).toEqual([]);
  });

  it.each([
    [403, 'Forbidden'],
    [409, 'Conflict'],
    [422, 'Invalid'],
    [429, 'TooManyRequests'],
  ])('a %i is not retried', async (code, reason) => {
    const { retry } = recording();
    const read = flaky([api(code, { reason })], { ok: true });
    await expect(getOrUndefined({ what: 'get Secret ns/a' }, read.request, retry)).rejects.toBeInstanceOf(PortError);
    expect(read.calls()).toBe(1);
  });

  it('the real retry waits tens of milliseconds between tries', async () => {
    const read = flaky([transport('reset', { code: 'ECONNRESET' })], 'ok');
    expect(await getOrUndefined({ what: 'get ConfigMap ns/a' }, read.request)).toBe('ok');
    expect(read.calls()).toBe(2);
  });

  it('a write through unlessGone is tried once, even on a transient failure', async () => {
    const write = flaky([transport('reset', { code: 'ECONNRESET' })], undefined);
    await expect(unlessGone({ what: 'delete Pooler ns/a' }, write.request)).rejects.toMatchObject({
      errorClass: 'unavailable',
    });
    expect(write.calls()).toBe(1);
    // Gone already is done.
    const gone = flaky([api(404, { reason: 'NotFound' })], undefined);
    await expect(unlessGone({ what: 'delete Pooler ns/a' }, gone.request)).resolves.toBeUndefined();
  });
});

/**
 * A Secret refused at admission: who refused it is said (the policy and its binding, or the webhook), never what
 * they said, which may quote the Secret. The messages are the API server's own wording (k8s.io/apiserver).
 */
describe('a Secret refused by an admission policy or webhook', () => {
  const SECRET = { what: 'apply Secret team-a/orders-superuser', sensitive: true };
  const VALUE = 'cGFzc3dvcmQxMjM=';
  const policyDenial = (reason: string, code: number, binding = " with binding 'no-weak-passwords-binding'") =>
    api(code, {
      kind: 'Status',
      status: 'Failure',
      reason,
      code,
      message:
        `secrets "orders-superuser" is forbidden: ValidatingAdmissionPolicy 'no-weak-passwords'${binding} ` +
        `denied request: password ${VALUE} is on the list of weak passwords`,
      details: { name: 'orders-superuser', kind: 'secrets' },
    });

  it('names the policy and its binding, keeps nothing of its message, and is a refusal', () => {
    const error = toPortError(policyDenial('Invalid', 422), SECRET);
    expect(error.message).toBe(
      "apply Secret team-a/orders-superuser: HTTP 422 Invalid: ValidatingAdmissionPolicy 'no-weak-passwords' " +
        "with binding 'no-weak-passwords-binding' denied the request (its message is left out: it may quote the Secret)",
    );
    expect(error.message).not.toContain(VALUE);
    expect(error.message).not.toContain('weak passwords');
    expect(error.refusal).toBeUndefined();
    expect(error.errorClass).toBe('rejected');
  });

  it('a policy that chose the reason Forbidden is still a refusal at admission, not RBAC', () => {
    const error = toPortError(policyDenial('Forbidden', 403), SECRET);
    expect(error.errorClass).toBe('rejected');
    expect(error.message).toContain("ValidatingAdmissionPolicy 'no-weak-passwords' with binding");
    expect(
      classOf(api(403, { reason: 'Forbidden', message: 'secrets "x" is forbidden: User "u" cannot create' })),
    ).toBe('forbidden');
  });

  it('a denial without a binding, and a webhook, are named the same way', () => {
    expect(toPortError(policyDenial('Invalid', 422, ''), SECRET).message).toContain(
      ": ValidatingAdmissionPolicy 'no-weak-passwords' denied the request (",
    );
    const webhook = api(400, {
      reason: 'BadRequest',
      message: `admission webhook "secrets.policy.example" denied the request: ${VALUE} is weak`,
    });
    const error = toPortError(webhook, SECRET);
    expect(error.message).toContain(': admission webhook "secrets.policy.example" denied the request (');
    expect(error.message).not.toContain(VALUE);
  });

  it('repeats no name that is not an object name, nor anything of a message in another shape', () => {
    const forged = api(422, {
      reason: 'Invalid',
      message: `ValidatingAdmissionPolicy '${VALUE}' denied request: x`,
    });
    expect(toPortError(forged, SECRET).message).toBe('apply Secret team-a/orders-superuser: HTTP 422 Invalid');
    const quoted = api(422, { reason: 'Invalid', message: `data[password]: Invalid value: "${VALUE}"` });
    expect(toPortError(quoted, SECRET).message).toBe('apply Secret team-a/orders-superuser: HTTP 422 Invalid');
  });

  it('for any other object the whole message stays, the refusal to remember included', () => {
    const error = toPortError(policyDenial('Invalid', 422), { what: 'apply Pooler team-a/orders-rw' });
    expect(error.message).toContain('denied request: password');
    expect(error.refusal).toContain("ValidatingAdmissionPolicy 'no-weak-passwords'");
  });
});
