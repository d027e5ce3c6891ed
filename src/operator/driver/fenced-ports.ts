/**
 * Fencing: every write a pass makes asks the leadership first, and is refused (PortError `notLeader`)
 * unless this replica still holds the lease by its own monotonic clock (LeaseElector.isLeader measures
 * the renew deadline from the last successful renewal; src/operator/kubernetes/leader.ts).
 *
 * Stopping the workers when leadership is lost is not enough on its own: a process paused by SIGSTOP (a
 * frozen VM, a long GC pause) resumes in the middle of a pass, or with overdue queue timers and buffered
 * watch events, and would run them before its renew timer notices anything. Asking before each write
 * closes that: the first write after the pause is refused, the pass ends, the workers stop, and the
 * replica that took over meanwhile is the only one writing. The conditional writes (resourceVersion on
 * status, finalizers and child writes) are the second line: they stop a stale pass from overwriting what
 * changed since it read, but not from writing where nothing changed yet.
 *
 * Reads pass through untouched: a standby reading its caches harms nobody.
 */
import type { OwnerReference } from '../api/schema.ts';
import { type DatabasePorts, sharedWithClusters } from '../core/database/ports.ts';
import { PortError } from '../core/errors.ts';
import type { AppliedChildPort, BackupPorts, ChildPort, Ports } from '../core/ports.ts';
import type { KubeObject, ObjectRef } from '../domain/objects.ts';
import type { Leadership } from './sources.ts';

/** Throws `notLeader` unless `leadership` holds the lease right now. */
function fenceOf(leadership: Pick<Leadership, 'isLeader' | 'identity'>) {
  return (what: string): void => {
    if (!leadership.isLeader())
      throw new PortError('notLeader', `${what} refused: ${leadership.identity} does not hold the leader lease`);
  };
}

type Fence = ReturnType<typeof fenceOf>;

/** The writes every child port has. */
function fencedChild<T extends KubeObject>(
  port: Pick<ChildPort<T>, 'delete' | 'setOwner' | 'releaseOwner'>,
  kind: string,
  fence: Fence,
) {
  return {
    delete: async (ref: ObjectRef) => {
      fence(`delete ${kind}`);
      return port.delete(ref);
    },
    setOwner: async (ref: ObjectRef, owner: OwnerReference) => {
      fence(`set owner of ${kind}`);
      return port.setOwner(ref, owner);
    },
    releaseOwner: async (ref: ObjectRef, ownerUid: string) => {
      fence(`release ${kind}`);
      return port.releaseOwner(ref, ownerUid);
    },
  };
}

/**
 * `ports` whose writes (apply, create, delete, owner references, finalizers, status, events) each check
 * `leadership` just before they start. Methods are bound to their ports, so adapter classes keep `this`.
 */
