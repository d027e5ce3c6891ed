/**
 * What a PostgresDatabase's tick carries into its statechart: the database and everything it depends on,
 * read at one moment. The machine and the checks see nothing else.
 */
import type { PostgresCluster, PostgresDatabase } from '../../api/schema.ts';
import type { CnpgCluster, ConfigMap, KubeObject, SecretView } from '../objects.ts';
import type { Settings } from '../observation.ts';

/**
 * A connection Secret as the core sees it: its key names, and the values of the keys that are no secret (where
 * it points, and as whom). The adapter never hands over the password or anything built from it.
 */
export interface ConnectionSecretView extends SecretView {
  values: Partial<Record<'username' | 'host' | 'port' | 'dbname', string>>;
}

/** The CloudNativePG Database object (postgresql.cnpg.io/v1), reduced to what pgfsm writes and reads. */
export interface CnpgDatabase extends KubeObject {
  apiVersion: 'postgresql.cnpg.io/v1';
  kind: 'Database';
  spec: {
    cluster: { name: string };
    name: string;
    owner: string;
    ensure?: 'present' | 'absent';
    databaseReclaimPolicy?: 'retain' | 'delete';
    schemas?: { name: string; owner?: string; ensure?: 'present' | 'absent' }[];
    extensions?: { name: string; ensure?: 'present' | 'absent' }[];
  };
  status?: { applied?: boolean; message?: string; observedGeneration?: number };
}

export interface DatabaseObservation {
  database: PostgresDatabase;
  /** The PostgresCluster `spec.cluster` names; absent when it does not exist. */
  cluster?: PostgresCluster;
  /** That cluster's endpoints ConfigMap: what it has published. */
  endpoints?: ConfigMap;
  /** The CNPG Cluster behind it: what CNPG reports on the roles. */
  cnpg?: CnpgCluster;
  cnpgDatabase?: CnpgDatabase;
  /** The connection Secrets, by role name; absent entries do not exist. */
  secrets: Record<string, ConnectionSecretView | undefined>;
  /** Every PostgresDatabase of the namespace, this one included: who has which role (roles.ts). */
  databases: PostgresDatabase[];
  /**
   * Which of its roles PostgreSQL still has, read over SQL only while a deletion under `Delete` waits for them to
   * be dropped (its CNPG Database gone): CloudNativePG's report on roles has no generation to tell it fresh.
   */
  rolesInPostgres?: string[];
  /** Read while the database is not being deleted and CNPG has applied its Database; absent when unreadable. */
  inPostgres?: PostgresPresence;
}

/**
 * What PostgreSQL itself says of the database (postgres/presence.ts), read over SQL on a pass that would
 * otherwise find it Ready: CloudNativePG's `applied` says what it did once, not what is there now.
 */
export interface PostgresPresence {
  database: boolean;
  /** Which of its roles exist. */
  roles: string[];
  /** `user in schema` for each user whose default privileges from the owner are gone. */
  privilegesMissing: string[];
}

export interface DatabaseTick {
  type: 'tick';
  now: number;
  observation: DatabaseObservation;
  settings: Settings;
}
