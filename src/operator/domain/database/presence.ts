/**
 * Ready means the database is there: on a pass that would otherwise find it Ready, the core reads what
 * PostgreSQL holds (observation `inPostgres`), and these say what is missing. CloudNativePG's reports cannot
 * tell: `applied: true` on a Database and `reconciled` on a role stay as they were after a database or a role
 * is dropped by hand, by another object, or by a restore.
 */
import { cnpgApplied } from './cnpg-database.ts';
import type { DatabaseObservation } from './observation.ts';
import type { DatabaseRole } from './roles.ts';
import { ownershipByDatabase } from './vocabulary.ts';

/** Whether a pass asks PostgreSQL: not being deleted, and CNPG says it has applied our Database. */
export const presenceToConfirm = (o: Pick<DatabaseObservation, 'database' | 'cnpg' | 'cnpgDatabase'>) =>
  !o.database.metadata.deletionTimestamp &&
  !!o.cnpg &&
  !!o.cnpgDatabase &&
  ownershipByDatabase(o.cnpgDatabase.metadata.ownerReferences, o.database) === 'ours' &&
  cnpgApplied(o.cnpgDatabase);

/** The roles CNPG reports reconciled that PostgreSQL does not have (none when it was not asked). */
export const rolesMissing = (o: DatabaseObservation, roles: readonly DatabaseRole[]): string[] =>
  o.inPostgres ? roles.map((r) => r.name).filter((name) => !o.inPostgres?.roles.includes(name)) : [];

/** Whether PostgreSQL was asked and has no such database. */
export const databaseMissing = (o: DatabaseObservation) => o.inPostgres?.database === false;

/** The users whose privileges PostgreSQL no longer has, as `user in schema` (none when it was not asked). */
export const privilegesMissing = (o: DatabaseObservation) => o.inPostgres?.privilegesMissing ?? [];
