/**
 * Maps the API's failures (the ports' requests, rest.ts; client-node's, for the Lease) onto the port error
 * classes that decide the retry (src/operator/core/errors.ts).
 *
 * Messages stay short and never carry a response body: a Secret's body holds values, and client-node's
 * own `ApiException.message` embeds the whole body and the headers. Only the API server's `Status`
 * reason and its one-line message are kept, because a 422 message names the field; for Secrets only who
 * refused them at admission (`refuserOf`), never the message, which may quote what was sent.
 *
 * An object refused at admission is `rejected`: the schema or a CEL rule (400/422), or a validating
 * webhook such as CNPG's. The API server passes a webhook's status on (CNPG answers 422 `Invalid`) and
 * prefixes its message with `admission webhook "<name>" denied the request`; a webhook that denies
 * without a status answers 403, told apart from RBAC's 403 by that prefix. The refusal's message is kept
 * whole (`PortError.refusal`): it is what the user needs to fix the spec.
 *
 * A ValidatingAdmissionPolicy refuses too: 422 `Invalid` unless the policy chose another reason (403 for
 * `Forbidden`), with the message `<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with
 * binding '<binding>' denied request: <its message>`. Also `rejected`, whatever the code. For a Secret the
 * message is dropped, but who refused is kept (`refuserOf`): otherwise a refused Secret says only `HTTP 422`.
 *
 * A create in a namespace being deleted is refused with 403 too, by the NamespaceLifecycle admission plugin
 * (cause NamespaceTerminating): `namespaceTerminating`, which a pass skips quietly instead of warning.
 *
 * Failures on the way (a connection refused, reset or cut, a client timeout, a 5xx) are transient: a single
 * read (`getOrUndefined`) is tried again a few times within the pass, and a pass that still fails comes back
 * after a short backoff. A 429 carries the server's `Retry-After` to the queue.
 */
import { ApiException } from '@kubernetes/client-node';
import { type ErrorClass, isTransient, PortError } from '../core/errors.ts';
import { ApiError } from './rest.ts';

interface ApiStatus {
  reason?: string;
  message?: string;
  /** `details.causes[].reason` (a StatusCause's type), e.g. NamespaceTerminating. */
  causes?: string[];
}

/** The `Status` object of an error response, when the body is one (it usually arrives as raw JSON text). */
function statusOf(body: unknown): ApiStatus {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return {};
    }
  }
  if (typeof value !== 'object' || value === null) return {};
  const { reason, message, details } = value as Record<string, unknown>;
  const list = (details as { causes?: unknown } | null | undefined)?.causes;
  const causes = (Array.isArray(list) ? list : [])
    .map((cause) => (cause as { reason?: unknown } | null)?.reason)
    .filter((cause): cause is string => typeof cause === 'string');
  return {
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(typeof message === 'string' ? { message } : {}),
    ...(causes.length > 0 ? { causes } : {}),
  };
}

/** How the API server begins the message of a request an admission webhook denied (k8s.io/apiserver). */
const WEBHOOK_DENIAL = /^admission webhook "([^"]*)" denied the request/;

/**
 * How it words a ValidatingAdmissionPolicy's denial (k8s.io/apiserver, policy/validating/dispatcher.go): wrapped
 * by admission.NewForbidden, so after `<resource> "<name>" is forbidden: ` (or `<resource> is forbidden: ` when
 * the object has no name yet); then the binding through which the policy applied (a policy acts only through one).
 */
