/**
 * The privileges of a PostgresDatabase's application users, applied over SQL.
 *
 * CloudNativePG creates the database, its owner and the users' roles (`managed.roles`, `Database`), but it
 * has no words for "this user may read and write the owner's tables" or "this one may only read them": those
 * are GRANTs on the existing tables and sequences plus default privileges for the ones created later. So
 * pgfsm connects as the superuser through the cluster's `-rw` Service and runs them itself.
 *
 * The work is split so that most of it is pure: {@link privilegeStatements} turns a plan into statements
 * (tested without a server), {@link planDigest} names a plan so the caller can record which one was applied
 * and skip the connection when nothing changed, and {@link applyPrivileges} is the only part that talks to
 * PostgreSQL. Every statement is a REVOKE or a GRANT, so running them again changes nothing; they run in one
 * transaction, so other sessions never see a user between its revokes and its grants.
 */
import { createHash } from 'node:crypto';
import { Client, DatabaseError, escapeIdentifier } from 'pg';

export type Access = 'readWrite' | 'readOnly';

export interface PrivilegePlan {
  /** The database to connect to and grant on. */
  database: string;
  /** The role that owns the database (and creates the tables). */
  owner: string;
  /** Schemas to grant on; 'public' is always included (deduplicated: public first, then the rest sorted). */
  schemas: string[];
  users: { name: string; access: Access }[];
}

export interface SuperuserTarget {
  host: string;
  port: number;
  user: string;
  password: string;
}

export interface ApplyOptions {
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
}

/** The error applyPrivileges throws: its message never contains the password; keeps pg's SQLSTATE `code`. */
export class PrivilegeError extends Error {
  readonly code?: string;

  constructor(message: string, code?: string) {
    super(message);
    this.name = 'PrivilegeError';
    if (code !== undefined) this.code = code;
  }
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;
/**
 * How much longer than the server's statement_timeout the client waits for an answer. statement_timeout is
 * enforced by the server, so it cannot help when the server (or the network to it) goes silent; this
 * client-side bound then ends the wait instead of leaving a reconcile hanging on a dead socket.
 */
const CLIENT_WAIT_MARGIN_MS = 5_000;
/**
 * Bumped when the statements made for the same plan change, so that a plan applied by an older pgfsm gets a
 * new digest and is applied again.
 */
const STATEMENTS_VERSION = 1;

const TABLE_PRIVILEGES = 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER';
const SEQUENCE_PRIVILEGES = 'USAGE, SELECT, UPDATE';

type User = PrivilegePlan['users'][number];

/** The plan's schemas as they are granted on: 'public' first, then the others sorted, each once. */
export function normaliseSchemas(schemas: readonly string[]): string[] {
  const others = [...new Set(schemas)].filter((s) => s !== 'public').sort(byCodeUnits);
  return ['public', ...others];
}

/** Users sorted by name (then access, so even an invalid plan with a name twice sorts the same way). */
function normaliseUsers(users: PrivilegePlan['users']): User[] {
  return users
    .map((u) => ({ name: u.name, access: u.access }))
    .sort((a, b) => byCodeUnits(a.name, b.name) || byCodeUnits(a.access, b.access));
}

/** Locale-independent order: the digest must not depend on the machine's locale. */
function byCodeUnits(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}

/**
 * Refuses plans whose statements would be wrong rather than merely fail: an empty name quotes to `""`
 * (a syntax error at best), a user that is the owner would have its own privileges revoked on its tables,
 * and a user listed twice leaves its level to whichever entry runs last.
 */
function validatePlan(plan: PrivilegePlan): void {
  const names = [plan.database, plan.owner, ...plan.schemas, ...plan.users.map((u) => u.name)];
  if (names.some((n) => n.length === 0)) throw new RangeError('privilege plan: empty name');
  const seen = new Set<string>();
  for (const { name } of plan.users) {
    if (name === plan.owner) throw new RangeError(`privilege plan: user "${name}" is the database owner`);
    if (seen.has(name)) throw new RangeError(`privilege plan: user "${name}" is listed twice`);
    seen.add(name);
  }
}

/**
 * The roles whose future tables and sequences a user must be granted on through default privileges: the
 * owner and every readWrite user of the plan (they can create tables too), except the user itself, which
 * owns what it creates. Without them a table made by one application user stays out of reach of the others
 * until the plan changes, since GRANT ... ON ALL TABLES only covers the tables that exist when it runs.
 */
function creatorsFor(user: User, owner: string, users: readonly User[]): string[] {
  const writers = users.filter((u) => u.access === 'readWrite' && u.name !== user.name).map((u) => u.name);
  return [owner, ...writers];
}

/** Removes what a user of either level may hold, so that a change of level takes effect. */
function revokeStatements(u: string, schema: string, creators: readonly string[]): string[] {
  return [
    `REVOKE ALL ON ALL TABLES IN SCHEMA ${schema} FROM ${u}`,
    `REVOKE ALL ON ALL SEQUENCES IN SCHEMA ${schema} FROM ${u}`,
    `REVOKE CREATE ON SCHEMA ${schema} FROM ${u}`,
    ...creators.flatMap((c) => [
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} REVOKE ALL ON TABLES FROM ${u}`,
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} REVOKE ALL ON SEQUENCES FROM ${u}`,
    ]),
  ];
}

