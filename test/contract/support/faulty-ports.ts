/**
 * Faults the in-memory API cannot inject by itself, as wrappers around the ports a simulated operator
 * process uses (SimulationOptions.ports). Test-only.
 */
import { type ErrorClass, PortError } from '../../../src/operator/core/errors.ts';
import type { Ports } from '../../../src/operator/core/ports.ts';

/**
 * `port` with some methods replaced and every other one its own: the adapters are classes, whose methods
 * a spread would leave behind, so the others are reached through the prototype.
 */
export const override = <P extends object>(port: P, methods: Partial<P>): P =>
  Object.assign(Object.create(port) as P, methods);

/** Counts each cluster's status writes: the function answers the number of the write being made, from 1. */
function statusWriteCounter() {
  const writes = new Map<string, number>();
  return (cluster: { metadata: { namespace?: string; name: string } }) => {
    const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
    const count = (writes.get(key) ?? 0) + 1;
    writes.set(key, count);
    return { key, count };
  };
}

/**
 * Every second status write of each cluster fails with a conflict, and writes nothing: the second, fourth,
 * … or, with `odd`, the first, third, ….
 */
export const conflictOnEverySecondStatusWrite =
  (odd = false) =>
  (ports: Ports): Ports => {
    const next = statusWriteCounter();
    return {
      ...ports,
      clusters: override(ports.clusters, {
        async writeStatus(cluster, status) {
          const { key, count } = next(cluster);
          if (count % 2 === (odd ? 1 : 0))
            throw new PortError('conflict', `injected conflict on status write ${count} of ${key}`);
          return ports.clusters.writeStatus(cluster, status);
        },
      }),
    };
  };

/**
 * Every second status write of each cluster times out on its way and lands late: it is carried out only
 * when the cluster's next status write arrives, just before that one. The pass after the timeout reads the
 * status as it was (the late write has not landed), and its own write, conditional on that version,
 * conflicts with the late one: what the API server does to a slow write the client gave up on.
 */
export function landingLate(ports: Ports): Ports {
  const next = statusWriteCounter();
  const late = new Map<string, () => Promise<unknown>>();
  return {
    ...ports,
    clusters: override(ports.clusters, {
      async writeStatus(cluster, status) {
        const { key, count } = next(cluster);
        const landing = late.get(key);
        late.delete(key);
        await landing?.();
        if (count % 2 === 1) return ports.clusters.writeStatus(cluster, status);
        late.set(key, () => ports.clusters.writeStatus(cluster, status));
        throw new PortError('timeout', `injected: status write ${count} of ${key} timed out, to land late`);
      },
    }),
  };
}

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
    secrets: override(secrets, {
      create: (template) =>
        once(`create Secret ${template.ref.namespace}/${template.ref.name}`, () => secrets.create(template)),
    }),
    cnpgClusters: override(cnpgClusters, {
      apply: (object, part) =>
        once(`apply ${part} Cluster ${object.metadata.namespace}/${object.metadata.name}`, () =>
          cnpgClusters.apply(object, part),
        ),
    }),
    poolers: override(poolers, {
      apply: (object) =>
        once(`apply Pooler ${object.metadata.namespace}/${object.metadata.name}`, () => poolers.apply(object)),
    }),
    configMaps: override(configMaps, {
      apply: (object) =>
        once(`apply ConfigMap ${object.metadata.namespace}/${object.metadata.name}`, () => configMaps.apply(object)),
    }),
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
        secrets: override(secrets, {
          create: (template) =>
            target === 'createSecret' ? fail(() => secrets.create(template)) : secrets.create(template),
        }),
        cnpgClusters: override(cnpgClusters, {
          apply: (object, part) =>
            target === 'applyCluster' ? fail(() => cnpgClusters.apply(object, part)) : cnpgClusters.apply(object, part),
        }),
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
