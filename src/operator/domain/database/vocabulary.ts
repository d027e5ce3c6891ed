/**
 * The words a PostgresDatabase speaks: its components and their conditions, its reasons and events, and the
 * names and labels of what it creates. The cluster's vocabulary (../vocabulary.ts) is another resource's; the
 * labels and the adoption rule are shared with it.
 */
import { API_VERSION, type OwnerReference, type PostgresDatabase } from '../../api/schema.ts';
import { MANAGED_BY_LABEL } from '../vocabulary.ts';

/** The pipeline's steps, in order: each needs the ones before it. */
export const DATABASE_COMPONENTS = ['cluster', 'claims', 'secrets', 'roles', 'database', 'privileges'] as const;
export type DatabaseComponent = (typeof DATABASE_COMPONENTS)[number];

export const DATABASE_CONDITION_OF: Record<DatabaseComponent, string> = {
  cluster: 'ClusterAvailable',
  claims: 'ClaimsHeld',
  secrets: 'SecretsReady',
  roles: 'RolesReady',
  database: 'DatabaseReady',
  privileges: 'PrivilegesApplied',
};

export const DatabaseReason = {
  // the cluster
  ClusterNotFound: 'ClusterNotFound',
  ClusterNotPublished: 'ClusterNotPublished',
  ClusterDeleting: 'ClusterDeleting',
  ClusterAvailable: 'ClusterAvailable',
  InvalidSpec: 'InvalidSpec',
  // the names it needs: database, roles, Secrets (claims.ts)
  ClaimsHeld: 'ClaimsHeld',
  DatabaseClaimed: 'DatabaseClaimed',
  RoleClaimed: 'RoleClaimed',
  SecretClaimed: 'SecretClaimed',
  // the connection Secrets
  SecretsReady: 'SecretsReady',
  SecretsPending: 'SecretsPending',
  SecretsFollowingCluster: 'SecretsFollowingCluster',
  SecretOwnedByOther: 'SecretOwnedByOther',
  // the roles, pushed by the PostgresCluster
  RolesReconciled: 'RolesReconciled',
  RolesPending: 'RolesPending',
  RolesMissing: 'RolesMissing',
  RolesReconciliationFailed: 'RolesReconciliationFailed',
  // the CNPG Database
  DatabaseApplied: 'DatabaseApplied',
  DatabasePending: 'DatabasePending',
  DatabaseNotApplied: 'DatabaseNotApplied',
  DatabaseOwnedByOther: 'DatabaseOwnedByOther',
  DatabaseMissing: 'DatabaseMissing',
  // the privileges, over SQL
  PrivilegesApplied: 'PrivilegesApplied',
  PrivilegesPending: 'PrivilegesPending',
  PrivilegesFailed: 'PrivilegesFailed',
  PrivilegesMissing: 'PrivilegesMissing',
  // a write that failed, on its component's condition
  WriteFailed: 'WriteFailed',
  CleanupFailed: 'CleanupFailed',
  // the status projection
  NotAssessed: 'NotAssessed',
  AllComponentsReady: 'AllComponentsReady',
} as const;
export type DatabaseReason = (typeof DatabaseReason)[keyof typeof DatabaseReason];

/**
 * Every event a PostgresDatabase emits of its own, with its type: actions taken, transitions that matter,
 * failures (a failure's Warning carries its condition's reason). None is named after a condition with another
 * meaning: `Ready` is the PostgresDatabase as a whole, as its `Ready` condition is, while the condition
 * `DatabaseReady` is the CNPG Database's.
 */
const DATABASE_EVENT_TYPE = {
  /** One event for the connection Secrets created in one pass. */
  SecretsCreated: 'Normal',
  SecretUpdated: 'Normal',
  CNPGDatabaseCreated: 'Normal',
  CNPGDatabaseUpdated: 'Normal',
  PrivilegesGranted: 'Normal',
  Ready: 'Normal',
  NotReady: 'Warning',
  ChildDeleted: 'Normal',
  ChildRetained: 'Normal',
  CleanupComplete: 'Normal',
  StoredStateDiscarded: 'Warning',
} as const satisfies Record<string, 'Normal' | 'Warning'>;
export type DatabaseEventReason = keyof typeof DATABASE_EVENT_TYPE;
export const databaseEventTypeOf = (reason: DatabaseEventReason) => DATABASE_EVENT_TYPE[reason];

export const DATABASE_LABEL = 'pgfsm.io/database';
/** The digest of the privileges last granted, on the CNPG Database they were granted in (privileges.ts). */
export const PRIVILEGES_ANNOTATION = 'pgfsm.io/privileges';
/** The field manager of that annotation: apart from the Database's spec, so that neither apply drops the other. */
export const PRIVILEGES_FIELD_MANAGER = 'pgfsm-privileges';

export const databaseLabels = (database: PostgresDatabase): Record<string, string> => ({
  [MANAGED_BY_LABEL]: 'pgfsm',
  [DATABASE_LABEL]: database.metadata.name,
});

export function ownerReferenceToDatabase(database: PostgresDatabase): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: 'PostgresDatabase',
    name: database.metadata.name,
    uid: database.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Who controls a child: this database, nobody, or someone else. */
export function ownershipByDatabase(
  owners: OwnerReference[] | undefined,
  database: PostgresDatabase,
): 'ours' | 'orphan' | 'foreign' {
  const controller = (owners ?? []).find((o) => o.controller);
  if (!controller) return 'orphan';
  return controller.uid === database.metadata.uid ? 'ours' : 'foreign';
}
