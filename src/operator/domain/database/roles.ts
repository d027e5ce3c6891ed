/**
 * The roles a PostgresDatabase asks for, and who may have each. CloudNativePG's `spec.managed.roles` is one
 * atomic list: two field managers applying it would each remove the other's entries. So the PostgresCluster's
 * pass is its only writer: it pushes the roles of its own spec and those of every PostgresDatabase naming it
 * (components/managed-roles.ts), and a PostgresDatabase only reads what CNPG reports. Both sides call
 * `roleClaims` below, so they agree on who owns a role without talking to each other.
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
export const namesCluster = (database: PostgresDatabase, cluster: Pick<PostgresCluster, 'metadata'>) =>
  database.metadata.namespace === cluster.metadata.namespace &&
  isRecord(database.spec) &&
  database.spec.cluster === cluster.metadata.name;

export interface RoleClaim extends DatabaseRole {
  /** The PostgresDatabase that has it. */
  database: string;
  /**
   * `present`: pushed with its password Secret. `absent`: the database is being deleted with its roles.
   * `released`: deleted under Retain: taken out of the list, left in PostgreSQL as it is.
   */
  ensure: 'present' | 'absent' | 'released';
}

export interface Claims {
  /** By role name. */
  roles: Map<string, RoleClaim>;
  /** By PostgresDatabase name: why its roles are not pushed (one of them belongs to someone else). */
  conflicts: Map<string, string>;
}

const byAge = (a: PostgresDatabase, b: PostgresDatabase) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
  a.metadata.name.localeCompare(b.metadata.name);

function ensureOf(database: PostgresDatabase): RoleClaim['ensure'] {
  if (!database.metadata.deletionTimestamp || !isDatabaseReleasingRoles(database.status?.state)) return 'present';
  return isRecord(database.spec) && database.spec.deletionPolicy === 'Delete' ? 'absent' : 'released';
}

/**
 * Who has each role on the cluster: its own `spec.managedRoles` first, then the PostgresDatabases naming it,
 * oldest first. A database one of whose roles is already had gets none of them pushed, and the reason.
 */
export function roleClaims(cluster: PostgresCluster, databases: readonly PostgresDatabase[]): Claims {
  const roles = new Map<string, RoleClaim>();
  const conflicts = new Map<string, string>();
  const spec: unknown = cluster.spec;
  const own = new Set<string>();
  if (isRecord(spec) && Array.isArray(spec.managedRoles)) {
    for (const role of spec.managedRoles) if (isRecord(role) && typeof role.name === 'string') own.add(role.name);
  }
  for (const database of databases.filter((d) => namesCluster(d, cluster)).sort(byAge)) {
    const wanted = rolesOf(database);
    const taken = wanted
      .map((role) => {
        if (own.has(role.name))
          return `role ${role.name} is in PostgresCluster ${cluster.metadata.name}'s spec.managedRoles`;
        const other = roles.get(role.name);
        return other ? `role ${role.name} belongs to PostgresDatabase ${other.database}` : undefined;
      })
      .filter((why): why is string => why !== undefined);
    if (taken.length > 0) {
      conflicts.set(database.metadata.name, taken.join('; '));
      continue;
    }
    const ensure = ensureOf(database);
    for (const role of wanted) roles.set(role.name, { ...role, database: database.metadata.name, ensure });
  }
  return { roles, conflicts };
}
