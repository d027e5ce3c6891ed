/**
 * The checks of a PostgresDatabase's tick: one judgment per component (its verdict and the writes acting on
 * it), computed once per tick and shared by the machine's guards and actions and by the status projection.
 * Pure: the observation and the settings are all it reads.
 */

import { PLAIN_IDENTIFIER } from '../../api/database-schema.ts';
import type { PostgresDatabase } from '../../api/schema.ts';
import { type PrivilegePlan, planDigest } from '../../postgres/privileges.ts';
import { joinReports, type KubeEvent } from '../effects.ts';
import { isRecord } from '../records.ts';
import { type Judgment, judgment, type Verdict, verdict } from '../verdict.ts';
import { ADOPT_ANNOTATION, describeOwner } from '../vocabulary.ts';
import {
  type Claims,
  claimsOfDatabase,
  describeRefusal,
  type HeldNames,
  holdsDatabaseName,
  type Refusal,
} from './claims.ts';
import { cnpgApplied, cnpgDatabaseDrift, cnpgDatabaseRef, cnpgRefused, desiredCnpgDatabase } from './cnpg-database.ts';
import { desiredSecret, type Endpoints, followedEndpoints, secretDrift } from './connection.ts';
import { type DatabaseEffect, databaseEvent } from './effects.ts';
import type { DatabaseObservation, DatabaseTick } from './observation.ts';
import { databaseMissing, privilegesMissing, rolesMissing } from './presence.ts';
import { type DatabaseRole, rolesOf } from './roles.ts';
import {
  DATABASE_COMPONENTS,
  type DatabaseComponent,
  DatabaseReason,
  ownershipByDatabase,
  PRIVILEGES_ANNOTATION,
} from './vocabulary.ts';

export type DatabaseVerdict = Verdict<DatabaseReason>;
type DatabaseJudgment = Judgment<DatabaseReason, DatabaseEffect>;

export interface DatabaseAssessment {
  /** Why the spec cannot be acted on, naming the field; undefined when it can. */
  specProblem?: string;
  /** Each component's verdict; a component after one that is not Ready is judged too (the status shows it). */
  health: Record<DatabaseComponent, DatabaseVerdict>;
  /** The writes each component's step makes on this tick. */
  plans: Record<DatabaseComponent, DatabaseEffect[]>;
  endpoints?: Endpoints;
  roles: DatabaseRole[];
  /** The names it holds (recorded in `status.claims`), and those it wants that others hold. */
  held?: HeldNames;
  refusals?: Refusal[];
}

const plain = new RegExp(PLAIN_IDENTIFIER);

/**
 * What the CRD schema refuses, checked again: an object stored before the CRD (or with validation off) may
 * hold anything, and must stop in Failed.InvalidSpec naming the field rather than make a pass throw.
 */
export function specProblem(database: PostgresDatabase): string | undefined {
  const spec: unknown = database.spec;
  if (!isRecord(spec)) return 'spec is missing';
  for (const field of ['cluster', 'name', 'owner'] as const) {
    if (typeof spec[field] !== 'string' || spec[field] === '') return `spec.${field} must be set`;
  }
  for (const field of ['name', 'owner'] as const) {
    if (!plain.test(spec[field] as string)) return `spec.${field} must be a plain PostgreSQL identifier`;
  }
  const users = spec.users ?? [];
  if (!Array.isArray(users)) return 'spec.users must be a list';
  for (const [i, user] of users.entries()) {
    if (!isRecord(user) || typeof user.name !== 'string' || !plain.test(user.name)) {
      return `spec.users[${i}].name must be a plain PostgreSQL identifier`;
    }
    if (user.name === spec.owner) return `spec.users[${i}].name must differ from spec.owner`;
  }
  for (const list of ['schemas', 'extensions'] as const) {
    const items = spec[list] ?? [];
    if (!Array.isArray(items) || items.some((item) => !isRecord(item) || typeof item.name !== 'string')) {
      return `spec.${list} must be a list of names`;
    }
  }
  return undefined;
}

const pending = (reason: DatabaseReason, message: string) => verdict('Pending', reason, message);
const ready = (reason: DatabaseReason, message: string) => verdict('Ready', reason, message);

function judgeCluster(o: DatabaseObservation, endpoints: Endpoints | undefined, refused?: string): DatabaseJudgment {
  const name = o.database.spec.cluster;
  if (!o.cluster) {
    return judgment(
      pending(
        DatabaseReason.ClusterNotFound,
        `PostgresCluster ${name} does not exist in namespace ${o.database.metadata.namespace}`,
      ),
    );
  }
  if (o.cluster.metadata.deletionTimestamp) {
    return judgment(pending(DatabaseReason.ClusterDeleting, `PostgresCluster ${name} is being deleted`));
  }
  if (refused) return judgment(pending(DatabaseReason.ClusterNotPublished, refused));
  if (!endpoints || !o.cnpg) {
    const phase = o.cluster.status?.phase ?? 'new';
    return judgment(
      pending(
        DatabaseReason.ClusterNotPublished,
        `Waiting for PostgresCluster ${name} (${phase}) to publish its endpoints`,
      ),
    );
  }
  const via = endpoints.pooled ? 'through its pooler' : 'directly';
  return judgment(ready(DatabaseReason.ClusterAvailable, `PostgresCluster ${name} is published; connecting ${via}`));
}

