/** Mapping watch events to the PostgresClusters to reconcile: every rule, and what must not wake anything. */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresClusterClass } from '../../../src/operator/api/schema.ts';
import type { KubeObject, Pooler } from '../../../src/operator/domain/objects.ts';
import {
  type Child,
  CLUSTER_LABEL,
  childNames,
  clusterNameOfChild,
  kindOfChild,
  MANAGED_BY_LABEL,
} from '../../../src/operator/domain/vocabulary.ts';
import { clustersFor, isStatusOnlyUpdate, type MappingLookups } from '../../../src/operator/driver/mapping.ts';
import type { SourceEvent } from '../../../src/operator/driver/sources.ts';

const cluster = (namespace: string, name: string, spec: Partial<PostgresCluster['spec']> = {}): PostgresCluster => ({
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { namespace, name, uid: `uid-${name}`, generation: 1, resourceVersion: '1' },
  spec: { class: 'standard', ...spec },
});

const clusters = [
  cluster('team-a', 'inventory'),
  cluster('team-a', 'orders', {
    class: 'large',
    managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }, { name: 'ro' }],
  }),
  cluster('team-a', 'billing', { managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }] }),
  cluster('team-b', 'inventory'),
  cluster('team-b', 'reports', {
    class: 'large',
    managedRoles: [{ name: 'x', passwordSecretRef: { name: 'app-password' } }],
  }),
];

const poolers: Pooler[] = [
  {
    apiVersion: 'postgresql.cnpg.io/v1',
    kind: 'Pooler',
    metadata: { namespace: 'team-a', name: 'orders-pooler-rw', labels: { [CLUSTER_LABEL]: 'orders' } },
    spec: { cluster: { name: 'orders' }, type: 'rw', pgbouncer: {} },
  },
];

const lookups: MappingLookups = {
  clusters: (namespace) => clusters.filter((c) => namespace === undefined || c.metadata.namespace === namespace),
  pooler: (namespace, name) => poolers.find((p) => p.metadata.namespace === namespace && p.metadata.name === name),
};

const keys = (event: SourceEvent) =>
  clustersFor(event, lookups)
    .map((k) => `${k.namespace}/${k.name}`)
    .sort();

const ownerRef = (name: string, kind = 'PostgresCluster', apiVersion = 'pgfsm.io/v1alpha1') => ({
  apiVersion,
  kind,
  name,
  uid: `uid-${name}`,
  controller: true,
});

const object = (kind: string, namespace: string, name: string, metadata: Partial<KubeObject['metadata']> = {}) =>
  ({ apiVersion: 'v1', kind, metadata: { namespace, name, resourceVersion: '7', ...metadata } }) as KubeObject;

describe('PostgresCluster events', () => {
  const base = cluster('team-a', 'inventory');
  const withMeta = (meta: Partial<PostgresCluster['metadata']>, status?: PostgresCluster['status']) => ({
    ...base,
    metadata: { ...base.metadata, ...meta },
    ...(status ? { status } : {}),
  });

  it('add and delete wake the cluster itself', () => {
    expect(keys({ type: 'add', object: base })).toEqual(['team-a/inventory']);
    expect(keys({ type: 'delete', object: base })).toEqual(['team-a/inventory']);
  });

  it('a status-only update (our own status write) wakes nothing', () => {
    const next = withMeta({ resourceVersion: '2' }, { state: 'Ready', phase: 'Ready' });
    expect(isStatusOnlyUpdate(base, next)).toBe(true);
    expect(keys({ type: 'update', object: next, old: base })).toEqual([]);
  });

  it('label and annotation edits are status-only too (no new generation)', () => {
    const next = withMeta({ resourceVersion: '2', labels: { team: 'a' }, annotations: { note: 'x' } });
    expect(keys({ type: 'update', object: next, old: base })).toEqual([]);
  });

  it('a new generation, a deletion timestamp or a finalizer change wakes the cluster', () => {
    for (const meta of [
      { generation: 2 },
      { deletionTimestamp: '2026-11-30T12:00:00Z' },
      { finalizers: ['pgfsm.io/finalizer'] },
    ]) {
      expect(keys({ type: 'update', object: withMeta({ resourceVersion: '2', ...meta }), old: base })).toEqual([
        'team-a/inventory',
      ]);
    }
    const finalized = withMeta({ finalizers: ['pgfsm.io/finalizer'] });
    expect(keys({ type: 'update', object: withMeta({ finalizers: [] }), old: finalized })).toEqual([
      'team-a/inventory',
    ]);
  });

  it('an update without the old object, or without generations, is never dropped', () => {
    expect(keys({ type: 'update', object: base })).toEqual(['team-a/inventory']);
    const bare = withMeta({ generation: undefined });
    expect(isStatusOnlyUpdate(bare, bare)).toBe(false);
  });
});

describe('PostgresClusterClass events', () => {
  const cls = (name: string): PostgresClusterClass => ({
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresClusterClass',
    metadata: { name, generation: 3 },
    spec: { provisioner: 'postgresql.cnpg.io' },
  });

  it('fans out to every cluster of the class, in every namespace', () => {
    expect(keys({ type: 'update', object: cls('large'), old: cls('large') })).toEqual([
      'team-a/orders',
      'team-b/reports',
    ]);
    expect(keys({ type: 'add', object: cls('standard') })).toEqual([
      'team-a/billing',
      'team-a/inventory',
      'team-b/inventory',
    ]);
    expect(keys({ type: 'delete', object: cls('large') })).toEqual(['team-a/orders', 'team-b/reports']);
  });

  it('a class no cluster uses wakes nothing', () => {
    expect(keys({ type: 'add', object: cls('unused') })).toEqual([]);
  });
});

