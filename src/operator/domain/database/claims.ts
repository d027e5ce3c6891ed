/**
 * Claims: every name a PostgresDatabase uses has exactly one holder, so that no resource can push, grant,
 * create or drop for a name another holds.
 *
 * - A database name and a role name are claimed on one PostgresCluster (one PostgreSQL); a connection Secret
 *   name in the namespace (Secrets are namespaced, and `<object>-<role>` names can collide across objects:
 *   `shopx` + `app_ro` and `shopx-app` + `ro` are both `shopx-app-ro`).
 * - The cluster's own `spec.managedRoles` (and their password Secrets, and its superuser Secret) hold first:
 *   the platform team that writes the cluster already holds its superuser.
 * - Then a PostgresDatabase that holds a name keeps it while it still wants it: what it holds is recorded in its
 *   `status.claims`, written by its own pass only. Without that, an older database whose spec later adds a user
 *   a newer one holds would take the role over, password and all.
 * - Names nobody holds yet go to the oldest PostgresDatabase wanting them (creation time, then name): a rule
 *   every pass derives the same way from the same list, whichever pass (the cluster's or a database's) asks.
 *
 * A database that does not hold every name it wants is refused as a whole (its pipeline stops at Claims), but
 * keeps what it holds: an edit that adds a clashing user must not cost it the roles it has.
 */
import type { PostgresCluster, PostgresDatabase } from '../../api/schema.ts';
import { isRecord } from '../records.ts';
import { childNames } from '../vocabulary.ts';
import type { DatabaseObservation } from './observation.ts';
import { type DatabaseRole, ensureOf, namesCluster, rolesOf } from './roles.ts';

export type ClaimKind = 'database' | 'role' | 'secret';

/** What one PostgresDatabase holds: the shape of its `status.claims`. */
export interface HeldNames {
  database?: string;
  roles: string[];
  secrets: string[];
}

export interface Refusal {
  kind: ClaimKind;
  name: string;
  /** Who holds it, in words: `PostgresDatabase first`, `PostgresCluster orders's spec.managedRoles`. */
  heldBy: string;
}

export interface RoleClaim extends DatabaseRole {
  /** The PostgresDatabase that holds it, and its uid: its password Secret must be controlled by that object. */
  database: string;
  uid: string;
  /**
   * `present`: pushed with its password Secret. `absent`: the database is being deleted with its roles.
   * `released`: deleted under Retain: taken out of the list, left in PostgreSQL as it is.
   */
  ensure: 'present' | 'absent' | 'released';
}

export interface Claims {
  /** The roles PostgresDatabases hold on the cluster, by role name. */
  roles: Map<string, RoleClaim>;
  /** By PostgresDatabase name: what it holds (every one looked at has an entry, maybe empty). */
  held: Map<string, HeldNames>;
  /** By PostgresDatabase name: the names it wants and does not hold. Absent: it holds all of them. */
  refused: Map<string, Refusal[]>;
}

/** The cluster a claim is judged on: a PostgresCluster, or only its name when it does not exist (yet). */
export type ClaimScope = Pick<PostgresCluster, 'metadata'> & { spec?: unknown };

/**
 * The claims a database's pass judges by: on its PostgresCluster, or — when that does not exist (yet) — on the
 * cluster name its spec gives, among databases alone. The spec is read defensively (it may be anything).
 */
export function claimsOfDatabase(o: Pick<DatabaseObservation, 'database' | 'cluster' | 'databases'>): Claims {
  const spec: unknown = o.database.spec;
  const name = isRecord(spec) && typeof spec.cluster === 'string' ? spec.cluster : '';
  return claimsOn(o.cluster ?? { metadata: { name, namespace: o.database.metadata.namespace } }, o.databases);
}

const byAge = (a: PostgresDatabase, b: PostgresDatabase) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
  a.metadata.name.localeCompare(b.metadata.name);

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** What a PostgresDatabase's status says it holds, read defensively (status is the operator's, but may be anything). */
export function recordedClaims(database: PostgresDatabase): HeldNames {
  const claims: unknown = (database.status as Record<string, unknown> | undefined)?.claims;
  if (!isRecord(claims)) return { roles: [], secrets: [] };
  return {
    ...(typeof claims.database === 'string' ? { database: claims.database } : {}),
    roles: strings(claims.roles),
    secrets: strings(claims.secrets),
  };
}

interface Want {
  kind: ClaimKind;
  name: string;
}