const REFUSAL_REASON: Record<Refusal['kind'], DatabaseReason> = {
  database: DatabaseReason.DatabaseClaimed,
  role: DatabaseReason.RoleClaimed,
  secret: DatabaseReason.SecretClaimed,
};

/** Whether every name it needs is its own: nothing is created, pushed or granted for one that is not. */
function judgeClaims(o: DatabaseObservation, claims: Claims): DatabaseJudgment {
  const name = o.database.metadata.name;
  const refusals = claims.refused.get(name) ?? [];
  const first = refusals[0];
  if (first) {
    const fix = 'pick names nobody else on the cluster uses (the spec is immutable: create the database anew)';
    return judgment(
      verdict('Failed', REFUSAL_REASON[first.kind], `${refusals.map(describeRefusal).join('; ')}: ${fix}`),
    );
  }
  const held = claims.held.get(name);
  const roles = held?.roles.length ?? 0;
  const message = `Holds database ${held?.database ?? o.database.spec.name}, ${roles} role(s) and their Secret(s) on PostgresCluster ${o.database.spec.cluster}`;
  return judgment(ready(DatabaseReason.ClaimsHeld, message));
}

function judgeSecrets(o: DatabaseObservation, roles: DatabaseRole[], endpoints: Endpoints): DatabaseJudgment {
  const effects: DatabaseEffect[] = [];
  const creating: string[] = [];
  const following: string[] = [];
  // The Secrets created in this pass, one right after the other: one event for them all when each is (joinReports).
  const created: Array<DatabaseEffect & { type: 'applySecret' }> = [];
  const createdFor: string[] = [];
  const secretsCreated = (which: string[]) =>
    databaseEvent(
      'SecretsCreated',
      'CreateSecrets',
      `${which.length > 1 ? 'Secrets' : 'Secret'} ${which.join(', ')} created`,
    );
  for (const role of roles) {
    const template = desiredSecret(o.database, role, endpoints);
    const seen = o.secrets[role.name];
    if (!seen) {
      creating.push(role.secretName);
      const what = `${role.secretName} for role ${role.name}`;
      const effect: DatabaseEffect & { type: 'applySecret' } = {
        type: 'applySecret',
        secret: template,
        event: secretsCreated([what]),
      };
      // Together only when planned one right after the other (an update between them ends a run).
      if (created.length > 0 && created.at(-1) !== effects.at(-1)) {
        joinReports(created, (n) => secretsCreated(createdFor.slice(0, n)));
        created.length = 0;
        createdFor.length = 0;
      }
      created.push(effect);
      createdFor.push(what);
      effects.push(effect);
      continue;
    }
    const ownership = ownershipByDatabase(seen.metadata.ownerReferences, o.database);
    if (ownership === 'foreign') {
      const by = describeOwner(seen.metadata.ownerReferences);
      return judgment(
        verdict('Failed', DatabaseReason.SecretOwnedByOther, `Secret ${role.secretName} is controlled by ${by}`),
      );
    }
    if (ownership === 'orphan' && seen.metadata.annotations?.[ADOPT_ANNOTATION] !== 'true') {
      const how = `kubectl annotate -n ${o.database.metadata.namespace} secret ${role.secretName} ${ADOPT_ANNOTATION}=true`;
      return judgment(
        verdict(
          'Failed',
          DatabaseReason.SecretOwnedByOther,
          `Secret ${role.secretName} exists without an owner and was not handed over: it is not changed. To hand it over: ${how}`,
        ),
      );
    }
    const drift = secretDrift(seen, template);
    if (drift.length > 0 || ownership === 'orphan') {
      following.push(role.secretName);
      const what = `Secret ${role.secretName} now points at ${template.host}:${template.port} (${drift.join(', ') || 'adopted'})`;
      effects.push({
        type: 'applySecret',
        secret: template,
        event: databaseEvent('SecretUpdated', 'UpdateSecret', what),
      });
    }
  }
  joinReports(created, (n) => secretsCreated(createdFor.slice(0, n)));
  if (creating.length > 0) {
    return judgment(pending(DatabaseReason.SecretsPending, `Creating Secret(s) ${creating.join(', ')}`), ...effects);
  }
  if (following.length > 0) {
    const message = `Secret(s) ${following.join(', ')} follow the cluster to ${endpoints.rw}`;
    return judgment(verdict('Provisioning', DatabaseReason.SecretsFollowingCluster, message), ...effects);
  }
  return judgment(ready(DatabaseReason.SecretsReady, `${roles.length} connection Secret(s) point at ${endpoints.rw}`));
}

