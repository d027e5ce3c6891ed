/**
 * client-node's authentication reused for a second (src/operator/kubernetes/authentication.ts): the
 * library is asked once per second of requests, each request still gets the library's headers and agent
 * beside its own, and a change of token, context or a refusal is noticed as the module says.
 */
import { Agent } from 'node:https';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { forgetAuthentication, reuseAuthentication } from '../../../src/operator/kubernetes/authentication.ts';
import { fenceWrites } from '../../../src/operator/kubernetes/fence.ts';

const cluster = (name: string) => ({ name, server: `https://${name}.example:6443`, skipTLSVerify: true });

/** A KubeConfig of two contexts, its library method spied on, reused on a clock the test moves. */
function setUp() {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster('east'), cluster('west')],
    users: [
      { name: 'east-user', token: 'token-1' },
      { name: 'west-user', token: 'west-token' },
    ],
    contexts: [
      { name: 'east', cluster: 'east', user: 'east-user' },
      { name: 'west', cluster: 'west', user: 'west-user' },
    ],
    currentContext: 'east',
  });
  const library = vi.spyOn(kc, 'applySecurityAuthentication');
  const clock = { ms: 0 };
  reuseAuthentication(kc, 1_000, () => clock.ms);
  const authenticate = async (method = HttpMethod.GET) => {
    const context = new RequestContext('https://east.example:6443/api/v1/namespaces/db/configmaps', method);
    context.setHeaderParam('Accept', 'application/json');
    await kc.applySecurityAuthentication(context);
    return context;
  };
  return { kc, library, clock, authenticate };
}

/** The token a user of the KubeConfig holds, rotated in place as a reloaded file would be read. */
const rotate = (kc: KubeConfig, token: string) => {
  (kc.getCurrentUser() as { token?: string }).token = token;
};

describe('reuseAuthentication', () => {
  it('asks the library once per second and gives every request its headers and agent beside the caller’s own', async () => {
    const { library, clock, authenticate } = setUp();
    const first = await authenticate();
    clock.ms = 999;
    const second = await authenticate(HttpMethod.PATCH);
    expect(library).toHaveBeenCalledTimes(1);
    for (const context of [first, second]) {
      expect(context.getHeaders()).toEqual({ Authorization: 'Bearer token-1', Accept: 'application/json' });
    }
    expect(second.getAgent()).toBeInstanceOf(Agent);
    expect(second.getAgent()).toBe(first.getAgent());
  });

  it('notices a rotated token within the second, and another context at once', async () => {
    const { kc, library, clock, authenticate } = setUp();
    await authenticate();
    rotate(kc, 'token-2');
    clock.ms = 500;
    expect((await authenticate()).getHeaders().Authorization).toBe('Bearer token-1');
    clock.ms = 1_000;
    expect((await authenticate()).getHeaders().Authorization).toBe('Bearer token-2');
    kc.setCurrentContext('west');
    expect((await authenticate()).getHeaders().Authorization).toBe('Bearer west-token');
    expect(library).toHaveBeenCalledTimes(3);
  });

  it('asks again once told the credentials were refused, and keeps no failed authentication', async () => {
    const { kc, library, authenticate } = setUp();
    await authenticate();
    rotate(kc, 'token-2');
    forgetAuthentication(kc);
    expect((await authenticate()).getHeaders().Authorization).toBe('Bearer token-2');
    expect(library).toHaveBeenCalledTimes(2);

    forgetAuthentication(kc);
    library.mockRejectedValueOnce(new Error('exec plugin failed'));
    await expect(authenticate()).rejects.toThrow('exec plugin failed');
    expect((await authenticate()).getHeaders().Authorization).toBe('Bearer token-2');
    expect(library).toHaveBeenCalledTimes(4);
  });

  it('leaves the fence wrapped around it asking the leadership on every write', async () => {
    const { kc, library, authenticate } = setUp();
    let leading = true;
    fenceWrites(kc, { identity: 'replica-a', isLeader: () => leading });
    await authenticate(HttpMethod.POST);
    leading = false;
    await expect(authenticate(HttpMethod.POST)).rejects.toThrow('replica-a does not hold the leader lease');
    await authenticate(HttpMethod.GET);
    expect(library).toHaveBeenCalledTimes(1);
  });

  it('wraps a KubeConfig once', () => {
    const { kc } = setUp();
    const wrapped = kc.applySecurityAuthentication;
    expect(reuseAuthentication(kc)).toBe(kc);
    expect(kc.applySecurityAuthentication).toBe(wrapped);
  });
});
