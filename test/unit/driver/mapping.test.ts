/** Mapping watch events to the PostgresClusters to reconcile: every rule, and what must not wake anything. */
import fc from 'fast-check';
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
import {
  clustersFor,
  clusterUpdateOf,
  isStatusUpdate,
  type MappingLookups,
  RoleSecretIndex,
} from '../../../src/operator/driver/mapping.ts';
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

  it("a status-only update wakes the cluster: whose write it was is the controller's to tell (echoes.ts)", () => {
    const ours = withMeta({ resourceVersion: '2' }, { state: 'Ready', phase: 'Ready' });
    const byHand = withMeta({ resourceVersion: '3' }, { state: 'Failed', phase: 'Ready' });
    for (const [old, next] of [
      [base, ours],
      [ours, byHand],
    ] as const) {
      expect(clusterUpdateOf(old, next)).toBe('status');
      expect(isStatusUpdate({ type: 'update', object: next, old })).toBe(true);
      expect(keys({ type: 'update', object: next, old })).toEqual(['team-a/inventory']);
    }
    // Only an update of a PostgresCluster is one: an add, or a CNPG status, is mapped as any other event.
    expect(isStatusUpdate({ type: 'add', object: ours })).toBe(false);
    const cnpg = object('Cluster', 'team-a', 'inventory', { generation: 1 });
    expect(
      isStatusUpdate({ type: 'update', object: { ...cnpg, status: { phase: 'x' } } as KubeObject, old: cnpg }),
    ).toBe(false);
  });

  it('labels, annotations and managedFields wake nothing: a pass never reads them on the cluster', () => {
    const status = { state: 'Ready', phase: 'Ready' };
    const before = withMeta({}, status);
    for (const meta of [
      { labels: { team: 'a' } },
      { annotations: { 'pgfsm.io/adopt': 'true', note: 'x' } },
      { managedFields: [{ manager: 'kubectl-label', operation: 'Update' }] },
      {},
    ]) {
      const next = withMeta({ resourceVersion: '2', ...meta } as Partial<PostgresCluster['metadata']>, { ...status });
      expect(clusterUpdateOf(before, next)).toBe('unread');
      expect(keys({ type: 'update', object: next, old: before })).toEqual([]);
    }
  });

  it('a new generation, a deletion timestamp, a finalizer change or another uid wakes the cluster', () => {
    for (const meta of [
      { generation: 2 },
      { deletionTimestamp: '2026-11-30T12:00:00Z' },
      { finalizers: ['pgfsm.io/finalizer'] },
    ]) {
      expect(keys({ type: 'update', object: withMeta({ resourceVersion: '2', ...meta }), old: base })).toEqual([
        'team-a/inventory',
      ]);
    }
    // Another object under the same name (a relist after a delete and create): whatever its generation says.
    expect(clusterUpdateOf(base, withMeta({ uid: 'uid-other' }))).toBe('lifecycle');
    const finalized = withMeta({ finalizers: ['pgfsm.io/finalizer'] });
    expect(keys({ type: 'update', object: withMeta({ finalizers: [] }), old: finalized })).toEqual([
      'team-a/inventory',
    ]);
  });

  it('an update without the old object, or without generations, is never dropped', () => {
    expect(keys({ type: 'update', object: base })).toEqual(['team-a/inventory']);
    const bare = withMeta({ generation: undefined });
    expect(clusterUpdateOf(bare, bare)).toBe('lifecycle');
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
    const edited = { ...cls('large'), metadata: { name: 'large', generation: 4 } };
    expect(keys({ type: 'update', object: edited, old: cls('large') })).toEqual(['team-a/orders', 'team-b/reports']);
    expect(keys({ type: 'add', object: cls('standard') })).toEqual([
      'team-a/billing',
      'team-a/inventory',
      'team-b/inventory',
    ]);
    expect(keys({ type: 'delete', object: cls('large') })).toEqual(['team-a/orders', 'team-b/reports']);
  });

  it('a change of its metadata alone (its finalizer: class-protection.ts) wakes no cluster', () => {
    const protectedClass = {
      ...cls('large'),
      metadata: { ...cls('large').metadata, finalizers: ['pgfsm.io/class-in-use'] },
    };
    expect(keys({ type: 'update', object: protectedClass, old: cls('large') })).toEqual([]);
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

describe('the index of role password Secrets the controller keeps', () => {
  /** The index fed every cluster's add event, and mapping through it instead of a scan. */
  const indexed = () => {
    const index = new RoleSecretIndex();
    for (const c of clusters) index.update({ type: 'add', object: c });
    const through: MappingLookups = { ...lookups, clustersUsingSecret: (ns, name) => index.clustersUsing(ns, name) };
    const keysThrough = (event: SourceEvent) =>
      clustersFor(event, through)
        .map((k) => `${k.namespace}/${k.name}`)
        .sort();
    return { index, keysThrough };
  };

  it('maps every Secret event as the scan does', () => {
    const { keysThrough } = indexed();
    for (const secret of [
      object('Secret', 'team-a', 'app-password'),
      object('Secret', 'team-b', 'app-password'),
      object('Secret', 'team-a', 'tls-cert'),
      object('Secret', 'team-a', 'app-password', { labels: { [CLUSTER_LABEL]: 'orders' } }),
    ]) {
      expect(keysThrough({ type: 'add', object: secret })).toEqual(keys({ type: 'add', object: secret }));
    }
  });

  it('follows a cluster that changes the Secrets its roles name, and one that is deleted', () => {
    const { index, keysThrough } = indexed();
    const secret = (name: string) => ({ type: 'add' as const, object: object('Secret', 'team-a', name) });
    const billing = clusters.find((c) => c.metadata.name === 'billing') as PostgresCluster;
    const moved = {
      ...billing,
      spec: { ...billing.spec, managedRoles: [{ name: 'app', passwordSecretRef: { name: 'other' } }] },
    };
    index.update({ type: 'update', object: moved, old: billing });
    expect(keysThrough(secret('app-password'))).toEqual(['team-a/orders']);
    expect(keysThrough(secret('other'))).toEqual(['team-a/billing']);
    index.update({ type: 'delete', object: moved });
    expect(keysThrough(secret('other'))).toEqual([]);
    // Malformed clusters name nothing, and do not throw.
    index.update({ type: 'add', object: { ...billing, spec: 'x' } as unknown as PostgresCluster });
    expect(keysThrough(secret('app-password'))).toEqual(['team-a/orders']);
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

describe('malformed clusters in the cache (stored before the CRD rules, or with validation off)', () => {
  const healthy = cluster('team-m', 'healthy', {
    class: 'large',
    managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
  });
  const meta = (name: string) => ({ namespace: 'team-m', name, uid: `uid-${name}`, generation: 1 });
  /** Whatever JSON a stored object may hold, the healthy cluster beside it must still be found. */
  const malformed: unknown[] = [
    { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: meta('no-spec') },
    { kind: 'PostgresCluster', metadata: meta('spec-null'), spec: null },
    { kind: 'PostgresCluster', metadata: meta('spec-string'), spec: 'large' },
    { kind: 'PostgresCluster', metadata: meta('spec-array'), spec: [{ class: 'large' }] },
    { kind: 'PostgresCluster', metadata: meta('roles-string'), spec: { class: 'large', managedRoles: 'app' } },
    {
      kind: 'PostgresCluster',
      metadata: meta('roles-object'),
      spec: { class: 'large', managedRoles: { name: 'app', passwordSecretRef: { name: 'app-password' } } },
    },
    { kind: 'PostgresCluster', metadata: meta('roles-number'), spec: { class: 'large', managedRoles: 7 } },
    { kind: 'PostgresCluster', metadata: meta('roles-null'), spec: { class: 'large', managedRoles: null } },
    {
      kind: 'PostgresCluster',
      metadata: meta('roles-odd'),
      spec: {
        class: 'large',
        managedRoles: [
          null,
          7,
          'app',
          [],
          { name: 'no-ref' },
          { name: 'ref-null', passwordSecretRef: null },
          { name: 'ref-string', passwordSecretRef: 'app-password' },
          { name: 'ref-name-number', passwordSecretRef: { name: 7 } },
        ],
      },
    },
    { kind: 'PostgresCluster', metadata: meta('class-number'), spec: { class: 7 } },
    { kind: 'PostgresCluster', metadata: meta('class-object'), spec: { class: { name: 'large' } } },
    { kind: 'PostgresCluster', metadata: meta('class-null'), spec: { class: null } },
    { kind: 'PostgresCluster', metadata: { namespace: 'team-m' }, spec: { class: 'large' } },
    { kind: 'PostgresCluster', metadata: null, spec: { class: 'large' } },
    { kind: 'PostgresCluster', spec: { class: 'large' } },
    null,
    'not an object',
  ];
  const cache = [...malformed, healthy] as PostgresCluster[];
  const messy: MappingLookups = {
    clusters: (namespace) =>
      namespace === undefined
        ? cache
        : cache.filter((c) => (c as { metadata?: { namespace?: string } } | null)?.metadata?.namespace === namespace),
    pooler: () => undefined,
  };
  const found = (event: SourceEvent) =>
    clustersFor(event, messy)
      .map((k) => `${k.namespace}/${k.name}`)
      .sort();

  it('a role Secret event still finds the healthy cluster, and only clusters that truly name it', () => {
    expect(found({ type: 'add', object: object('Secret', 'team-m', 'app-password') })).toEqual(['team-m/healthy']);
    expect(found({ type: 'delete', object: object('Secret', 'team-m', 'app-password') })).toEqual(['team-m/healthy']);
  });

  it('a class event still finds the healthy cluster, in every namespace', () => {
    const cls = { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresClusterClass', metadata: { name: 'large' } };
    // The malformed clusters of that class are woken too: their own pass is where they fail.
    expect(found({ type: 'update', object: cls as KubeObject, old: cls as KubeObject })).toEqual([
      'team-m/healthy',
      'team-m/roles-null',
      'team-m/roles-number',
      'team-m/roles-object',
      'team-m/roles-odd',
      'team-m/roles-string',
    ]);
  });

  it('a child event (owned, labelled, or named like a child) still finds the healthy cluster', () => {
    const owned = object('Cluster', 'team-m', 'healthy', { ownerReferences: [ownerRef('healthy')] });
    expect(found({ type: 'update', object: owned, old: owned })).toEqual(['team-m/healthy']);
    const labelled = object('ConfigMap', 'team-m', 'x', { labels: { [CLUSTER_LABEL]: 'healthy' } });
    expect(found({ type: 'add', object: labelled })).toEqual(['team-m/healthy']);
    expect(found({ type: 'delete', object: object('Pooler', 'team-m', 'healthy-pooler-rw') })).toEqual([
      'team-m/healthy',
    ]);
    // A malformed cluster's own children still wake it: its pass is where it fails.
    expect(found({ type: 'delete', object: object('Cluster', 'team-m', 'no-spec') })).toEqual(['team-m/no-spec']);
  });

  it('the malformed cluster itself is still woken by its own events, and a child with odd owners throws nothing', () => {
    for (const object of malformed.slice(0, 12) as KubeObject[]) {
      expect(clustersFor({ type: 'add', object }, messy)).toEqual([
        { namespace: 'team-m', name: object.metadata.name },
      ]);
    }
    const odd = object('Secret', 'team-m', 'app-password', {
      ownerReferences: [null, 7, { kind: 'PostgresCluster' }, { kind: 'PostgresCluster', apiVersion: 7 }] as never,
      labels: null as never,
    });
    expect(found({ type: 'add', object: odd })).toEqual(['team-m/healthy']);
  });

  it('never throws, whatever a cached cluster holds', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }), (spec, metadata) => {
        const weird = [
          { kind: 'PostgresCluster', metadata, spec },
          { kind: 'PostgresCluster', metadata: meta('w'), spec },
          healthy,
        ];
        const lookupsOf: MappingLookups = { clusters: () => weird as PostgresCluster[], pooler: () => undefined };
        const secret = object('Secret', 'team-m', 'app-password');
        expect(clustersFor({ type: 'add', object: secret }, lookupsOf)).toContainEqual({
          namespace: 'team-m',
          name: 'healthy',
        });
        const cls = { kind: 'PostgresClusterClass', metadata: { name: 'large' } } as KubeObject;
        expect(clustersFor({ type: 'add', object: cls }, lookupsOf)).toContainEqual({
          namespace: 'team-m',
          name: 'healthy',
        });
      }),
      { numRuns: 300, seed: 20261201 },
    );
  });
});

describe('a restore waits on its source (issue 36)', () => {
  const restoring = cluster('team-a', 'orders-copy', { restore: { source: { cluster: 'orders' } } });
  const withRestore: MappingLookups = {
    ...lookups,
    clusters: (ns) => [...lookups.clusters(ns), ...(ns === undefined || ns === 'team-a' ? [restoring] : [])],
  };
  const source = clusters[1] as PostgresCluster;

  it("a change of the source's status wakes the clusters restoring from it, in its namespace only", () => {
    const next = {
      ...source,
      status: {
        backup: { serverName: 'orders-uid-orde', destinationPath: 's3://b/team-a/', objectStore: 'orders-backups' },
      },
    };
    const woken = clustersFor({ type: 'update', object: next, old: source }, withRestore).map(
      (k) => `${k.namespace}/${k.name}`,
    );
    expect(woken.sort()).toEqual(['team-a/orders', 'team-a/orders-copy']);
    const elsewhere = { ...next, metadata: { ...next.metadata, namespace: 'team-b' } };
    expect(clustersFor({ type: 'add', object: elsewhere }, withRestore).map((k) => k.name)).toEqual(['orders']);
  });

  it('a new pgfsm.io/backup-now token wakes the cluster; another annotation does not', () => {
    const annotated = (annotations: Record<string, string>) => ({
      ...source,
      metadata: { ...source.metadata, annotations },
    });
    expect(clusterUpdateOf(annotated({}), annotated({ 'pgfsm.io/backup-now': '1' }))).toBe('lifecycle');
    expect(clusterUpdateOf(annotated({ 'pgfsm.io/backup-now': '1' }), annotated({ 'pgfsm.io/backup-now': '2' }))).toBe(
      'lifecycle',
    );
    expect(clusterUpdateOf(annotated({}), annotated({ team: 'a' }))).toBe('unread');
  });
});