function judgeRoles(o: DatabaseObservation, roles: DatabaseRole[]): DatabaseJudgment {
  const { cluster, cnpg } = o;
  if (!cluster || !cnpg) return judgment(pending(DatabaseReason.RolesPending, 'Waiting for the CNPG cluster'));
  const cannot = cnpg.status?.managedRolesStatus?.cannotReconcile ?? {};
  const failed = roles.filter((r) => cannot[r.name]);
  if (failed.length > 0) {
    const detail = failed.map((r) => `${r.name}: ${(cannot[r.name] ?? []).join('; ') || 'cannot be reconciled'}`);
    return judgment(
      verdict('Failed', DatabaseReason.RolesReconciliationFailed, `CNPG cannot reconcile ${detail.join('; ')}`),
    );
  }
  const pushed = new Map((cnpg.spec.managed?.roles ?? []).map((r) => [r.name, r]));
  const reconciled = new Set(cnpg.status?.managedRolesStatus?.byStatus?.reconciled ?? []);
  const waiting = roles.filter((r) => {
    const entry = pushed.get(r.name);
    return entry?.ensure === 'absent' || entry?.passwordSecret?.name !== r.secretName || !reconciled.has(r.name);
  });
  if (waiting.length > 0) {
    const names = waiting.map((r) => r.name).join(', ');
    return judgment(
      verdict(
        'Provisioning',
        DatabaseReason.RolesPending,
        `Waiting for PostgresCluster ${cluster.metadata.name} and CNPG to create role(s) ${names}`,
      ),
    );
  }
  const missing = rolesMissing(o, roles);
  if (missing.length > 0) {
    return judgment(
      verdict(
        'Provisioning',
        DatabaseReason.RolesMissing,
        `CNPG reports role(s) ${missing.join(', ')} reconciled, but PostgreSQL has none of that name: waiting for CNPG to create them again`,
      ),
    );
  }
  return judgment(ready(DatabaseReason.RolesReconciled, `${roles.length} role(s) reconciled by CNPG`));
}

function judgeDatabase(o: DatabaseObservation, claims: Claims): DatabaseJudgment {
  const desired = desiredCnpgDatabase(o.database);
  const name = desired.metadata.name;
  const seen = o.cnpgDatabase;
  // A CNPG Database can drop the database it names: none is made for a name another resource holds.
  if (!holdsDatabaseName(claims, o.database)) {
    const refusal = claims.refused.get(o.database.metadata.name)?.find((r) => r.kind === 'database');
    const why = refusal ? describeRefusal(refusal) : `database ${desired.spec.name} is not held`;
    return judgment(verdict('Failed', DatabaseReason.DatabaseClaimed, why));
  }
  const apply = (event: KubeEvent): DatabaseEffect => ({ type: 'applyDatabase', object: desired, event });
  if (!seen) {
    return judgment(
      verdict('Provisioning', DatabaseReason.DatabasePending, `CNPG Database ${name} does not exist yet`),
      apply(
        databaseEvent(
          'CNPGDatabaseCreated',
          'CreateDatabase',
          `CNPG Database ${name} created for database ${desired.spec.name}`,
        ),
      ),
    );
  }
  if (ownershipByDatabase(seen.metadata.ownerReferences, o.database) !== 'ours') {
    const by = describeOwner(seen.metadata.ownerReferences);
    return judgment(
      verdict('Failed', DatabaseReason.DatabaseOwnedByOther, `CNPG Database ${name} is controlled by ${by}`),
    );
  }
  const drift = cnpgDatabaseDrift(seen, desired);
  if (drift.length > 0) {
    return judgment(
      verdict('Provisioning', DatabaseReason.DatabasePending, `CNPG Database ${name}: ${drift.join(', ')} differ`),
      apply(
        databaseEvent('CNPGDatabaseUpdated', 'UpdateDatabase', `CNPG Database ${name} updated: ${drift.join(', ')}`),
      ),
    );
  }
  if (cnpgRefused(seen)) {
    return judgment(
      verdict(
        'Failed',
        DatabaseReason.DatabaseNotApplied,
        `CNPG cannot apply Database ${name}: ${seen.status?.message}`,
      ),
    );
  }
  if (!cnpgApplied(seen)) {
    return judgment(
      verdict('Provisioning', DatabaseReason.DatabasePending, `Waiting for CNPG to apply Database ${name}`),
    );
  }
  if (databaseMissing(o)) {
    return judgment(
      verdict(
        'Failed',
        DatabaseReason.DatabaseMissing,
        `PostgreSQL has no database ${desired.spec.name}, though CNPG Database ${name} reports it applied: dropped by hand, by another object or by a restore`,
      ),
    );
  }
  return judgment(
    ready(DatabaseReason.DatabaseApplied, `Database ${desired.spec.name} exists, owned by ${desired.spec.owner}`),
  );
}

