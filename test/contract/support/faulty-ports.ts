/**
 * Faults the in-memory API cannot inject by itself, as wrappers around the ports a simulated operator
 * process uses (SimulationOptions.ports). Test-only.
 */
import { type ErrorClass, PortError } from '../../../src/operator/core/errors.ts';
import type { Ports } from '../../../src/operator/core/ports.ts';

/**
 * Every second status write of each cluster fails with a conflict, and writes nothing: the second, fourth,
 * … or, with `odd`, the first, third, ….
 */
export const conflictOnEverySecondStatusWrite =
  (odd = false) =>
  (ports: Ports): Ports => {
    const writes = new Map<string, number>();
    return {
      ...ports,
      clusters: {
        get: (key) => ports.clusters.get(key),
        addFinalizer: (cluster, finalizer) => ports.clusters.addFinalizer(cluster, finalizer),
        removeFinalizer: (cluster, finalizer) => ports.clusters.removeFinalizer(cluster, finalizer),
        async writeStatus(cluster, status) {
          const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
          const count = (writes.get(key) ?? 0) + 1;
          writes.set(key, count);
          if (count % 2 === (odd ? 1 : 0))
            throw new PortError('conflict', `injected conflict on status write ${count} of ${key}`);
          return ports.clusters.writeStatus(cluster, status);
        },
      },
    };
  };

/**
 * The first create of the superuser Secret and the first apply of each CNPG Cluster, Pooler and endpoints
 * ConfigMap land, but their answers are lost: each write is carried out, then a timeout is thrown.
 */
export function losingTheFirstAnswers(ports: Ports): Ports {
  const lost = new Set<string>();
  /** Runs the write; the first time for `id`, throws a timeout after it. */
  const once = async <T>(id: string, write: () => Promise<T>): Promise<T> => {
    const answer = await write();
    if (lost.has(id)) return answer;
    lost.add(id);
    throw new PortError('timeout', `injected: the answer to ${id} was lost`);
  };
  const { secrets, cnpgClusters, poolers, configMaps } = ports;
  return {
    ...ports,
    secrets: {
      get: (ref) => secrets.get(ref),
      delete: (ref) => secrets.delete(ref),
      setOwner: (ref, owner) => secrets.setOwner(ref, owner),
      releaseOwner: (ref, uid) => secrets.releaseOwner(ref, uid),
      create: (template) =>
        once(`create Secret ${template.ref.namespace}/${template.ref.name}`, () => secrets.create(template)),
    },
    cnpgClusters: {
      get: (ref) => cnpgClusters.get(ref),
      delete: (ref) => cnpgClusters.delete(ref),
      setOwner: (ref, owner) => cnpgClusters.setOwner(ref, owner),
      releaseOwner: (ref, uid) => cnpgClusters.releaseOwner(ref, uid),
      apply: (object, part) =>
        once(`apply ${part} Cluster ${object.metadata.namespace}/${object.metadata.name}`, () =>
          cnpgClusters.apply(object, part),
        ),
    },
    poolers: {
      get: (ref) => poolers.get(ref),
      view: (ref) => poolers.view(ref),
      delete: (ref) => poolers.delete(ref),
      setOwner: (ref, owner) => poolers.setOwner(ref, owner),
      releaseOwner: (ref, uid) => poolers.releaseOwner(ref, uid),
      apply: (object) =>
        once(`apply Pooler ${object.metadata.namespace}/${object.metadata.name}`, () => poolers.apply(object)),
    },
    configMaps: {
      get: (ref) => configMaps.get(ref),
      delete: (ref) => configMaps.delete(ref),
      setOwner: (ref, owner) => configMaps.setOwner(ref, owner),
      releaseOwner: (ref, uid) => configMaps.releaseOwner(ref, uid),
      apply: (object) =>
        once(`apply ConfigMap ${object.metadata.namespace}/${object.metadata.name}`, () => configMaps.apply(object)),
    },
  };
}

/**
 * While `armed`, the next Secret create or CNPG Cluster apply fails with `errorClass`, after being carried
 * out when `lands`, and without being carried out otherwise; it disarms itself, and later ones go through.
 */
export function failingWrite(target: 'createSecret' | 'applyCluster', lands: boolean, errorClass: ErrorClass) {
  const fault = {
    armed: true,
    ports: (ports: Ports): Ports => {
      const { secrets, cnpgClusters } = ports;
      return {
        ...ports,
        secrets: {
          get: (ref) => secrets.get(ref),
          delete: (ref) => secrets.delete(ref),
          setOwner: (ref, owner) => secrets.setOwner(ref, owner),
          releaseOwner: (ref, uid) => secrets.releaseOwner(ref, uid),
          create: (template) =>
            target === 'createSecret' ? fail(() => secrets.create(template)) : secrets.create(template),
        },
        cnpgClusters: {
          get: (ref) => cnpgClusters.get(ref),
          delete: (ref) => cnpgClusters.delete(ref),
          setOwner: (ref, owner) => cnpgClusters.setOwner(ref, owner),
          releaseOwner: (ref, uid) => cnpgClusters.releaseOwner(ref, uid),
          apply: (object, part) =>
            target === 'applyCluster' ? fail(() => cnpgClusters.apply(object, part)) : cnpgClusters.apply(object, part),
        },
      };
    },
  };
  const fail = async <T>(write: () => Promise<T>): Promise<T> => {
    if (!fault.armed) return write();
    fault.armed = false;
    if (lands) await write();
    throw new PortError(errorClass, `injected ${errorClass} (${lands ? 'after' : 'instead of'} the write)`);
  };
  return fault;
}