/** The names a PostgresDatabase wants: on the cluster only when it names this cluster; Secrets always. */
function wantsOf(database: PostgresDatabase, scope: ClaimScope): Want[] {
  const roles = rolesOf(database);
  const secrets = roles.map((r): Want => ({ kind: 'secret', name: r.secretName }));
  if (!namesCluster(database, scope)) return secrets;
  const spec = database.spec as unknown as Record<string, unknown>;
  return [
    ...(typeof spec.name === 'string' ? [{ kind: 'database' as const, name: spec.name }] : []),
    ...roles.map((r): Want => ({ kind: 'role', name: r.name })),
    ...secrets,
  ];
}

/** The names the cluster holds itself: its spec's roles, their password Secrets and its superuser Secret. */
function clusterHolds(scope: ClaimScope): Map<string, string> {
  const held = new Map<string, string>();
  const name = scope.metadata.name;
  held.set(`secret/${childNames(name).secret}`, `PostgresCluster ${name} (its superuser Secret)`);
  const spec = scope.spec;
  if (!isRecord(spec) || !Array.isArray(spec.managedRoles)) return held;
  const by = `PostgresCluster ${name}'s spec.managedRoles`;
  for (const role of spec.managedRoles) {
    if (!isRecord(role) || typeof role.name !== 'string') continue;
    held.set(`role/${role.name}`, by);
    const secret = isRecord(role.passwordSecretRef) ? role.passwordSecretRef.name : undefined;
    if (typeof secret === 'string') held.set(`secret/${secret}`, by);
  }
  return held;
}

const keyOf = (want: Want) => `${want.kind}/${want.name}`;

/**
 * Who holds each name: the cluster's spec first, then what each PostgresDatabase has recorded and still wants
 * (oldest first, should two have recorded one), then the rest, oldest first. `databases` is the namespace's.
 */
export function claimsOn(scope: ClaimScope, databases: readonly PostgresDatabase[]): Claims {
  const holder = new Map<string, string>(clusterHolds(scope));
  const holderName = new Map<string, string>();
  const ordered = [...databases].sort(byAge);
  const wants = new Map(ordered.map((d) => [d.metadata.name, wantsOf(d, scope)]));
  const take = (database: PostgresDatabase, want: Want) => {
    const key = keyOf(want);
    if (holder.has(key)) return;
    holder.set(key, `PostgresDatabase ${database.metadata.name}`);
    holderName.set(key, database.metadata.name);
  };
  for (const database of ordered) {
    const recorded = recordedClaims(database);
    const kept = new Set([
      ...(recorded.database ? [`database/${recorded.database}`] : []),
      ...recorded.roles.map((r) => `role/${r}`),
      ...recorded.secrets.map((s) => `secret/${s}`),
    ]);
    for (const want of wants.get(database.metadata.name) ?? []) if (kept.has(keyOf(want))) take(database, want);
  }
  for (const database of ordered) for (const want of wants.get(database.metadata.name) ?? []) take(database, want);

  const roles = new Map<string, RoleClaim>();
  const held = new Map<string, HeldNames>();
  const refused = new Map<string, Refusal[]>();
  for (const database of ordered) {
    const name = database.metadata.name;
    const mine: HeldNames = { roles: [], secrets: [] };
    const refusals: Refusal[] = [];
    for (const want of wants.get(name) ?? []) {
      const key = keyOf(want);
      if (holderName.get(key) !== name) {
        refusals.push({ ...want, heldBy: holder.get(key) ?? 'nobody' });
        continue;
      }
      if (want.kind === 'database') mine.database = want.name;
      if (want.kind === 'role') mine.roles.push(want.name);
      if (want.kind === 'secret') mine.secrets.push(want.name);
    }
    held.set(name, mine);
    if (refusals.length > 0) refused.set(name, refusals);
    if (!namesCluster(database, scope)) continue;
    const ensure = ensureOf(database);
    for (const role of rolesOf(database)) {
      if (!mine.roles.includes(role.name)) continue;
      roles.set(role.name, { ...role, database: name, uid: database.metadata.uid ?? '', ensure });
    }
  }
  return { roles, held, refused };
}

/** A refusal in words, for conditions and events. */
export const describeRefusal = (r: Refusal) => `${r.kind} ${r.name} is held by ${r.heldBy}`;

/** Whether a PostgresDatabase holds its database name on its cluster (what may create or drop it). */
export const holdsDatabaseName = (claims: Claims, database: PostgresDatabase) =>
  claims.held.get(database.metadata.name)?.database !== undefined;
