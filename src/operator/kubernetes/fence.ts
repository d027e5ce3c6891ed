/**
 * Fencing at the last moment before a request leaves: every write request made from a KubeConfig asks
 * the leadership, and is refused (PortError `notLeader`) unless this replica still holds the lease.
 *
 * fenced-ports.ts asks once at the start of each port write, which is not always right before the request
 * leaves. An apply or an owner change first GETs the live object and only then writes; and a request may
 * have to wait for a connection (a new one's TLS handshake, or a free one in the pool). A process paused
 * there (SIGSTOP, a frozen VM) resumes with the answer or the handshake waiting and, before any timer of its
 * own runs, would send the write; if the other replica has not touched that object yet, no resourceVersion
 * stops it, and an Event has none at all. So the leadership is asked again, per request:
 * - when the request is built, before it waits for anything (client-node calls
 *   `kc.applySecurityAuthentication(context)` for every request, the seam connection.ts uses too);
 * - when it gets its socket, in the same synchronous step in which Node then writes it out (the agent is
 *   wrapped for that); a request that gets a new connection is held in the socket (corked) until the
 *   connection is ready, TLS handshake done, and asked once more then.
 * What remains is a pause within that one synchronous step, between the check and the system call.
 *
 * GETs (reads, lists, watches) always pass, and so do the Lease's own requests, which are how this replica
 * learns whether it leads at all.
 */
import type { Agent, ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { HttpMethod, type KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { PortError } from '../core/errors.ts';
import type { Leadership } from '../driver/sources.ts';
import { NOT_LEADER_CODE } from './errors.ts';

/**
 * The path of a request URL, read off the string: this runs for every write, and parsing the URL for it cost
 * more than the check (issue 10).
 */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('://') + 3);
  if (start < 0) return '/';
  const end = url.indexOf('?', start);
  return url.slice(start, end < 0 ? undefined : end);
}

/**
 * The elector's own requests: coordination.k8s.io, where the Lease lives; also below a server URL with a
 * path of its own (an API served behind a proxy under a prefix).
 */
const LEASE_PATH = /\/apis\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases(\/|$)/;
const isLeaseRequest = (path: string) => LEASE_PATH.test(path);

type Refusal = () => PortError | undefined;

/**
 * Whether `socket` can carry a request at once: connected and, over TLS, its handshake done (both sides'
 * Finished messages exchanged). Not `request.reusedSocket`: Node sets that only when the request found the
 * socket idle in the pool, not when it waited for a busy one (the pool at its bound) and was handed it as it
 * freed, connected long ago. Held for a 'secureConnect' that had come and gone, such a write never left.
 */
function established(socket: Socket): boolean {
  if (socket.connecting) return false;
  if (!(socket instanceof TLSSocket)) return true;
  return socket.getFinished() !== undefined && socket.getPeerFinished() !== undefined;
}

/** Asks `refusal` when the request gets its socket and, on a new connection, again once it is ready. */
function fenceRequest(request: ClientRequest, refusal: Refusal): void {
  request.once('socket', (socket: Socket) => {
    // Node writes the request out right after this event, unless the request is destroyed here.
    const refused = refusal();
    if (refused) {
      request.destroy(refused);
      return;
    }
    if (established(socket)) return;
    // A new connection: keep what the request writes in the socket until the handshake is done.
    socket.cork();
    socket.once(socket instanceof TLSSocket ? 'secureConnect' : 'connect', () => {
      const late = refusal();
      if (late) socket.destroy(late);
      else socket.uncork();
    });
  });
}

/** `agent` (the shared pool), except that the request it is given is fenced (fenceRequest). */
function fencedAgent(agent: Agent, refusal: Refusal): Agent {
  const pool = agent as Agent & { addRequest(request: ClientRequest, options: object): void };
  return new Proxy(pool, {
    get(target, property) {
      if (property !== 'addRequest') return Reflect.get(target, property, target);
      return (request: ClientRequest, options: object) => {
        fenceRequest(request, refusal);
        target.addRequest(request, options);
      };
    },
  });
}

/**
 * Makes every write request of `kc` (and of every client made from it, before or after this call) check
 * `leadership.isLeader()` when it is built and when it is written out. Returns `kc`.
 */
export function fenceWrites(kc: KubeConfig, leadership: Pick<Leadership, 'isLeader' | 'identity'>): KubeConfig {
  const authenticate = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (context: RequestContext) => {
    await authenticate(context);
    const method = context.getHttpMethod();
    if (method === HttpMethod.GET) return;
    const path = pathOf(context.getUrl());
    if (isLeaseRequest(path)) return;
    const refusal: Refusal = () =>
      leadership.isLeader()
        ? undefined
        : // The code survives node-fetch, which rewraps an error its request is destroyed with keeping only
          // the code (errors.ts reads it back), so a refusal at the socket is still told from a broken connection.
          Object.assign(
            new PortError(
              'notLeader',
              `${method} ${path} refused: ${leadership.identity} does not hold the leader lease`,
            ),
            { code: NOT_LEADER_CODE },
          );
    const refused = refusal();
    if (refused) throw refused;
    const agent = context.getAgent();
    if (agent) context.setAgent(fencedAgent(agent as Agent, refusal));
  };
  return kc;
}
