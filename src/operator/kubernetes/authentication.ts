/**
 * client-node's authentication asked once a second, not once per request.
 *
 * client-node 1.4.0 authenticates every request from scratch in `kc.applySecurityAuthentication`: it reads
 * the CA, client certificate and key again (from their files, or decoding the kubeconfig's base64), asks
 * the token's authenticator, builds the request's agent options and hands them to `createAgent`; our
 * request context, keep-alive (connection.ts) and fencing (fence.ts) wrap that. A CPU profile of
 * `pgfsm run` at 300 clusters (issue 10) charged that chain about 2 % of the operator's main thread, for
 * headers and an agent that are the same request after request.
 *
 * So the library's answer (the headers it sets and the agent it hands over) is kept for
 * {@link AUTHENTICATION_REUSE_MS} and set on the requests of that second as the library would have set
 * it. What still notices a change, and how soon:
 * - a rotated token or CA file, a new client certificate from an exec plugin: within the second. client-go
 *   re-reads a token file once a minute, and client-node's own token-file authenticator does too (so a
 *   second here adds nothing to its delay);
 * - an exec plugin's expiring token: client-node asks the plugin again once the token's expiry has passed;
 *   a request in the second after that may still carry the old token, is refused with a 401, and the ports
 *   drop what is kept (`forgetAuthentication`, rest.ts), so the next request authenticates afresh;
 * - another current context, cluster or user in the KubeConfig (`setCurrentContext`, a reload): at once,
 *   the kept answer belongs to the objects it was made for.
 * A failed authentication (an exec plugin that cannot run) is not kept: every request asks again and fails
 * as it would have.
 *
 * This wraps the library's own method, innermost: keep-alive's pooling and the fence's per-request check of
 * the leadership still run on every request, on top of it (the fence asks when the request is built and
 * when it is written out, whatever is kept here). Only requests made through `applySecurityAuthentication`
 * (the ports' REST client, the generated API clients: the Lease) are concerned; the informers' watches take
 * their options from `applyToHTTPSOptions`, once per watch.
 */
import { type Cluster, HttpMethod, type KubeConfig, RequestContext, type User } from '@kubernetes/client-node';

export const AUTHENTICATION_REUSE_MS = 1_000;

/** What the library set on a request when it last authenticated one. */
interface Kept {
  /** `now()` when it was asked. */
  at: number;
  /** The objects it authenticated for. */
  cluster: Cluster | null;
  user: User | null;
  headers: Record<string, string>;
  agent: ReturnType<RequestContext['getAgent']>;
}

const forgetters = new WeakMap<KubeConfig, () => void>();

/**
 * Makes `kc.applySecurityAuthentication` reuse the library's answer for `reuseMs` (see the module). Call it
 * before anything else wraps that method (connection.ts, fence.ts), so that they still run per request.
 * Idempotent; returns `kc`.
 */
export function reuseAuthentication(
  kc: KubeConfig,
  reuseMs = AUTHENTICATION_REUSE_MS,
  now: () => number = () => performance.now(),
): KubeConfig {
  if (forgetters.has(kc)) return kc;
  const authenticate = kc.applySecurityAuthentication.bind(kc);
  let kept: Kept | undefined;
  forgetters.set(kc, () => {
    kept = undefined;
  });
  kc.applySecurityAuthentication = async (context: RequestContext) => {
    const cluster = kc.getCurrentCluster();
    const user = kc.getCurrentUser();
    const at = now();
    let answer = kept;
    if (!answer || at - answer.at >= reuseMs || answer.cluster !== cluster || answer.user !== user) {
      // A context of its own: the caller's may already carry headers of its own (the generated clients set
      // Accept and Content-Type first), which are not the library's to keep.
      const scratch = new RequestContext(cluster?.server || 'https://authentication.invalid', HttpMethod.GET);
      await authenticate(scratch);
      answer = { at, cluster, user, headers: { ...scratch.getHeaders() }, agent: scratch.getAgent() };
      kept = answer;
    }
    for (const [name, value] of Object.entries(answer.headers)) context.setHeaderParam(name, value);
    if (answer.agent) context.setAgent(answer.agent);
  };
  return kc;
}

/** Drops the answer `reuseAuthentication` keeps for `kc` (a 401: the credentials it holds were refused). */
export function forgetAuthentication(kc: KubeConfig): void {
  forgetters.get(kc)?.();
}