const POLICY_DENIAL =
  /^(?:\S+(?: "[^"]*")? is forbidden: )?ValidatingAdmissionPolicy '([^']*)'(?: with binding '([^']*)')? denied request/;

/** Object names as the API server accepts them (DNS-1123 subdomains), and no more. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/**
 * Who refused a request at admission, from the API server's message, in words that quote nothing of the object:
 * the policy and its binding, or the webhook, by name. What they said is left out, and that is the point. A
 * policy's message can be a messageExpression evaluated on the object (it may print a Secret's data), and its
 * default message repeats the failed expression, whose literal may be the very value it refused; a webhook's
 * message is its own to write. The names are chosen by whoever installed the policy or webhook, never taken
 * from the request; one that is no object name (so not what the API server wrote there) is not repeated.
 */
export function refuserOf(message: string | undefined): string | undefined {
  if (message === undefined) return undefined;
  const named = (name: string | undefined) => name !== undefined && OBJECT_NAME.test(name);
  const policy = POLICY_DENIAL.exec(message);
  if (policy && named(policy[1])) {
    const binding = named(policy[2]) ? ` with binding '${policy[2]}'` : '';
    return `ValidatingAdmissionPolicy '${policy[1]}'${binding} denied the request`;
  }
  const webhook = WEBHOOK_DENIAL.exec(message);
  if (webhook && named(webhook[1])) return `admission webhook "${webhook[1]}" denied the request`;
  return undefined;
}

/**
 * The NamespaceLifecycle admission plugin refuses a create in a namespace being deleted with 403 Forbidden, a
 * cause of type NamespaceTerminating and this message; the message alone is kept as a fallback for proxies
 * or clients that drop the details.
 */
const NAMESPACE_TERMINATING_CAUSE = 'NamespaceTerminating';
const NAMESPACE_TERMINATING = /unable to create new content in namespace \S+ because it is being terminated/;

export function classOfStatus(code: number, reason?: string, message?: string, causes: string[] = []): ErrorClass {
  if (code === 409) return 'conflict';
  if (code === 429) return 'tooManyRequests';
  if (code === 504 || (code === 500 && reason === 'ServerTimeout')) return 'serverTimeout';
  if (code === 404) return 'notFound';
  if (code === 422 || code === 400) return 'rejected';
  if (message !== undefined && (WEBHOOK_DENIAL.test(message) || POLICY_DENIAL.test(message))) return 'rejected';
  if (
    code === 403 &&
    (causes.includes(NAMESPACE_TERMINATING_CAUSE) || (message !== undefined && NAMESPACE_TERMINATING.test(message)))
  ) {
    return 'namespaceTerminating';
  }
  if (code === 401 || code === 403) return 'forbidden';
  // 500, 502, 503…: a restarting API server, a proxy, a webhook that could not be called. 501 Not
  // Implemented and 505 will say the same next time.
  if (code >= 500 && code <= 599 && code !== 501 && code !== 505) return 'unavailable';
  return 'other';
}

/**
 * A 429's `Retry-After` in ms: delay-seconds (what the API server sends, e.g. `1`) or an HTTP date.
 * Absent, empty, negative or unparsable: undefined (the queue then backs off on its own).
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date always ends in GMT (RFC 9110); Date.parse alone would take "-3" for a year.
  const at = / GMT$/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** A header of an error response, whatever the case of its name (Node and node-fetch lower-case them). */
function headerOf(headers: Record<string, unknown> | undefined, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && typeof value === 'string') return value;
  }
  return undefined;
}

/** The client stopped waiting: the request may or may not have been served. */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT']);

/**
 * The connection failed or broke: refused (API server restarting), reset or hung up (`socket hang up` is
 * ECONNRESET), written after the peer closed (EPIPE), aborted, or a response cut short (node-fetch's
 * ERR_STREAM_PREMATURE_CLOSE; undici's UND_ERR_SOCKET), or a name that did not resolve for now.
 */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
]);

type TransportError = { code?: unknown; type?: unknown; name?: unknown };

function isClientTimeout(error: TransportError): boolean {
  return (
    (typeof error.code === 'string' && TIMEOUT_CODES.has(error.code)) ||
    // node-fetch 2 (client-node 1.x) reports its own timeouts as FetchError types.
    error.type === 'request-timeout' ||
    error.type === 'body-timeout' ||
    error.name === 'AbortError' ||
    error.name === 'TimeoutError'
  );
}

const isBrokenConnection = (error: TransportError): boolean =>
  typeof error.code === 'string' && CONNECTION_CODES.has(error.code);

/** The code of a write fence.ts refused because this replica no longer leads, as node-fetch passes it on. */
export const NOT_LEADER_CODE = 'EPGFSMNOTLEADER';

const transportClass = (error: TransportError): ErrorClass =>
  error.code === NOT_LEADER_CODE
    ? 'notLeader'
    : isClientTimeout(error)
      ? 'timeout'
      : isBrokenConnection(error)
        ? 'unavailable'
        : 'other';

const MAX_DETAIL = 300;