describe('child events', () => {
  it('a child owned by a PostgresCluster wakes its owner, whatever its kind', () => {
    for (const kind of ['Cluster', 'Pooler', 'Secret', 'ConfigMap']) {
      const child = object(kind, 'team-a', 'whatever', { ownerReferences: [ownerRef('orders')] });
      expect(keys({ type: 'update', object: child, old: child })).toEqual(['team-a/orders']);
    }
  });

  it('CNPG status changes are never filtered by generation', () => {
    const old = object('Cluster', 'team-a', 'orders', { generation: 4, ownerReferences: [ownerRef('orders')] });
    const next = { ...old, metadata: { ...old.metadata, resourceVersion: '8' }, status: { phase: 'healthy' } };
    expect(keys({ type: 'update', object: next as KubeObject, old })).toEqual(['team-a/orders']);
  });

  it('the cluster label names the cluster when there is no owner (e.g. an orphan after Retain)', () => {
    const child = object('Cluster', 'team-b', 'inventory', { labels: { [CLUSTER_LABEL]: 'inventory' } });
    expect(keys({ type: 'delete', object: child })).toEqual(['team-b/inventory']);
  });

  it('an owner reference of another API group is not ours', () => {
    const child = object('ConfigMap', 'team-a', 'cm', {
      ownerReferences: [ownerRef('orders', 'PostgresCluster', 'x.io/v1')],
    });
    expect(keys({ type: 'add', object: child })).toEqual([]);
  });

  it("a pooler's Deployment wakes the cluster named by its Pooler's label", () => {
    const deployment = object('Deployment', 'team-a', 'orders-pooler-rw', {
      ownerReferences: [ownerRef('orders-pooler-rw', 'Pooler', 'postgresql.cnpg.io/v1')],
    });
    expect(keys({ type: 'update', object: deployment, old: deployment })).toEqual(['team-a/orders']);
  });

  it('a Deployment whose Pooler is unknown, or that no Pooler owns, wakes nothing', () => {
    const orphan = object('Deployment', 'team-a', 'gone-pooler-rw', {
      ownerReferences: [ownerRef('gone-pooler-rw', 'Pooler', 'postgresql.cnpg.io/v1')],
    });
    expect(keys({ type: 'delete', object: orphan })).toEqual([]);
    expect(keys({ type: 'add', object: object('Deployment', 'team-a', 'web') })).toEqual([]);
  });

  it('an unlabelled, unowned object named like a child wakes the cluster of that name if it exists', () => {
    expect(keys({ type: 'delete', object: object('Cluster', 'team-a', 'inventory') })).toEqual(['team-a/inventory']);
    expect(keys({ type: 'add', object: object('Pooler', 'team-a', 'orders-pooler-ro') })).toEqual(['team-a/orders']);
    expect(keys({ type: 'add', object: object('Secret', 'team-b', 'inventory-superuser') })).toEqual([
      'team-b/inventory',
    ]);
    expect(keys({ type: 'add', object: object('Cluster', 'team-a', 'nobody') })).toEqual([]);
  });
});

describe('role password Secrets (no owner, no label)', () => {
  it('wake every cluster of their namespace whose managed roles name them', () => {
    const secret = object('Secret', 'team-a', 'app-password');
    expect(keys({ type: 'add', object: secret })).toEqual(['team-a/billing', 'team-a/orders']);
    expect(keys({ type: 'delete', object: secret })).toEqual(['team-a/billing', 'team-a/orders']);
    expect(keys({ type: 'add', object: object('Secret', 'team-b', 'app-password') })).toEqual(['team-b/reports']);
  });

  it('unrelated Secrets wake nothing', () => {
    expect(keys({ type: 'add', object: object('Secret', 'team-a', 'tls-cert') })).toEqual([]);
    // CNPG's own Secrets are owned by its Cluster and labelled cnpg.io/cluster, not ours.
    const cnpgSecret = object('Secret', 'team-a', 'orders-app', {
      labels: { 'cnpg.io/cluster': 'orders', [MANAGED_BY_LABEL]: 'cloudnative-pg' },
      ownerReferences: [ownerRef('orders', 'Cluster', 'postgresql.cnpg.io/v1')],
    });
    expect(keys({ type: 'add', object: cnpgSecret })).toEqual([]);
  });

  it('a labelled Secret that roles also name wakes its cluster and those clusters', () => {
    const secret = object('Secret', 'team-a', 'app-password', { labels: { [CLUSTER_LABEL]: 'orders' } });
    expect(keys({ type: 'add', object: secret })).toEqual(['team-a/billing', 'team-a/orders']);
  });
});

describe('child names, built and read back by the vocabulary', () => {
  it('every child name reads back as its cluster, a hyphenated cluster name included', () => {
    for (const name of ['orders', 'orders-pooler', 'a-superuser']) {
      for (const [child, childName] of Object.entries(childNames(name))) {
        expect(clusterNameOfChild(kindOfChild(child as Child), childName), child).toBe(name);
      }
    }
  });

  it('a name that is only a suffix, or of another kind, names no cluster', () => {
    expect(clusterNameOfChild('Secret', '-superuser')).toBeUndefined();
    expect(clusterNameOfChild('Secret', 'orders-endpoints')).toBeUndefined();
    expect(clusterNameOfChild('Pooler', 'orders')).toBeUndefined();
    expect(clusterNameOfChild('Deployment', 'orders-pooler-rw')).toBeUndefined();
    expect(clusterNameOfChild('Cluster', '')).toBeUndefined();
  });
});
