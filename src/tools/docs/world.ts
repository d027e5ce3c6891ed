/**
 * A frozen world for the reference generator: ports that serve one observation and either accept every
 * write without changing anything, or reject every write. Running the real reconcile core against it
 * shows which events and conditions the code produces, without reading them off the source text. One
 * world per resource: a PostgresCluster's (`frozenPorts`) and a PostgresDatabase's (`frozenDatabasePorts`).
 */
import type { Condition, PostgresCluster, PostgresClusterStatus, PostgresDatabase } from '../../operator/api/schema.ts';
import type { DatabasePorts } from '../../operator/core/database/ports.ts';
import { PortError } from '../../operator/core/errors.ts';
import type { ChildPort, ClusterKey, Ports } from '../../operator/core/ports.ts';
import type { DatabaseObservation } from '../../operator/domain/database/observation.ts';
import type { KubeEvent } from '../../operator/domain/effects.ts';
import type { KubeObject, ObjectRef } from '../../operator/domain/objects.ts';
import type { Observation } from '../../operator/domain/observation.ts';

export type WriteMode = 'accept' | 'reject';

/** What one pass against the frozen world wrote as status and emitted as events. */
export interface Recorder {
  statuses: Array<{ conditions?: Condition[] }>;
  events: KubeEvent[];
}

/** The error every rejected write throws; its message appears in the generated examples. */
export const REJECTED = '<API error>';

const sameRef = (object: KubeObject | undefined, ref: ObjectRef) =>
  object !== undefined && object.kind === ref.kind && object.metadata.name === ref.name;

/** Every write of a frozen world: accepted and forgotten, or refused. */
const writeOf =
  (mode: WriteMode) =>
  async (..._args: unknown[]): Promise<undefined> => {
    // Not `rejected`: a refusal at admission is a failure of the spec, which the sample worlds that
    // carry a stored refusal show; these runs show what any other failed write reports.
    if (mode === 'reject') throw new PortError('other', REJECTED);
    return undefined;
  };

const childOf =
  (write: ReturnType<typeof writeOf>) =>
  <T extends KubeObject>(find: (ref: ObjectRef) => T | undefined): ChildPort<T> => ({
    get: async (ref) => find(ref),
    delete: write,
    setOwner: write,
    releaseOwner: write,
  });

const events = (recorder: Recorder) => ({
  emit: async (_regarding: unknown, event: KubeEvent) => {
    recorder.events.push(event);
  },
});

/**
 * Ports for one PostgresCluster (`cluster`, carrying the stored status the pass starts from) in the
 * world `observation` describes.
 */
