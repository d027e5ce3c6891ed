/**
 * The PostgresDatabase ports over the in-memory API, for the path and contract tests and the simulation. The
 * privileges port is a stand-in that records the plans it was given: the memory world has no PostgreSQL (the
 * e2e suite grants on a real one, through src/operator/postgres/privileges.ts).
 */

import { type DatabasePorts, type PrivilegesPort, sharedWithClusters } from '../../operator/core/database/ports.ts';
import { PortError } from '../../operator/core/errors.ts';
import type { ClusterKey, Ports } from '../../operator/core/ports.ts';
import type { ConnectionSecretTemplate } from '../../operator/domain/database/effects.ts';
import type {
  CnpgDatabase,
  ConnectionSecretView,
  PostgresPresence,
} from '../../operator/domain/database/observation.ts';
import { PRIVILEGES_ANNOTATION, PRIVILEGES_FIELD_MANAGER } from '../../operator/domain/database/vocabulary.ts';
import type { CnpgCluster, ObjectRef } from '../../operator/domain/objects.ts';
import { FIELD_MANAGER } from '../../operator/domain/vocabulary.ts';
import { connectionSecretData } from '../../operator/kubernetes/database-children.ts';
import { generatePassword } from '../../operator/kubernetes/password.ts';
import type { PrivilegePlan } from '../../operator/postgres/privileges.ts';
import type { MemoryApiServer, StoredObject } from './api-server.ts';
import { MemoryChildPort, secretViewOf } from './ports.ts';

const decode = (value: unknown) => (typeof value === 'string' ? Buffer.from(value, 'base64').toString() : undefined);
const encode = (value: string) => Buffer.from(value).toString('base64');

/** The view the core gets: key names, and the values that are no secret. */
export function connectionSecretViewOf(object: StoredObject): ConnectionSecretView {
  const data = (object.data as Record<string, string> | undefined) ?? {};
  const values: ConnectionSecretView['values'] = {};
  for (const key of ['username', 'host', 'port', 'dbname'] as const) {
    const value = decode(data[key]);
    if (value !== undefined) values[key] = value;
  }
  return { ...secretViewOf(object), values };
}

/**
 * The roles a simulated PostgreSQL has, as the CNPG Cluster tells them: one its managed roles list, unless it is
 * `absent` there and CNPG reports it reconciled (dropped). The memory world and the samples agree on it.
 */
export function simulatedRoles(cnpg: CnpgCluster | undefined, roles: readonly string[]): string[] {
  const entries = new Map((cnpg?.spec.managed?.roles ?? []).map((r) => [r.name, r]));
  const reconciled = new Set(cnpg?.status?.managedRolesStatus?.byStatus?.reconciled ?? []);
  return roles.filter((name) => {
    const entry = entries.get(name);
    return entry !== undefined && !(entry.ensure === 'absent' && reconciled.has(name));
  });
}

/**
 * What PostgreSQL holds *beyond* CNPG's reports: names lost there (dropped by hand, by a restore), as
 * `database/<name>`, `role/<name>` or `privileges/<user>`, comma-separated, on the CNPG Cluster of the memory
 * world (where the simulated PostgreSQL's roles are read from too), so that the samples and the memory ports
 * see the same loss.
 */
export const SIMULATED_LOSS_ANNOTATION = 'simulation.pgfsm.io/lost';

/**
 * What a simulated PostgreSQL holds of a plan: the database once CNPG has applied a Database of that name, the
 * roles as simulatedRoles says, every user's default privileges; less what the loss annotation names.
 */
export function simulatedPresence(
  cnpg: CnpgCluster | undefined,
  cnpgDatabases: readonly CnpgDatabase[],
  plan: PrivilegePlan,
): PostgresPresence {
  const lost = new Set((cnpg?.metadata.annotations?.[SIMULATED_LOSS_ANNOTATION] ?? '').split(',').filter(Boolean));
  const applied = cnpgDatabases.some(
    (d) => d.spec.name === plan.database && d.spec.ensure !== 'absent' && d.status?.applied === true,
  );
  const roles = simulatedRoles(cnpg, [plan.owner, ...plan.users.map((u) => u.name)]).filter(
    (r) => !lost.has(`role/${r}`),
  );
  const database = applied && !lost.has(`database/${plan.database}`);
  const privilegesMissing = database
    ? plan.users.filter((u) => lost.has(`privileges/${u.name}`)).map((u) => `${u.name} in public`)
    : [];
  return { database, roles, privilegesMissing };
}

