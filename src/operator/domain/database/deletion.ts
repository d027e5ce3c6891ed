/**
 * A PostgresDatabase's deletion, in three steps the machine takes in order: its CNPG Database (CNPG drops the
 * database itself only under `deletionPolicy: Delete`, through the reclaim policy set on it), its roles (let go
 * by the PostgresCluster's pass: dropped under Delete, left in PostgreSQL under Retain), its Secrets (deleted
 * under Delete, released under Retain: they hold the passwords of roles that still exist).
 */
import type { PostgresDatabase } from '../../api/schema.ts';
import { claimsOfDatabase, claimsOn, holdsDatabaseName } from './claims.ts';
import { cnpgDatabaseRef, cnpgRefused, desiredCnpgDatabase } from './cnpg-database.ts';
import { secretRefOf } from './connection.ts';
import { type DatabaseEffect, databaseEvent } from './effects.ts';
import type { DatabaseObservation } from './observation.ts';
import { rolesOf } from './roles.ts';
import { ownershipByDatabase } from './vocabulary.ts';

export const databaseDeletionRequested = (o: DatabaseObservation) => !!o.database.metadata.deletionTimestamp;

const deletes = (database: PostgresDatabase) => database.spec?.deletionPolicy === 'Delete';
const ours = (o: DatabaseObservation, owners: PostgresDatabase['metadata']['ownerReferences']) =>
  ownershipByDatabase(owners, o.database) === 'ours';

/** The CNPG Database of ours that is still there, if any. */
const ourCnpgDatabase = (o: DatabaseObservation) =>
  o.cnpgDatabase && ours(o, o.cnpgDatabase.metadata.ownerReferences) ? o.cnpgDatabase : undefined;

/**
 * Deletes our CNPG Database. Under Delete, CNPG's finalizer then drops the database it names — so a Database
 * that may name someone else's (its name is not held, or CNPG refused it: "already managed by object …") is
 * first set to `retain`, and deleted only once the API server holds that: CloudNativePG sees the update
 * before the deletion (one watch, in order), and drops nothing.
 */
export function planCnpgDatabaseDeletion(o: DatabaseObservation): DatabaseEffect[] {
  const seen = ourCnpgDatabase(o);
  if (!databaseDeletionRequested(o) || !seen) return [];
  const ref = cnpgDatabaseRef(o.database);
  const drops = seen.spec.databaseReclaimPolicy === 'delete';
  if (drops && !dropsOnlyItsOwn(o, seen)) {
    const desired = desiredCnpgDatabase(o.database);
    const object = { ...desired, spec: { ...desired.spec, databaseReclaimPolicy: 'retain' as const } };
    const message = `CNPG Database ${ref.name} set to retain before it is deleted: database ${seen.spec.name} is not this PostgresDatabase's to drop`;
    return [{ type: 'applyDatabase', object, event: databaseEvent('CNPGDatabaseUpdated', 'UpdateDatabase', message) }];
  }
  const what = drops ? 'CNPG drops the database' : 'the database stays in PostgreSQL';
  return [
    {
      type: 'delete',
      ref,
      event: databaseEvent('ChildDeleted', 'DeleteDatabase', `CNPG Database ${ref.name} deleted: ${what}`),
    },
  ];
}

/** Whether dropping through this Database can only drop this PostgresDatabase's own database. */
const dropsOnlyItsOwn = (o: DatabaseObservation, seen: NonNullable<DatabaseObservation['cnpgDatabase']>) =>
  holdsItsName(o) && !cnpgRefused(seen);

/** Whether it holds its database name on its cluster (claims.ts). */
const holdsItsName = (o: DatabaseObservation) => holdsDatabaseName(claimsOfDatabase(o), o.database);

export const cnpgDatabaseGone = (o: DatabaseObservation) => !ourCnpgDatabase(o);

/**
 * The PostgresCluster's pass has let the roles go as the policy says: each is `ensure: absent` (Delete) or out of
 * the list (Retain). Nothing to wait for when there is no CNPG Cluster, or when the roles were never pushed for
 * this database (those it does not hold).
 */
export function rolesLetGo(o: DatabaseObservation): boolean {
  const { cluster, cnpg } = o;
  if (!cluster || !cnpg) return true;
  const held = new Set(claimsOn(cluster, o.databases).held.get(o.database.metadata.name)?.roles ?? []);
  const pushed = new Map((cnpg.spec.managed?.roles ?? []).map((r) => [r.name, r]));
  const cannot = cnpg.status?.managedRolesStatus?.cannotReconcile ?? {};
  const reconciled = new Set(cnpg.status?.managedRolesStatus?.byStatus?.reconciled ?? []);
  const inPostgres = new Set(o.rolesInPostgres ?? rolesOf(o.database).map((r) => r.name));
  // Only the roles it holds were ever pushed for it; another's of the same name are not its to wait for.
  return rolesOf(o.database).every((role) => {
    if (!held.has(role.name)) return true;
    const entry = pushed.get(role.name);
    if (!deletes(o.database) || entry === undefined) return entry === undefined;
    // Dropped: PostgreSQL says so (CNPG's report alone may be one from before the drop), and CNPG reports it
    // reconciled. Once a role is gone, CNPG can only ever report its `absent` entry reconciled again, so the
    // leftover entry, which the cluster keeps for good, never counts as the cluster's pending role.
    return entry.ensure === 'absent' && reconciled.has(role.name) && !cannot[role.name] && !inPostgres.has(role.name);
  });
}

export function planSecretsCleanup(o: DatabaseObservation): DatabaseEffect[] {
  if (!databaseDeletionRequested(o)) return [];
  const uid = o.database.metadata.uid ?? '';
  return rolesOf(o.database).flatMap((role): DatabaseEffect[] => {
    const seen = o.secrets[role.name];
    if (!seen || !ours(o, seen.metadata.ownerReferences)) return [];
    const ref = secretRefOf(o.database, role);
    return deletes(o.database)
      ? [{ type: 'delete', ref, event: databaseEvent('ChildDeleted', 'DeleteSecret', `Secret ${ref.name} deleted`) }]
      : [
          {
            type: 'releaseOwner',
            ref,
            ownerUid: uid,
            event: databaseEvent('ChildRetained', 'RetainSecret', `Secret ${ref.name} kept for role ${role.name}`),
          },
        ];
  });
}

export const secretsCleanedUp = (o: DatabaseObservation) =>
  rolesOf(o.database).every((role) => {
    const seen = o.secrets[role.name];
    return !seen || !ours(o, seen.metadata.ownerReferences);
  });

export function planDatabaseFinalizerRemoval(o: DatabaseObservation): DatabaseEffect[] {
  if (!databaseDeletionRequested(o)) return [];
  // Said only of a database it held: one whose name another holds was never its to drop, and was not.
  const what = !holdsItsName(o)
    ? `database ${o.database.spec?.name} was never this PostgresDatabase's and is left as it is`
    : `database ${o.database.spec?.name} ${deletes(o.database) ? 'dropped' : 'retained'}`;
  return [
    {
      type: 'removeFinalizer',
      event: databaseEvent('CleanupComplete', 'RemoveFinalizer', `Cleanup complete: ${what}`),
    },
  ];
}

/** Whether a pass must read which roles PostgreSQL has: a deletion under `Delete` past its CNPG Database. */
export const rolesToConfirmDropped = (o: Pick<DatabaseObservation, 'database' | 'cnpgDatabase' | 'cnpg'>) =>
  !!o.database.metadata.deletionTimestamp &&
  deletes(o.database) &&
  !!o.cnpg &&
  !ourCnpgDatabase(o as DatabaseObservation);
