/**
 * The roles a PostgresDatabase asks for, and who may have each. CloudNativePG's `spec.managed.roles` is one
 * atomic list: two field managers applying it would each remove the other's entries. So the PostgresCluster's
 * pass is its only writer: it pushes the roles of its own spec and those of every PostgresDatabase naming it
 * (components/managed-roles.ts), and a PostgresDatabase only reads what CNPG reports. Both sides call
 * `claimsOn` (claims.ts), so they agree on who holds a role without talking to each other.
 */

import { isDatabaseReleasingRoles } from '../../../../machines/database-states.ts';
import type { PostgresCluster, PostgresDatabase } from '../../api/schema.ts';
import { isRecord } from '../records.ts';

export type RoleAccess = 'owner' | 'readWrite' | 'readOnly';

export interface DatabaseRole {
  name: string;
  access: RoleAccess;
  /** The connection Secret that is also CNPG's password Secret for the role. */
  secretName: string;
}

/** `<object>-<role>` with '_' as '-': injective, since role names hold no '-' (database-schema.ts). */
export const secretNameOf = (databaseName: string, role: string) => `${databaseName}-${role.replaceAll('_', '-')}`;

/**
 * The owner first, then the users, read defensively: an object stored with validation off may hold anything,
 * and it must not make the cluster's pass throw. What cannot be read is left out (the database's own pass
 * reports its spec invalid).
 */
export function rolesOf(database: PostgresDatabase): DatabaseRole[] {
  const spec: unknown = database.spec;
  if (!isRecord(spec) || typeof spec.owner !== 'string') return [];
  const name = database.metadata.name;
  const roles: DatabaseRole[] = [{ name: spec.owner, access: 'owner', secretName: secretNameOf(name, spec.owner) }];
  for (const user of Array.isArray(spec.users) ? spec.users : []) {
    if (!isRecord(user) || typeof user.name !== 'string') continue;
    const access = user.access === 'readOnly' ? 'readOnly' : 'readWrite';
    roles.push({ name: user.name, access, secretName: secretNameOf(name, user.name) });
  }
  return roles;
}

/** Whether a PostgresDatabase's spec names this cluster (same namespace). */
export const namesCluster = (database: PostgresDatabase, cluster: Pick<PostgresCluster, 'metadata'>): boolean =>
  database.metadata.namespace === cluster.metadata.namespace &&
  isRecord(database.spec) &&
  database.spec.cluster === cluster.metadata.name;

/**
 * What the PostgresCluster's pass does with a held role: `present` (pushed with its password Secret), `absent`
 * (its database is being deleted with its roles) or `released` (deleted under Retain: out of the list, left in
 * PostgreSQL as it is).
 */
export function ensureOf(database: PostgresDatabase): 'present' | 'absent' | 'released' {
  if (!database.metadata.deletionTimestamp || !isDatabaseReleasingRoles(database.status?.state)) return 'present';
  return isRecord(database.spec) && database.spec.deletionPolicy === 'Delete' ? 'absent' : 'released';
}