export function frozenPorts(
  observation: Observation,
  cluster: PostgresCluster,
  mode: WriteMode,
  now: number,
): { ports: Ports; recorder: Recorder } {
  const recorder: Recorder = { statuses: [], events: [] };
  const write = writeOf(mode);
  const child = childOf(write);
  const { credentials, endpointCA } = observation.backup?.secrets ?? {};
  const findSecret = (ref: ObjectRef) =>
    [observation.secret, credentials, endpointCA].find((s) => sameRef(s, ref)) ?? observation.roleSecrets[ref.name];
  const backup = observation.backup;
  const findBackupObject = (ref: ObjectRef) =>
    [backup?.store, backup?.sourceStore, backup?.scheduled, backup?.onDemand].find((o) => sameRef(o, ref));
  const applied = { ...child(findBackupObject), apply: write };
  const findPooler = (ref: ObjectRef) =>
    [observation.poolers.rw, observation.poolers.ro].find((view) => sameRef(view?.pooler, ref));
  const ports: Ports = {
    clusters: {
      // The cluster itself, and the PostgresCluster a restore starts from.
      get: async (key: ClusterKey) =>
        key.namespace === cluster.metadata.namespace && key.name === cluster.metadata.name
          ? cluster
          : observation.restoreSource?.metadata.name === key.name
            ? observation.restoreSource
            : undefined,
      addFinalizer: write,
      removeFinalizer: write,
      // The status is always accepted: a failed write must still be reported on the conditions.
      writeStatus: async (_cluster, status: PostgresClusterStatus) => {
        recorder.statuses.push(status);
        return undefined;
      },
    },
    classes: {
      get: async (name) => (observation.clusterClass?.metadata.name === name ? observation.clusterClass : undefined),
      addFinalizer: write,
      removeFinalizer: write,
      usersOf: async () => [cluster],
    },
    secrets: { ...child(findSecret), create: write },
    cnpgClusters: { ...child((ref) => (sameRef(observation.cnpg, ref) ? observation.cnpg : undefined)), apply: write },
    poolers: {
      ...child((ref) => findPooler(ref)?.pooler),
      view: async (ref) => findPooler(ref),
      apply: write,
    },
    configMaps: {
      ...child((ref) => (sameRef(observation.configMap, ref) ? observation.configMap : undefined)),
      apply: write,
    },
    // The documented worlds have no PostgresDatabase: the cluster pushes its own roles only.
    databases: {
      get: async () => undefined,
      list: async () => observation.databases ?? [],
      addFinalizer: write,
      removeFinalizer: write,
      writeStatus: write,
    },
    backupObjects: { objectStores: applied, scheduledBackups: applied, backups: applied } as NonNullable<
      Ports['backupObjects']
    >,
    events: events(recorder),
    clock: { now: () => now },
  };
  return { ports, recorder };
}

/**
 * Ports for one PostgresDatabase (`database`, carrying the stored status the pass starts from) in the world
 * `observation` describes. The grants over SQL are a write like any other: accepted, or refused.
 */
export function frozenDatabasePorts(
  observation: DatabaseObservation,
  database: PostgresDatabase,
  mode: WriteMode,
  now: number,
): { ports: DatabasePorts; recorder: Recorder } {
  const recorder: Recorder = { statuses: [], events: [] };
  const write = writeOf(mode);
  const child = childOf(write);
  const self = (d: PostgresDatabase) => d.metadata.name === database.metadata.name;
  const findSecret = (ref: ObjectRef) =>
    Object.values(observation.secrets).find((view) => view?.metadata.name === ref.name);
  const ports: DatabasePorts = {
    clusters: {
      get: async (key: ClusterKey) =>
        key.name === observation.cluster?.metadata.name ? observation.cluster : undefined,
      addFinalizer: write,
      removeFinalizer: write,
      writeStatus: write,
    },
    cnpgClusters: { ...child((ref) => (sameRef(observation.cnpg, ref) ? observation.cnpg : undefined)), apply: write },
    configMaps: {
      ...child((ref) => (sameRef(observation.endpoints, ref) ? observation.endpoints : undefined)),
      apply: write,
    },
    databases: {
      get: async (key: ClusterKey) => (key.name === database.metadata.name ? database : undefined),
      // Itself as stored, with the status the pass starts from: who has which role reads it.
      list: async () => observation.databases.map((d) => (self(d) ? database : d)),
      addFinalizer: write,
      removeFinalizer: write,
      // The status is always accepted: a failed write must still be reported on the conditions.
      writeStatus: async (_database, status) => {
        recorder.statuses.push(status);
        return undefined;
      },
    },
    cnpgDatabases: {
      get: async (ref) => (sameRef(observation.cnpgDatabase, ref) ? observation.cnpgDatabase : undefined),
      apply: write,
      recordPrivileges: write,
      delete: write,
    },
    connectionSecrets: { get: async (ref) => findSecret(ref), apply: write, delete: write, releaseOwner: write },
    privileges: {
      grant: write,
      existingRoles: async () => [],
      // What the sample says PostgreSQL holds, where the core would ask.
      inspect: async () => {
        if (!observation.inPostgres) throw new Error('the sample says nothing of PostgreSQL');
        return observation.inPostgres;
      },
    },
    events: events(recorder),
    clock: { now: () => now },
  };
  return { ports, recorder };
}