const oneLine = (text: string) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL)}…` : flat;
};

export interface ErrorContext {
  /** What was attempted, e.g. `apply ConfigMap ns/name`. */
  what: string;
  /** Drop the server's message too (Secrets: a validation message may quote what was sent). */
  sensitive?: boolean;
}

export function toPortError(error: unknown, context: ErrorContext): PortError {
  if (error instanceof PortError) return error;
  // ApiError: the operator's own requests (rest.ts); ApiException: those still made by client-node (`pgfsm explain`).
  if (error instanceof ApiError || error instanceof ApiException) {
    const status = statusOf(error.body);
    const errorClass = classOfStatus(error.code, status.reason, status.message, status.causes);
    const reason = status.reason ? ` ${status.reason}` : '';
    const said = context.sensitive ? undefined : status.message;
    // A Secret's refusal names who refused it, and says why its words are missing.
    const refuser = context.sensitive ? refuserOf(status.message) : undefined;
    const detail = said
      ? `: ${oneLine(said)}`
      : refuser
        ? `: ${refuser} (its message is left out: it may quote the Secret)`
        : '';
    const message = `${context.what}: HTTP ${error.code}${reason}${detail}`;
    const refusal = errorClass === 'rejected' ? said : undefined;
    const retryAfterMs =
      errorClass === 'tooManyRequests' ? parseRetryAfter(headerOf(error.headers, 'retry-after')) : undefined;
    return new PortError(errorClass, message, refusal, retryAfterMs, status.reason);
  }
  if (typeof error === 'object' && error !== null) {
    const e = error as { code?: unknown; type?: unknown; name?: unknown; message?: unknown };
    const label = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'error';
    // A transport message may quote a piece of a response body (JSON parse errors do): not for Secrets.
    const detail = typeof e.message === 'string' && !context.sensitive ? ` (${oneLine(e.message)})` : '';
    return new PortError(transportClass(e), `${context.what}: ${label}${detail}`);
  }
  return new PortError('other', `${context.what}: ${String(error)}`);
}

/** Runs one API call and converts whatever it throws. */
export async function call<T>(context: ErrorContext, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw toPortError(error, context);
  }
}

export const isNotFound = (error: unknown) => error instanceof PortError && error.errorClass === 'notFound';

/**
 * A create refused because the name is taken (409 with the Status reason AlreadyExists). Any other 409 —
 * a conflict on a resourceVersion, or one a proxy made up — says nothing about whether the object exists.
 */
export const isAlreadyExists = (error: unknown) =>
  error instanceof PortError && error.errorClass === 'conflict' && error.apiReason === 'AlreadyExists';

/** How a single read is tried again within the pass. */
export interface ReadRetry {
  /** Tries in all, the first included. */
  attempts: number;
  /** The wait after the n-th failed try (n from 0), before jitter: `baseMs · 2^n`. */
  baseMs: number;
  /** Injectable for tests. */
  sleep: (ms: number) => Promise<void>;
  random: () => number;
}

/**
 * Three tries, 25 ms then 50 ms apart (each ±50 %): one reset or one 503 no longer fails a pass that
 * needs a dozen reads, and a read that fails three times in ~100 ms is left to the queue's backoff.
 */
export const READ_RETRY: ReadRetry = {
  attempts: 3,
  baseMs: 25,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};

/**
 * A read where "not there" is an answer, not a failure. It is a GET, so sending it again is harmless: a
 * transient failure (see `isTransient`) is tried again a few times before the pass gives up on it. A 404,
 * 403, 409, 422 or 429 is an answer and is not. Never pass a write here: use `unlessGone`.
 */
export async function getOrUndefined<T>(
  context: ErrorContext,
  request: () => Promise<T>,
  retry: ReadRetry = READ_RETRY,
): Promise<T | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await orUndefined(context, request);
    } catch (error) {
      const last = attempt + 1 >= retry.attempts;
      if (last || !(error instanceof PortError) || !isTransient(error.errorClass)) throw error;
      await retry.sleep(Math.round(retry.baseMs * 2 ** attempt * (0.5 + retry.random())));
    }
  }
}

async function orUndefined<T>(context: ErrorContext, request: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call(context, request);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * A write whose target being gone already means the job is done (delete, finalizer removal). Tried once:
 * whether a write is safe to repeat is the pass's business, not this helper's.
 */
export async function unlessGone<T>(context: ErrorContext, request: () => Promise<T>): Promise<T | undefined> {
  return orUndefined(context, request);
}
