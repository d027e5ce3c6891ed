/**
 * The namespaced install mode's watches: `--namespace a,b` is checked when parsed, and one informer per
 * namespace is joined into one source per kind that reads like a single informer over those namespaces.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunOptions, registerRun, watchedNamespaces } from '../../../src/operator/cli/run.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import type { ObjectSource, SourceEvent } from '../../../src/operator/driver/sources.ts';
import { MultiNamespaceSource, parseNamespaceList } from '../../../src/operator/kubernetes/multi-namespace.ts';
import { createWatchSources } from '../../../src/operator/kubernetes/watch-sources.ts';

/** A stand-in for one namespace's informer: a cache, a state, and its listeners. */
class FakeSource implements ObjectSource {
  readonly resource = 'fake';
  synced = false;
  lastSeen = 0;
  isFresh = false;
  started = 0;
  stopped = 0;
  readonly objects: KubeObject[] = [];
  readonly listeners = new Set<(event: SourceEvent) => void>();
  constructor(readonly namespace: string) {}
  fresh() {
    return this.isFresh;
  }
  get(namespace: string, name: string) {
    return this.objects.find((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  }
  list(namespace?: string) {
    return this.objects.filter((o) => namespace === undefined || o.metadata.namespace === namespace);
  }
  on(listener: (event: SourceEvent) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  start() {
    this.started++;
  }
  async stop() {
    this.stopped++;
  }
  add(name: string) {
    const object = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: this.namespace } } as KubeObject;
    this.objects.push(object);
    for (const l of this.listeners) l({ type: 'add', object });
  }
}

const twoNamespaces = () => {
  const a = new FakeSource('a');
  const b = new FakeSource('b');
  const merged = new MultiNamespaceSource('secrets in a,b', new Map([['a', a] as const, ['b', b] as const]));
  return { a, b, merged };
};

describe('MultiNamespaceSource', () => {
  it('is synced and fresh only when every namespace is, and as old as its oldest watch', () => {
    const { a, b, merged } = twoNamespaces();
    a.synced = true;
    a.isFresh = true;
    a.lastSeen = 2_000;
    b.lastSeen = 1_000;
    expect(merged.synced).toBe(false);
    expect(merged.fresh()).toBe(false);
    expect(merged.lastSeen).toBe(1_000);
    b.synced = true;
    expect(merged.synced).toBe(true);
    expect(merged.fresh()).toBe(false);
    b.isFresh = true;
    expect(merged.fresh()).toBe(true);
    b.lastSeen = 3_000;
    expect(merged.lastSeen).toBe(2_000);
  });

  it('gets from the namespace that holds the object, lists one namespace or all', () => {
    const { a, b, merged } = twoNamespaces();
    a.add('x');
    b.add('x');
    b.add('y');
    expect(merged.get('a', 'x')?.metadata.namespace).toBe('a');
    expect(merged.get('b', 'y')?.metadata.namespace).toBe('b');
    expect(merged.get('a', 'y')).toBeUndefined();
    expect(merged.get('c', 'x')).toBeUndefined();
    expect(merged.list('b').map((o) => o.metadata.name)).toEqual(['x', 'y']);
    expect(merged.list('c')).toEqual([]);
    expect(merged.list().map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['a/x', 'b/x', 'b/y']);
  });

  it('tells a listener the events of every namespace, until it unsubscribes', () => {
    const { a, b, merged } = twoNamespaces();
    const heard: string[] = [];
    const off = merged.on((e) => heard.push(`${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name}`));
    a.add('x');
    b.add('y');
    off();
    a.add('z');
    expect(heard).toEqual(['add a/x', 'add b/y']);
    expect(a.listeners.size + b.listeners.size).toBe(0);
  });

  it('starts and stops every namespace', async () => {
    const { a, b, merged } = twoNamespaces();
    merged.start();
    await merged.stop();
    expect([a.started, b.started, a.stopped, b.stopped]).toEqual([1, 1, 1, 1]);
  });

  it('refuses to watch no namespace at all', () => {
    expect(() => new MultiNamespaceSource('secrets', new Map())).toThrow(/no namespace/);
  });
});

describe('createWatchSources with namespaces', () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });

  it('merges one informer per namespace for every namespaced kind; classes stay cluster-wide', () => {
    const sources = createWatchSources(kc, { namespaces: ['team-a', 'team-b'] });
    for (const [kind, source] of Object.entries(sources)) {
      if (kind === 'classes') continue;
      expect(source, kind).toBeInstanceOf(MultiNamespaceSource);
      expect(source.resource, kind).toMatch(/ in team-a,team-b$/);
    }
    expect(sources.classes.resource).toBe('postgresclusterclasses');
    expect(sources.classes).not.toBeInstanceOf(MultiNamespaceSource);
  });

  it('watches one namespace with plain informers, and all namespaces by default', () => {
    expect(createWatchSources(kc, { namespaces: ['team-a'] }).secrets.resource).toBe('secrets in team-a');
    expect(createWatchSources(kc, { namespace: 'team-a' }).secrets.resource).toBe('secrets in team-a');
    expect(createWatchSources(kc).secrets.resource).toBe('secrets');
  });

  it('refuses an empty list and a namespace listed twice', () => {
    expect(() => createWatchSources(kc, { namespaces: [] })).toThrow(/empty/);
    expect(() => createWatchSources(kc, { namespaces: ['a', 'a'] })).toThrow(/twice/);
  });
});

