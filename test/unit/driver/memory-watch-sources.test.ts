/**
 * The watch sources over the in-memory API emit what the Kubernetes informers emit, so that the
 * simulation wakes clusters through the driver's own mapping: add (the initial list included), update
 * with the old object, delete with the last known state, metadata only for Secrets and Deployments, and
 * only the objects the production watches would keep.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster } from '../../../src/operator/api/schema.ts';
import type { KubeObject } from '../../../src/operator/domain/objects.ts';
import { allSources, type SourceEvent } from '../../../src/operator/driver/sources.ts';
import { MemoryApiServer, type StoredObject } from '../../../src/tools/memory/api-server.ts';
import { memoryWatchSources } from '../../../src/tools/memory/watch-sources.ts';

const clock = { now: () => 0 };
const NS = 'ns';
const object = (kind: string, name: string, extra: Record<string, unknown> = {}): StoredObject =>
  ({ apiVersion: 'v1', kind, metadata: { name, namespace: NS }, ...extra }) as StoredObject;
const summary = <T extends KubeObject>(events: SourceEvent<T>[]) =>
  events.map((e) => `${e.type} ${e.object.metadata.name}${e.old ? ` (was ${e.old.metadata.resourceVersion})` : ''}`);

describe('memory watch sources', () => {
  it('list on start as adds, then follow updates with the old object and deletes with the last state', () => {
    const api = new MemoryApiServer();
    api.create(object('PostgresCluster', 'a', { apiVersion: 'pgfsm.io/v1alpha1', spec: {} }));
    const { clusters } = memoryWatchSources(api, clock);
    const events: SourceEvent<PostgresCluster>[] = [];
    clusters.on((e) => events.push(e));
    expect(clusters.synced).toBe(false);
    clusters.start();
    expect(clusters.synced && clusters.fresh()).toBe(true);
    api.updateStatus({ kind: 'PostgresCluster', namespace: NS, name: 'a' }, { state: 'Pending' });
    api.delete({ kind: 'PostgresCluster', namespace: NS, name: 'a' });
    expect(summary(events)).toEqual(['add a', 'update a (was 1)', 'delete a']);
    expect(events[2]?.object.status).toEqual({ state: 'Pending' });
    expect(clusters.list()).toEqual([]);
  });

  it('keep Secrets and ConfigMaps as metadata only, and of Deployments those a Pooler owns and CNPG labelled, with their ready replicas', () => {
    const api = new MemoryApiServer();
    const sources = memoryWatchSources(api, clock);
    const seen: string[] = [];
    for (const source of allSources(sources)) {
      source.start();
      source.on((e) => seen.push(`${e.type} ${e.object.kind}/${e.object.metadata.name}`));
    }
    api.create(object('Secret', 's', { data: { password: 'c2VjcmV0' } }));
    expect(sources.secrets.get(NS, 's')).toEqual({ apiVersion: 'v1', kind: 'Secret', metadata: expect.any(Object) });
    // Every ConfigMap, ours or not: a foreign one with our child's name must be seen to be refused.
    api.create(object('ConfigMap', 'theirs', { data: { k: 'v' } }));
    expect(sources.configMaps.get(NS, 'theirs')).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: expect.any(Object),
    });
    const pooler = { apiVersion: 'postgresql.cnpg.io/v1', kind: 'Pooler', name: 'p', uid: 'u' };
    const labels = { 'cnpg.io/poolerName': 'p' };
    api.create(object('Deployment', 'lone', { apiVersion: 'apps/v1' }));
    // Labelled as CNPG labels its pooler Deployments, but no Pooler's: the label alone is not enough.
    api.create({
      ...object('Deployment', 'labelled', { apiVersion: 'apps/v1' }),
      metadata: { name: 'labelled', namespace: NS, labels },
    });
    // A Pooler's, but without the label (a CNPG older than v1.22): the watch's selector never sends it.
    api.create({
      ...object('Deployment', 'unlabelled', { apiVersion: 'apps/v1' }),
      metadata: { name: 'unlabelled', namespace: NS, ownerReferences: [{ ...pooler, name: 'unlabelled' }] },
    } as StoredObject);
    api.create({
      ...object('Deployment', 'p', { apiVersion: 'apps/v1', spec: { replicas: 2 }, status: { readyReplicas: 1 } }),
      metadata: { name: 'p', namespace: NS, labels, ownerReferences: [pooler] },
    } as StoredObject);
    expect(sources.deployments.list().map((d) => d.metadata.name)).toEqual(['p']);
    expect(sources.deployments.get(NS, 'p')).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: expect.objectContaining({ name: 'p' }),
      status: { readyReplicas: 1 },
    });
    // A Deployment that loses its Pooler owner leaves the watch, as it would a server-side selector.
    const live = api.get({ kind: 'Deployment', namespace: NS, name: 'p' }) as StoredObject;
    api.put({ ...live, metadata: { ...live.metadata, ownerReferences: [] } });
    expect(seen).toEqual(['add Secret/s', 'add ConfigMap/theirs', 'add Deployment/p', 'delete Deployment/p']);
  });

  it('see a change a listener makes while another change is delivered after that change, never before', () => {
    const api = new MemoryApiServer();
    const { cnpgClusters } = memoryWatchSources(api, clock);
    // Subscribed before the source, as the CNPG simulator is: it answers a new Cluster with a write.
    api.onChange(({ type, object: o }) => {
      if (type === 'added' && o.kind === 'Cluster') api.put({ ...o, status: { phase: 'setting up' } }, true);
    });
    cnpgClusters.start();
    const events: SourceEvent[] = [];
    cnpgClusters.on((e) => events.push(e));
    api.create(object('Cluster', 'c', { apiVersion: 'postgresql.cnpg.io/v1', spec: {} }));
    expect(summary(events)).toEqual(['add c', 'update c (was 1)']);
    expect(cnpgClusters.get(NS, 'c')?.metadata.resourceVersion).toBe('2');
  });
});
