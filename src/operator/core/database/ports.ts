/**
 * What a PostgresDatabase's pass needs from the world, beside the cluster ports it shares (the PostgresCluster,
 * its CNPG Cluster and endpoints ConfigMap are read through those). Adapters: src/tools/memory for tests and
 * the simulation, src/operator/kubernetes and src/operator/postgres for the operator.
 */
import type { PostgresDatabase, PostgresDatabaseStatus } from '../../api/schema.ts';
import type { ConnectionSecretTemplate } from '../../domain/database/effects.ts';
import type { CnpgDatabase, ConnectionSecretView, PostgresPresence } from '../../domain/database/observation.ts';
import type { ObjectRef } from '../../domain/objects.ts';
import type { PrivilegePlan } from '../../postgres/privileges.ts';
import type { ClusterKey, Ports } from '../ports.ts';

/** The PostgresDatabase itself; writes conditional on the resourceVersion the pass read, as for the cluster. */
export interface PostgresDatabasePort {
  get(key: ClusterKey): Promise<PostgresDatabase | undefined>;
  /** Every PostgresDatabase of a namespace: who has which role (domain/database/roles.ts). */
  list(namespace: string): Promise<PostgresDatabase[]>;
  addFinalizer(database: PostgresDatabase, finalizer: string): Promise<string | undefined>;
  removeFinalizer(database: PostgresDatabase, finalizer: string): Promise<string | undefined>;
  writeStatus(database: PostgresDatabase, status: PostgresDatabaseStatus): Promise<PostgresDatabase | undefined>;
}

export interface CnpgDatabasePort {
  get(ref: ObjectRef): Promise<CnpgDatabase | undefined>;
  /** Server-side apply of the spec, labels and owner (field manager `pgfsm`). */
  apply(object: CnpgDatabase): Promise<unknown>;
  /** Records the digest of the privileges granted, under a field manager of its own (PRIVILEGES_FIELD_MANAGER). */
  recordPrivileges(ref: ObjectRef, digest: string): Promise<unknown>;
  delete(ref: ObjectRef): Promise<unknown>;
}

/** Connection Secrets: the adapter owns every password and every key built from one. */
export interface ConnectionSecretPort {
  get(ref: ObjectRef): Promise<ConnectionSecretView | undefined>;
  /** Creates the Secret with a generated password, or brings its keys to the template keeping its password. */
  apply(template: ConnectionSecretTemplate): Promise<unknown>;
  delete(ref: ObjectRef): Promise<unknown>;
  /** Removes our owner reference and hands the Secret over (pgfsm.io/adopt), as a Retain deletion does. */
  releaseOwner(ref: ObjectRef, ownerUid: string): Promise<unknown>;
}

/** Runs the grants in the database as the cluster's superuser, through its `-rw` Service. */
export interface PrivilegesPort {
  grant(cluster: ClusterKey, plan: PrivilegePlan): Promise<void>;
  /** Which of `roles` PostgreSQL has now: what a deletion under `Delete` waits to be empty. */
  existingRoles(cluster: ClusterKey, roles: string[]): Promise<string[]>;
  /** Whether the plan's database and roles exist and the users' default privileges are in place. */
  inspect(cluster: ClusterKey, plan: PrivilegePlan): Promise<PostgresPresence>;
}

/** The ports a database's pass shares with the clusters': the PostgresCluster, its CNPG Cluster and endpoints, … */
export type SharedPorts = Pick<Ports, 'clusters' | 'cnpgClusters' | 'configMaps' | 'databases' | 'events' | 'clock'>;

export const sharedWithClusters = ({
  clusters,
  cnpgClusters,
  configMaps,
  databases,
  events,
  clock,
}: Ports): SharedPorts => ({
  clusters,
  cnpgClusters,
  configMaps,
  databases,
  events,
  clock,
});

export interface DatabasePorts extends SharedPorts {
  cnpgDatabases: CnpgDatabasePort;
  connectionSecrets: ConnectionSecretPort;
  privileges: PrivilegesPort;
}
