/**
 * What PostgreSQL itself says of a PostgresDatabase: whether its database and roles exist and whether the
 * default privileges pgfsm granted its users are still in place. CloudNativePG's reports say what it applied
 * once, not what is there now: a database dropped by hand, by another object or by a restore still reads
 * `applied: true`. So a pass that would call the database Ready asks the server (one connection, as the
 * superuser, like the grants).
 */
import { type Client, DatabaseError } from 'pg';
import type { PostgresPresence } from '../domain/database/observation.ts';
import {
  type ApplyOptions,
  clientFor,
  normaliseSchemas,
  type PrivilegePlan,
  privilegeError,
  type SuperuserTarget,
} from './privileges.ts';

/** SQLSTATE 3D000: the database named in the connection does not exist. */
const NO_SUCH_DATABASE = '3D000';

/**
 * The users' default privileges on the owner's future tables, one row per (user, schema) where the grant that
 * `privilegeStatements` makes (SELECT, for both levels) is not in pg_default_acl.
 */
const MISSING_DEFAULTS = `
SELECT g.usr, g.sch FROM unnest($1::text[], $2::text[]) AS g(usr, sch)
WHERE NOT EXISTS (
  SELECT 1 FROM pg_default_acl d
  JOIN pg_namespace n ON n.oid = d.defaclnamespace
  JOIN pg_roles o ON o.oid = d.defaclrole
  CROSS JOIN LATERAL aclexplode(d.defaclacl) a
  JOIN pg_roles r ON r.oid = a.grantee
  WHERE o.rolname = $3 AND n.nspname = g.sch AND d.defaclobjtype = 'r' AND r.rolname = g.usr
    AND a.privilege_type = 'SELECT')`;

async function connected(target: SuperuserTarget, database: string, options: ApplyOptions): Promise<Client> {
  const client = clientFor(target, database, options);
  // An 'error' event without a listener would crash the process; the failure also rejects the pending call.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

async function rolesIn(client: Client, roles: readonly string[]): Promise<string[]> {
  const result = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname = ANY($1)', [
    [...roles],
  ]);
  return result.rows.map((row) => row.rolname).sort();
}

/**
 * Connects to the plan's database (to `postgres` when it does not exist) and reads what is there. Throws a
 * PrivilegeError (never holding the password) when the server cannot be asked.
 */
export async function inspectPresence(
  target: SuperuserTarget,
  plan: PrivilegePlan,
  options: ApplyOptions = {},
): Promise<PostgresPresence> {
  const roles = [plan.owner, ...plan.users.map((u) => u.name)];
  let client: Client | undefined;
  try {
    try {
      client = await connected(target, plan.database, options);
    } catch (error) {
      if (!(error instanceof DatabaseError && error.code === NO_SUCH_DATABASE)) throw error;
      client = await connected(target, 'postgres', options);
      return { database: false, roles: await rolesIn(client, roles), privilegesMissing: [] };
    }
    const pairs = plan.users.flatMap((u) => normaliseSchemas(plan.schemas).map((s) => [u.name, s] as const));
    const missing =
      pairs.length === 0
        ? []
        : (
            await client.query<{ usr: string; sch: string }>(MISSING_DEFAULTS, [
              pairs.map(([u]) => u),
              pairs.map(([, s]) => s),
              plan.owner,
            ])
          ).rows.map((row) => `${row.usr} in ${row.sch}`);
    return { database: true, roles: await rolesIn(client, roles), privilegesMissing: missing.sort() };
  } catch (error) {
    throw privilegeError(error, `reading what database "${plan.database}" holds`, target.password);
  } finally {
    await client?.end().catch(() => undefined);
  }
}