function readOnlyGrants(u: string, schema: string, creators: readonly string[]): string[] {
  return [
    `GRANT USAGE ON SCHEMA ${schema} TO ${u}`,
    `GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${u}`,
    `GRANT SELECT ON ALL SEQUENCES IN SCHEMA ${schema} TO ${u}`,
    ...creators.flatMap((c) => [
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} GRANT SELECT ON TABLES TO ${u}`,
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} GRANT SELECT ON SEQUENCES TO ${u}`,
    ]),
  ];
}

function readWriteGrants(u: string, schema: string, creators: readonly string[]): string[] {
  return [
    `GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${u}`,
    `GRANT ${TABLE_PRIVILEGES} ON ALL TABLES IN SCHEMA ${schema} TO ${u}`,
    `GRANT ${SEQUENCE_PRIVILEGES} ON ALL SEQUENCES IN SCHEMA ${schema} TO ${u}`,
    ...creators.flatMap((c) => [
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} GRANT ${TABLE_PRIVILEGES} ON TABLES TO ${u}`,
      `ALTER DEFAULT PRIVILEGES FOR ROLE ${c} IN SCHEMA ${schema} GRANT ${SEQUENCE_PRIVILEGES} ON SEQUENCES TO ${u}`,
    ]),
  ];
}

/** One user's statements: all revokes first, then the grants of its level. */
function userStatements(user: User, database: string, schemas: readonly string[], creators: string[]): string[] {
  const u = escapeIdentifier(user.name);
  const quotedCreators = creators.map(escapeIdentifier);
  const grants = user.access === 'readWrite' ? readWriteGrants : readOnlyGrants;
  return [
    ...schemas.flatMap((s) => revokeStatements(u, s, quotedCreators)),
    `GRANT CONNECT, TEMPORARY ON DATABASE ${escapeIdentifier(database)} TO ${u}`,
    ...schemas.flatMap((s) => grants(u, s, quotedCreators)),
  ];
}

/**
 * The statements that bring the grants to the plan, in order; pure and idempotent (running them twice
 * changes nothing). Throws a RangeError for a plan that cannot be granted (an empty name, a user that is the
 * owner, a user listed twice).
 */
export function privilegeStatements(plan: PrivilegePlan): string[] {
  validatePlan(plan);
  const schemas = normaliseSchemas(plan.schemas).map(escapeIdentifier);
  const users = normaliseUsers(plan.users);
  // PostgreSQL 15+ already keeps PUBLIC from creating in 'public'; this makes it hold for every schema, so
  // a readOnly user cannot write by creating objects of its own.
  const schemaStatements = schemas.map((s) => `REVOKE CREATE ON SCHEMA ${s} FROM PUBLIC`);
  return [
    ...schemaStatements,
    ...users.flatMap((u) => userStatements(u, plan.database, schemas, creatorsFor(u, plan.owner, users))),
  ];
}

/**
 * A short stable digest (sha256 hex, first 16 characters) of the normalised plan: users sorted by name,
 * schemas normalised as for the statements. Used to tell whether a plan was already applied.
 */
export function planDigest(plan: PrivilegePlan): string {
  const normalised = {
    version: STATEMENTS_VERSION,
    database: plan.database,
    owner: plan.owner,
    schemas: normaliseSchemas(plan.schemas),
    users: normaliseUsers(plan.users).map((u) => [u.name, u.access]),
  };
  return createHash('sha256').update(JSON.stringify(normalised)).digest('hex').slice(0, 16);
}

/** The only schemas a pgfsm session resolves names in: the catalog, then its own temporary schema. */
export const PINNED_SEARCH_PATH = 'pg_catalog,pg_temp';

export function clientFor(target: SuperuserTarget, database: string, options: ApplyOptions): Client {
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return new Client({
    host: target.host,
    port: target.port,
    user: target.user,
    password: target.password,
    database,
    application_name: 'pgfsm',
    // The team that owns the database may set its search_path (ALTER DATABASE … SET search_path) and plant
    // functions or operators in a schema it owns, which a superuser session would then resolve before the
    // built-ins (CVE-2018-1058's class; CloudNativePG 1.30 pins its own probes for the same reason,
    // CVE-2026-55769). Sent in the startup message, this setting wins over any per-database or per-role one.
    options: `-c search_path=${PINNED_SEARCH_PATH}`,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + CLIENT_WAIT_MARGIN_MS,
    // Should pgfsm vanish mid-transaction, the server ends the session instead of holding the catalog rows
    // the GRANTs locked; the statements follow each other at once, so a statement timeout's worth is ample.
    idle_in_transaction_session_timeout: statementTimeoutMs,
    // CloudNativePG's pg_hba may demand TLS (`hostssl`), and its server certificate is issued by the cluster's
    // own CA, which pgfsm does not mount. So the certificate is not verified: the connection is still
    // encrypted (against passive eavesdropping), it only does not prove the server's identity, which the
    // in-cluster Service name stands for here.
    ssl: { rejectUnauthorized: false },
  });
}

/** Runs the statements in one transaction; on any failure rolls back (if the connection still allows). */
async function runInTransaction(client: Client, statements: readonly string[]): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const statement of statements) await client.query(statement);
    await client.query('COMMIT');
  } catch (error) {
    // Best effort: a broken connection cannot roll back, and closing it aborts the transaction anyway.
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** The text of whatever was thrown; an AggregateError (several addresses refused) has an empty message. */
function describe(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(describe).join('; ');
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/** Replaces every occurrence of the password; pg's messages should never hold it, but this is no place to trust. */
function redact(text: string, password: string): string {
  return password.length === 0 ? text : text.split(password).join('***');
}

/** The PrivilegeError for what applying threw; only a server's error carries a SQLSTATE (not e.g. 'EPIPE'). */
export function privilegeError(error: unknown, what: string, password: string): PrivilegeError {
  const message = redact(`${what}: ${describe(error)}`, password);
  const code = error instanceof DatabaseError && typeof error.code === 'string' ? error.code : undefined;
  return new PrivilegeError(message, code);
}

/**
 * Connects to plan.database on target as the superuser and runs privilegeStatements(plan) in one
 * transaction; always closes the connection. Throws a {@link PrivilegeError}, whatever went wrong.
 */
export async function applyPrivileges(
  target: SuperuserTarget,
  plan: PrivilegePlan,
  options: ApplyOptions = {},
): Promise<void> {
  let client: Client | undefined;
  try {
    const statements = privilegeStatements(plan);
    client = clientFor(target, plan.database, options);
    // An 'error' event without a listener would crash the process (a backend terminated while idle); the
    // same failure also rejects the pending query or connect, which is where it is handled.
    client.on('error', () => undefined);
    await client.connect();
    await runInTransaction(client, statements);
  } catch (error) {
    throw privilegeError(error, `applying privileges on database "${plan.database}"`, target.password);
  } finally {
    await client?.end().catch(() => undefined);
  }
}

/**
 * Which of `names` are roles in PostgreSQL now, read from `pg_roles` as the superuser (on the `postgres`
 * database). What CloudNativePG reports about a role carries no generation, so a deletion that must know a
 * role is gone asks the server itself. Throws a {@link PrivilegeError}, whatever went wrong.
 */
export async function existingRoles(
  target: SuperuserTarget,
  names: readonly string[],
  options: ApplyOptions = {},
): Promise<string[]> {
  if (names.length === 0) return [];
  let client: Client | undefined;
  try {
    client = clientFor(target, 'postgres', options);
    client.on('error', () => undefined);
    await client.connect();
    const result = await client.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname = ANY($1)', [
      [...names],
    ]);
    return result.rows.map((row) => row.rolname).sort();
  } catch (error) {
    throw privilegeError(error, 'reading roles', target.password);
  } finally {
    await client?.end().catch(() => undefined);
  }
}
