/**
 * Maps client-node failures onto the port error classes that decide the retry (src/core/errors.ts).
 *
 * Messages stay short and never carry a response body: a Secret's body holds values, and client-node's
 * own `ApiException.message` embeds the whole body and the headers. Only the API server's `Status`
 * reason and (except for Secrets) its one-line message are kept, because a 422 message names the field.
 *
 * An object refused at admission is `rejected`: the schema or a CEL rule (400/422), or a validating
 * webhook such as CNPG's. The API server passes a webhook's status on (CNPG answers 422 `Invalid`) and
 * prefixes its message with `admission webhook "<name>" denied the request`; a webhook that denies
 * without a status answers 403, told apart from RBAC's 403 by that prefix. The refusal's message is kept
 * whole (`PortError.refusal`): it is what the user needs to fix the spec.
 *
 * A create in a namespace being deleted is refused with 403 too, by the NamespaceLifecycle admission plugin
 * (cause NamespaceTerminating): `namespaceTerminating`, which a pass skips quietly instead of warning.
 */
import { ApiException } from '@kubernetes/client-node';
import { type ErrorClass, PortError } from '../core/errors.ts';

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
const WEBHOOK_DENIAL = /^admission webhook "[^"]*" denied the request/;

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
  if (message !== undefined && WEBHOOK_DENIAL.test(message)) return 'rejected';
  if (
    code === 403 &&
    (causes.includes(NAMESPACE_TERMINATING_CAUSE) || (message !== undefined && NAMESPACE_TERMINATING.test(message)))
  ) {
    return 'namespaceTerminating';
  }
  if (code === 401 || code === 403) return 'forbidden';
  return 'other';
}

/** Transport failures that are worth a retry after a delay: the request may never have reached the server. */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ECONNRESET', 'ESOCKETTIMEDOUT', 'ECONNABORTED', 'EPIPE']);

function isClientTimeout(error: { code?: unknown; type?: unknown; name?: unknown }): boolean {
  return (
    (typeof error.code === 'string' && TIMEOUT_CODES.has(error.code)) ||
    // node-fetch 2 (client-node 1.x) reports its own timeouts as FetchError types.
    error.type === 'request-timeout' ||
    error.type === 'body-timeout' ||
    error.name === 'AbortError' ||
    error.name === 'TimeoutError'
  );
}

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
  if (error instanceof ApiException) {
    const status = statusOf(error.body);
    const errorClass = classOfStatus(error.code, status.reason, status.message, status.causes);
    const reason = status.reason ? ` ${status.reason}` : '';
    const said = context.sensitive ? undefined : status.message;
    const detail = said ? `: ${oneLine(said)}` : '';
    const message = `${context.what}: HTTP ${error.code}${reason}${detail}`;
    return errorClass === 'rejected' && said
      ? new PortError(errorClass, message, said)
      : new PortError(errorClass, message);
  }
  if (typeof error === 'object' && error !== null) {
    const e = error as { code?: unknown; type?: unknown; name?: unknown; message?: unknown };
    const label = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'error';
    // A transport message may quote a piece of a response body (JSON parse errors do): not for Secrets.
    const detail = typeof e.message === 'string' && !context.sensitive ? ` (${oneLine(e.message)})` : '';
    return new PortError(isClientTimeout(e) ? 'timeout' : 'other', `${context.what}: ${label}${detail}`);
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

/** A read where "not there" is an answer, not a failure. */
export async function getOrUndefined<T>(context: ErrorContext, request: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call(context, request);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** A write whose target being gone already means the job is done (delete, finalizer removal). */
export async function unlessGone(context: ErrorContext, request: () => Promise<unknown>): Promise<void> {
  await getOrUndefined(context, request);
}