describe('--namespace a,b', () => {
  afterEach(() => {
    delete process.env.PGFSM_NAMESPACE;
  });

  async function parse(...args: string[]): Promise<RunOptions> {
    const program = new Command().exitOverride();
    let parsed: RunOptions | undefined;
    registerRun(program)
      .exitOverride()
      .configureOutput({ writeErr: () => {} })
      .action((options: RunOptions) => {
        parsed = options;
      });
    await program.parseAsync(['node', 'pgfsm', 'run', ...args]);
    if (!parsed) throw new Error('action not called');
    return parsed;
  }

  it('parses a comma-separated list of namespace names, from the flag or the environment', async () => {
    expect(parseNamespaceList('team-a,team-b')).toEqual(['team-a', 'team-b']);
    expect(parseNamespaceList(' team-a , b2 ')).toEqual(['team-a', 'b2']);
    expect(parseNamespaceList('a')).toEqual(['a']);
    expect(parseNamespaceList(undefined)).toBeUndefined();
    expect(parseNamespaceList('')).toBeUndefined();
    expect(watchedNamespaces(await parse('--namespace', 'team-a,team-b'))).toEqual(['team-a', 'team-b']);
    process.env.PGFSM_NAMESPACE = 'x,y,z';
    expect(watchedNamespaces(await parse())).toEqual(['x', 'y', 'z']);
    delete process.env.PGFSM_NAMESPACE;
    expect(watchedNamespaces(await parse())).toBeUndefined();
  });

  it.each([
    ['Team-A', /"Team-A" is not a namespace name/],
    ['team_a', /"team_a" is not a namespace name/],
    ['-a', /"-a" is not a namespace name/],
    ['a-', /"a-" is not a namespace name/],
    ['a/b', /"a\/b" is not a namespace name/],
    ['a.b', /"a\.b" is not a namespace name/],
    ['x'.repeat(64), /is not a namespace name.*at most 63/],
    ['a,,b', /empty namespace name/],
    ['a,', /empty namespace name/],
    ['a,b,a', /namespace "a" is listed twice/],
  ])('rejects %s with a message naming it', async (value, message) => {
    expect(() => parseNamespaceList(value)).toThrow(message);
    await expect(parse(`--namespace=${value}`)).rejects.toThrow(message);
    process.env.PGFSM_NAMESPACE = value;
    await expect(parse()).rejects.toThrow(message);
  });

  it('accepts the longest namespace name', () => {
    expect(parseNamespaceList('x'.repeat(63))).toEqual(['x'.repeat(63)]);
  });
});
