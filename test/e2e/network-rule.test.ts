/**
 * The network rule, checked on the running node: its namespace has no default route and no interface but
 * loopback, the bridge and the Pods' veths; the root namespace has no route into the node's ranges and no
 * kube-proxy chain. (Nothing here sends a packet anywhere to prove it: the test itself keeps the rule.)
 */
import { describe, expect, it } from 'vitest';
import { NETNS } from '../../src/tools/node/layout.ts';
import { command, routesOutOf } from '../../src/tools/node/netns.ts';

describe("the node's network namespace", () => {
  it('has no way out, and nothing of the node is routed through the machine', async () => {
    const routes = await routesOutOf();
    expect(routes.defaultRoute).toBe(false);
    expect(routes.rootRoutesToNode).toEqual([]);

    const links = JSON.parse(await command('ip', ['-n', NETNS, '-j', 'link', 'show'])) as Array<{
      ifname: string;
      link_kind?: string;
      linkinfo?: { info_kind?: string };
    }>;
    const kinds = links.map((l) =>
      l.ifname === 'lo' ? 'lo' : l.ifname === 'cni0' ? 'bridge' : l.ifname.startsWith('veth') ? 'veth' : l.ifname,
    );
    expect(kinds.filter((k) => !['lo', 'bridge', 'veth'].includes(k))).toEqual([]);

    // kube-proxy's chains live in the node's namespace only.
    const rootRules = await command('iptables-save', []);
    expect(rootRules).not.toMatch(/^:KUBE-/m);
    const nodeRules = await command('nsenter', [`--net=/run/netns/${NETNS}`, '--', 'iptables-save']);
    expect(nodeRules).toMatch(/^:KUBE-SERVICES/m);
    // No masquerading of Pod traffic: nothing would leave anyway, but nothing may pretend to be the node.
    expect(nodeRules).not.toMatch(/-s 10\.244\.0\.0\/\d+ .*-j MASQUERADE/);
  });
});