export function privilegePlanOf(database: PostgresDatabase, roles: DatabaseRole[]): PrivilegePlan {
  return {
    database: database.spec.name,
    owner: database.spec.owner,
    schemas: ['public', ...(database.spec.schemas ?? []).map((s) => s.name)],
    users: roles.flatMap((r) => (r.access === 'owner' ? [] : [{ name: r.name, access: r.access }])),
  };
}

function judgePrivileges(o: DatabaseObservation, roles: DatabaseRole[]): DatabaseJudgment {
  const plan = privilegePlanOf(o.database, roles);
  const digest = planDigest(plan);
  const seen = o.cnpgDatabase;
  const users = plan.users.map((u) => `${u.name} (${u.access})`).join(', ') || 'no users besides the owner';
  const recorded = seen?.metadata.annotations?.[PRIVILEGES_ANNOTATION] === digest;
  const missing = recorded ? privilegesMissing(o) : [];
  if (recorded && missing.length === 0) {
    return judgment(
      ready(DatabaseReason.PrivilegesApplied, `Privileges of ${plan.users.length} user(s) granted (${digest})`),
    );
  }
  const why = missing.length
    ? verdict(
        'Provisioning',
        DatabaseReason.PrivilegesMissing,
        `PostgreSQL no longer has the privileges of ${missing.join(', ')}: granting them again`,
      )
    : verdict('Provisioning', DatabaseReason.PrivilegesPending, `Granting privileges over SQL: ${users}`);
  return judgment(why, {
    type: 'grantPrivileges',
    cluster: o.database.spec.cluster,
    plan,
    digest,
    database: cnpgDatabaseRef(o.database),
    event: databaseEvent(
      'PrivilegesGranted',
      'GrantPrivileges',
      `Privileges granted in database ${plan.database}: ${users}`,
    ),
  });
}

const NOT_ASSESSED = verdict<DatabaseReason>('Pending', DatabaseReason.NotAssessed, 'Not assessed');

const MEMO = new WeakMap<DatabaseTick, DatabaseAssessment>();

/** The tick's assessment, computed once per tick (the guards and the actions of one transition share it). */
export function assessDatabase(event: DatabaseTick): DatabaseAssessment {
  const known = MEMO.get(event);
  if (known) return known;
  const assessment = assess(event.observation);
  MEMO.set(event, assessment);
  return assessment;
}

function assess(o: DatabaseObservation): DatabaseAssessment {
  const health = Object.fromEntries(DATABASE_COMPONENTS.map((c) => [c, NOT_ASSESSED])) as DatabaseAssessment['health'];
  const plans = Object.fromEntries(DATABASE_COMPONENTS.map((c) => [c, []])) as unknown as DatabaseAssessment['plans'];
  const problem = specProblem(o.database);
  if (problem) {
    health.cluster = verdict('Failed', DatabaseReason.InvalidSpec, problem);
    return { specProblem: problem, health, plans, roles: [] };
  }
  const roles = rolesOf(o.database);
  const { endpoints, refused } = followedEndpoints(o.endpoints, o.cluster);
  const claims = claimsOfDatabase(o);
  const judged: Partial<Record<DatabaseComponent, DatabaseJudgment>> = { cluster: judgeCluster(o, endpoints, refused) };
  judged.claims = judgeClaims(o, claims);
  if (endpoints) judged.secrets = judgeSecrets(o, roles, endpoints);
  judged.roles = judgeRoles(o, roles);
  judged.database = judgeDatabase(o, claims);
  judged.privileges = judgePrivileges(o, roles);
  for (const c of DATABASE_COMPONENTS) {
    const j = judged[c];
    if (!j) continue;
    health[c] = j.verdict;
    plans[c] = j.effects;
  }
  const held = claims.held.get(o.database.metadata.name);
  const refusals = claims.refused.get(o.database.metadata.name);
  return {
    health,
    plans,
    roles,
    ...(endpoints ? { endpoints } : {}),
    ...(held ? { held } : {}),
    ...(refusals ? { refusals } : {}),
  };
}

export const isDatabaseComponentReady = (a: DatabaseAssessment, c: DatabaseComponent) => a.health[c].state === 'Ready';
export const isDatabaseComponentFailed = (a: DatabaseAssessment, c: DatabaseComponent) =>
  a.health[c].state === 'Failed';