/**
 * Records every grant; `failWith` makes the next grants fail as a connection refused would. Which roles exist is
 * asked of `roles` (the world a test keeps, or a simulator's), none when not given.
 */
export class RecordingPrivileges implements PrivilegesPort {
  readonly grants: { cluster: ClusterKey; plan: PrivilegePlan }[] = [];
  failWith: Error | undefined;
  constructor(
    private readonly roles: (cluster: ClusterKey, names: string[]) => string[] = () => [],
    private readonly presence: (cluster: ClusterKey, plan: PrivilegePlan) => PostgresPresence = (_, plan) => ({
      database: true,
      roles: [plan.owner, ...plan.users.map((u: { name: string }) => u.name)],
      privilegesMissing: [],
    }),
  ) {}
  async grant(cluster: ClusterKey, plan: PrivilegePlan): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.grants.push({ cluster, plan: structuredClone(plan) });
  }
  async existingRoles(cluster: ClusterKey, names: string[]): Promise<string[]> {
    return this.roles(cluster, names);
  }
  async inspect(cluster: ClusterKey, plan: PrivilegePlan): Promise<PostgresPresence> {
    if (this.failWith) throw this.failWith;
    return this.presence(cluster, plan);
  }
}

/** What the in-memory API's CNPG objects say a simulated PostgreSQL holds of a plan. */
export const memoryPresence = (api: MemoryApiServer) => (cluster: ClusterKey, plan: PrivilegePlan) =>
  simulatedPresence(
    api.get<CnpgCluster>({ kind: 'Cluster', namespace: cluster.namespace, name: cluster.name }),
    api.list('Database').filter((d) => d.metadata.namespace === cluster.namespace) as unknown as CnpgDatabase[],
    plan,
  );

/** The roles the in-memory API's CNPG Cluster says a simulated PostgreSQL has. */
export const memoryRoles = (api: MemoryApiServer) => (cluster: ClusterKey, names: string[]) =>
  simulatedRoles(api.get<CnpgCluster>({ kind: 'Cluster', namespace: cluster.namespace, name: cluster.name }), names);

class MemoryConnectionSecrets extends MemoryChildPort<ConnectionSecretView> {
  async apply(template: ConnectionSecretTemplate): Promise<void> {
    const existing = this.api.get<StoredObject>(template.ref);
    const password = decode((existing?.data as Record<string, string> | undefined)?.password) ?? generatePassword();
    this.api.apply(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: template.ref.name,
          namespace: template.ref.namespace,
          labels: template.labels,
          ownerReferences: [template.owner],
        },
        type: 'kubernetes.io/basic-auth',
        // The keys the Kubernetes adapter writes, built by the same function.
        data: Object.fromEntries(
          Object.entries(connectionSecretData(template, password)).map(([key, value]) => [key, encode(value)]),
        ),
      },
      FIELD_MANAGER,
    );
  }
}

export function memoryDatabasePorts(
  api: MemoryApiServer,
  clusterPorts: Ports,
  privileges: PrivilegesPort = new RecordingPrivileges(memoryRoles(api), memoryPresence(api)),
): DatabasePorts {
  const cnpgDatabases = new MemoryChildPort<CnpgDatabase>(api);
  return {
    ...sharedWithClusters(clusterPorts),
    cnpgDatabases: {
      get: (ref: ObjectRef) => cnpgDatabases.get(ref),
      delete: (ref: ObjectRef) => cnpgDatabases.delete(ref),
      async apply(object: CnpgDatabase) {
        api.apply(structuredClone(object) as unknown as StoredObject, FIELD_MANAGER);
      },
      async recordPrivileges(ref: ObjectRef, digest: string) {
        if (!api.get(ref)) throw new PortError('notFound', `Database ${ref.name} not found`);
        const annotation = { [PRIVILEGES_ANNOTATION]: digest };
        const { apiVersion, kind, namespace, name } = ref;
        api.apply(
          { apiVersion, kind, metadata: { name, namespace, annotations: annotation } },
          PRIVILEGES_FIELD_MANAGER,
        );
      },
    },
    connectionSecrets: new MemoryConnectionSecrets(api, connectionSecretViewOf),
    privileges,
  };
}
