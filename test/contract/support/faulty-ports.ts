/**
 * Faults the in-memory API cannot inject by itself, as wrappers around the ports a simulated operator
 * process uses (SimulationOptions.ports). Test-only.
 */
import type { DatabasePorts } from '../../../src/operator/core/database/ports.ts';
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

/** What `randomFaults` did to the writes, by kind. */
export interface InjectedFaults {
  /** Refused before the write: nothing written (a 409, 429 or 503 the API server or a proxy answered). */
  instead: number;
  /** Written, then the answer lost (a timeout, a connection reset after the request went out). */
  answerLost: number;
  /** A status write that times out and lands only later, before a later write (a slow API server). */
  landsLate: number;
  /** Refused because the replica did not hold the lease. */
  notLeader: number;
}

/**
 * Every write of `ports` fails at random with probability `rate`, seeded: refused instead of made, or made
 * with its answer lost; a status write may also land late, just before some later write. Events are only
 * ever refused: the in-memory sink has no names, so an Event whose answer was lost could not be recognised
 * when sent again, as the Kubernetes sink does (kubernetes/events.ts). While `lease.leading` is false every
 * write is refused with `notLeader`, as the fenced ports refuse it.
 */
export function randomFaults(random: () => number, rate: number, lease: { leading: boolean }) {
  const injected: InjectedFaults = { instead: 0, answerLost: 0, landsLate: 0, notLeader: 0 };
  const late: Array<() => Promise<unknown>> = [];
  const refusals = ['conflict', 'unavailable', 'tooManyRequests'] as const;
  const faulty =
    <A extends unknown[], R>(what: string, write: (...args: A) => Promise<R>, may: { land: boolean; late?: boolean }) =>
    async (...args: A): Promise<R> => {
      // What landed late lands before this write, as often as not.
      while (late.length > 0 && random() < 0.5)
        await late
          .shift()?.()
          .catch(() => undefined);
      if (!lease.leading) {
        injected.notLeader++;
        throw new PortError('notLeader', `injected: ${what} refused, not leading`);
      }
      if (random() >= rate) return write(...args);
      const kind = random();
      if (kind < 0.5 || !may.land) {
        injected.instead++;
        const errorClass = refusals[Math.floor(random() * refusals.length)] ?? 'unavailable';
        throw new PortError(errorClass, `injected: ${what} refused (${errorClass})`);
      }
      if (kind < 0.8 || !may.late) {
        injected.answerLost++;
        await write(...args);
        throw new PortError('timeout', `injected: ${what} made, its answer lost`);
      }
      injected.landsLate++;
      late.push(() => write(...args));
      throw new PortError('timeout', `injected: ${what} timed out, to land later`);
    };
  const land = { land: true };
  const ports = (base: Ports): Ports => ({
    ...base,
    clusters: override(base.clusters, {
      addFinalizer: faulty('add finalizer', (c, f) => base.clusters.addFinalizer(c, f), land),
      writeStatus: faulty('status write', (c, s) => base.clusters.writeStatus(c, s), { land: true, late: true }),
    }),
    secrets: override(base.secrets, { create: faulty('create Secret', (t) => base.secrets.create(t), land) }),
    cnpgClusters: override(base.cnpgClusters, {
      apply: faulty('apply Cluster', (o, p, s) => base.cnpgClusters.apply(o, p, s), land),
    }),
    poolers: override(base.poolers, { apply: faulty('apply Pooler', (o, s) => base.poolers.apply(o, s), land) }),
    configMaps: override(base.configMaps, {
      apply: faulty('apply ConfigMap', (o, s) => base.configMaps.apply(o, s), land),
    }),
    // A PostgresDatabase's own status and finalizer, written through the ports it shares with the clusters.
    databases: override(base.databases, {
      addFinalizer: faulty('add database finalizer', (d, f) => base.databases.addFinalizer(d, f), land),
      writeStatus: faulty('database status write', (d, s) => base.databases.writeStatus(d, s), {
        land: true,
        late: true,
      }),
    }),
    events: { emit: faulty('Event', (r, e) => base.events.emit(r, e), { land: false }) },
  });
  /** The PostgresDatabase's own writes (SimulationOptions.databasePorts), failing as the clusters' do. */
  const databasePorts = (base: DatabasePorts): DatabasePorts => ({
    ...base,
    cnpgDatabases: override(base.cnpgDatabases, {
      apply: faulty('apply Database', (o) => base.cnpgDatabases.apply(o), land),
    }),
    connectionSecrets: override(base.connectionSecrets, {
      apply: faulty('apply connection Secret', (t) => base.connectionSecrets.apply(t), land),
    }),
    privileges: override(base.privileges, {
      grant: faulty('grant privileges', (c, p) => base.privileges.grant(c, p), land),
    }),
  });
  return { ports, databasePorts, injected };
}