export function fencedPorts(ports: Ports, leadership: Pick<Leadership, 'isLeader' | 'identity'>): Ports {
  const fence = fenceOf(leadership);
  const { clusters, classes, secrets, cnpgClusters, poolers, configMaps, databases, events } = ports;
  // Every port is listed, none spread: a port or a write added later fails to compile here until fenced.
  return {
    classes: {
      get: (name) => classes.get(name),
      usersOf: (name) => classes.usersOf(name),
      addFinalizer: async (clusterClass, finalizer) => {
        fence('add class finalizer');
        return classes.addFinalizer(clusterClass, finalizer);
      },
      removeFinalizer: async (clusterClass, finalizer) => {
        fence('remove class finalizer');
        return classes.removeFinalizer(clusterClass, finalizer);
      },
    },
    clock: ports.clock,
    clusters: {
      get: (key) => clusters.get(key),
      addFinalizer: async (cluster, finalizer) => {
        fence('add finalizer');
        return clusters.addFinalizer(cluster, finalizer);
      },
      removeFinalizer: async (cluster, finalizer) => {
        fence('remove finalizer');
        return clusters.removeFinalizer(cluster, finalizer);
      },
      writeStatus: async (cluster, status) => {
        fence('write status');
        return clusters.writeStatus(cluster, status);
      },
    },
    secrets: {
      get: (ref) => secrets.get(ref),
      ...fencedChild(secrets, 'Secret', fence),
      create: async (template) => {
        fence('create Secret');
        return secrets.create(template);
      },
    },
    cnpgClusters: {
      get: (ref) => cnpgClusters.get(ref),
      ...fencedChild(cnpgClusters, 'Cluster', fence),
      apply: async (object, part, seen) => {
        fence('apply Cluster');
        return cnpgClusters.apply(object, part, seen);
      },
    },
    poolers: {
      get: (ref) => poolers.get(ref),
      view: (ref) => poolers.view(ref),
      ...fencedChild(poolers, 'Pooler', fence),
      apply: async (object, seen) => {
        fence('apply Pooler');
        return poolers.apply(object, seen);
      },
    },
    configMaps: {
      get: (ref) => configMaps.get(ref),
      ...fencedChild(configMaps, 'ConfigMap', fence),
      apply: async (object, seen) => {
        fence('apply ConfigMap');
        return configMaps.apply(object, seen);
      },
    },
    databases: {
      get: (key) => databases.get(key),
      list: (namespace) => databases.list(namespace),
      addFinalizer: async (database, finalizer) => {
        fence('add finalizer');
        return databases.addFinalizer(database, finalizer);
      },
      removeFinalizer: async (database, finalizer) => {
        fence('remove finalizer');
        return databases.removeFinalizer(database, finalizer);
      },
      writeStatus: async (database, status) => {
        fence('write status');
        return databases.writeStatus(database, status);
      },
    },
    events: {
      emit: async (regarding, event) => {
        fence(`event ${event.reason}`);
        return events.emit(regarding, event);
      },
    },
    ...(ports.backupObjects ? { backupObjects: fencedBackups(ports.backupObjects, fence) } : {}),
  };
}

function fencedApplied<T extends KubeObject>(port: AppliedChildPort<T>, kind: string, fence: Fence) {
  return {
    get: (ref: ObjectRef) => port.get(ref),
    ...fencedChild(port, kind, fence),
    apply: async (object: T, seen?: KubeObject) => {
      fence(`apply ${kind}`);
      return port.apply(object, seen);
    },
  };
}

/** Every backup port listed, none spread, for the same reason as above. */
const fencedBackups = (ports: BackupPorts, fence: Fence): BackupPorts => ({
  objectStores: fencedApplied(ports.objectStores, 'ObjectStore', fence),
  scheduledBackups: fencedApplied(ports.scheduledBackups, 'ScheduledBackup', fence),
  backups: fencedApplied(ports.backups, 'Backup', fence),
});

/** The database ports whose writes each check `leadership` first, as `fencedPorts` does for the cluster's. */
export function fencedDatabasePorts(
  ports: DatabasePorts,
  clusterPorts: Ports,
  leadership: Pick<Leadership, 'isLeader' | 'identity'>,
): DatabasePorts {
  const fence = fenceOf(leadership);
  const { cnpgDatabases, connectionSecrets, privileges } = ports;
  return {
    ...sharedWithClusters(clusterPorts),
    cnpgDatabases: {
      get: (ref) => cnpgDatabases.get(ref),
      apply: async (object) => {
        fence('apply Database');
        return cnpgDatabases.apply(object);
      },
      recordPrivileges: async (ref, digest) => {
        fence('record privileges');
        return cnpgDatabases.recordPrivileges(ref, digest);
      },
      delete: async (ref) => {
        fence('delete Database');
        return cnpgDatabases.delete(ref);
      },
    },
    connectionSecrets: {
      get: (ref) => connectionSecrets.get(ref),
      apply: async (template) => {
        fence('apply Secret');
        return connectionSecrets.apply(template);
      },
      delete: async (ref) => {
        fence('delete Secret');
        return connectionSecrets.delete(ref);
      },
      releaseOwner: async (ref, uid) => {
        fence('release Secret');
        return connectionSecrets.releaseOwner(ref, uid);
      },
    },
    privileges: {
      grant: async (cluster, plan) => {
        fence('grant privileges');
        return privileges.grant(cluster, plan);
      },
      existingRoles: (cluster, roles) => privileges.existingRoles(cluster, roles),
      inspect: (cluster, plan) => privileges.inspect(cluster, plan),
    },
  };
}
