/**
 * The raw facts of a PostgresDatabase's observation that a reader needs to act: the PostgresCluster it names
 * and what that has published, each connection Secret (by key names and the keys that drifted, never a value),
 * who has each role and what CNPG says of it, the CNPG Database, and the privileges recorded on it. The
 * phrases below print them per component, as phrases.ts does for the cluster.
 */

import type { DatabaseAssessment } from '../domain/database/assessment.ts';
import { privilegePlanOf } from '../domain/database/assessment.ts';
import { claimsOfDatabase } from '../domain/database/claims.ts';
import { cnpgDatabaseDrift, cnpgDatabaseRef, desiredCnpgDatabase } from '../domain/database/cnpg-database.ts';
import { desiredSecret, publishedEndpoints, secretDrift } from '../domain/database/connection.ts';
import type { DatabaseObservation } from '../domain/database/observation.ts';
import { type DatabaseRole, rolesOf } from '../domain/database/roles.ts';
import { type DatabaseComponent, ownershipByDatabase, PRIVILEGES_ANNOTATION } from '../domain/database/vocabulary.ts';
import type { KubeObject } from '../domain/objects.ts';
import { ADOPT_ANNOTATION, describeOwner } from '../domain/vocabulary.ts';
import { planDigest } from '../postgres/privileges.ts';
import type { ConnectionSecretFact, DatabaseObservedFacts, DatabaseRoleFact, ObjectFact, OwnerFact } from './types.ts';

function ownerOf(object: KubeObject | undefined, o: DatabaseObservation): OwnerFact {
  if (!object) return { ownership: 'none', controller: null };
  const owners = object.metadata.ownerReferences;
  const controller = describeOwner(owners);
  return {
    ownership: ownershipByDatabase(owners, o.database),
    controller: controller === 'nobody' ? null : controller,
  };
}

const objectFact = (name: string, object: KubeObject | undefined, o: DatabaseObservation): ObjectFact => ({
  name,
  exists: object !== undefined,
  ...ownerOf(object, o),
});

/** The roles it asks for: the assessment's, or (with a spec that cannot be acted on) whatever can be read. */
const rolesIn = (o: DatabaseObservation, a: DatabaseAssessment): DatabaseRole[] =>
  a.specProblem ? rolesOf(o.database) : a.roles;

function clusterFact(o: DatabaseObservation, a: DatabaseAssessment): DatabaseObservedFacts['cluster'] {
  const spec: { cluster?: unknown } = o.database.spec ?? {};
  // What the cluster published, whether or not this database's spec can be acted on.
  const endpoints = a.endpoints ?? publishedEndpoints(o.endpoints);
  return {
    name: typeof spec.cluster === 'string' ? spec.cluster : null,
    exists: o.cluster !== undefined,
    phase: o.cluster?.status?.phase ?? null,
    deleting: Boolean(o.cluster?.metadata.deletionTimestamp),
    published: endpoints !== undefined,
    rw: endpoints?.rw ?? null,
    ro: endpoints?.ro ?? null,
    port: endpoints?.port ?? null,
    pooled: endpoints?.pooled ?? null,
  };
}

function secretFacts(o: DatabaseObservation, a: DatabaseAssessment): ConnectionSecretFact[] {
  return rolesIn(o, a).map((role) => {
    const seen = o.secrets[role.name];
    const template = a.endpoints && !a.specProblem ? desiredSecret(o.database, role, a.endpoints) : undefined;
    return {
      role: role.name,
      ...objectFact(role.secretName, seen, o),
      handedOver: seen?.metadata.annotations?.[ADOPT_ANNOTATION] === 'true',
      driftedKeys: seen && template ? secretDrift(seen, template) : [],
      keys: [...(seen?.keys ?? [])].sort(),
    };
  });
}

function roleFacts(o: DatabaseObservation, a: DatabaseAssessment): DatabaseRoleFact[] {
  const { cnpg } = o;
  const refused = new Map((a.refusals ?? []).filter((r) => r.kind === 'role').map((r) => [r.name, r.heldBy] as const));
  const pushed = new Map((cnpg?.spec.managed?.roles ?? []).map((r) => [r.name, r]));
  const cannot = cnpg?.status?.managedRolesStatus?.cannotReconcile ?? {};
  const reconciled = new Set(cnpg?.status?.managedRolesStatus?.byStatus?.reconciled ?? []);
  return rolesIn(o, a).map((role): DatabaseRoleFact => {
    const heldBy = refused.get(role.name) ?? null;
    const entry = pushed.get(role.name);
    const error = cannot[role.name] ? (cannot[role.name] ?? []).join('; ') || 'cannot be reconciled' : null;
    const state: DatabaseRoleFact['state'] =
      heldBy !== null
        ? 'claimed'
        : error !== null
          ? 'failed'
          : entry?.ensure === 'absent'
            ? 'absent'
            : entry?.passwordSecret?.name !== role.secretName
              ? 'notPushed'
              : reconciled.has(role.name)
                ? 'reconciled'
                : 'pending';
    return { name: role.name, access: role.access, secret: role.secretName, state, heldBy, error };
  });
}

function claimFacts(o: DatabaseObservation, a: DatabaseAssessment): DatabaseObservedFacts['claims'] {
  // With a spec that cannot be acted on, whatever can be read, judged as the passes would.
  const claims = a.specProblem ? claimsOfDatabase(o) : undefined;
  const name = o.database.metadata.name;
  const held = a.held ?? claims?.held.get(name);
  return {
    database: held?.database ?? null,
    roles: held?.roles ?? [],
    secrets: held?.secrets ?? [],
    refused: (a.refusals ?? claims?.refused.get(name) ?? []).map((r) => ({ ...r })),
  };
}

function cnpgDatabaseFact(o: DatabaseObservation, a: DatabaseAssessment): DatabaseObservedFacts['cnpgDatabase'] {
  const seen = o.cnpgDatabase;
  const status = seen?.status;
  const current = seen !== undefined && status?.observedGeneration === seen.metadata.generation;
  return {
    ...objectFact(cnpgDatabaseRef(o.database).name, seen, o),
    applied: current && typeof status?.applied === 'boolean' ? status.applied : null,
    message: status?.message ?? null,
    driftedFields: seen && !a.specProblem ? cnpgDatabaseDrift(seen, desiredCnpgDatabase(o.database)) : [],
  };
}

function privilegeFacts(o: DatabaseObservation, a: DatabaseAssessment): DatabaseObservedFacts['privileges'] {
  const recorded = o.cnpgDatabase?.metadata.annotations?.[PRIVILEGES_ANNOTATION] ?? null;
  if (a.specProblem) return { granted: false, digest: null, recorded, users: [] };
  const plan = privilegePlanOf(o.database, a.roles);
  const digest = planDigest(plan);
  return { granted: recorded === digest, digest, recorded, users: plan.users.map((u) => `${u.name} (${u.access})`) };
}

/** The children that still name this PostgresDatabase (by uid) among their owners. */
function stillOwned(o: DatabaseObservation): string[] {
  const uid = o.database.metadata.uid;
  const children: Array<KubeObject | undefined> = [o.cnpgDatabase, ...Object.values(o.secrets)];
  return children
    .filter((c): c is KubeObject => c !== undefined && (c.metadata.ownerReferences ?? []).some((r) => r.uid === uid))
    .map((c) => `${c.kind} ${c.metadata.name}`);
}

export function databaseFacts(o: DatabaseObservation, a: DatabaseAssessment): DatabaseObservedFacts {
  return {
    cluster: clusterFact(o, a),
    claims: claimFacts(o, a),
    inPostgres: o.inPostgres ? structuredClone(o.inPostgres) : null,
    secrets: secretFacts(o, a),
    roles: roleFacts(o, a),
    cnpgDatabase: cnpgDatabaseFact(o, a),
    privileges: privilegeFacts(o, a),
    deletionPolicy: o.database.spec?.deletionPolicy === 'Delete' ? 'Delete' : 'Retain',
    stillOwned: stillOwned(o),
  };
}

// ---- As phrases, per component ----

/** What a reader calls each component when it is waited for. */
export const DATABASE_LEAD: Record<DatabaseComponent, string> = {
  cluster: 'the PostgresCluster',
  claims: 'its names (database, roles, Secrets)',
  secrets: 'the connection Secrets',
  roles: 'the roles',
  database: 'the CNPG Database',
  privileges: 'the privileges',
};

/** Each component's pipeline step, as the machine names it (`Provisioning.<Step>`, `Failed.<Step>`). */
export const DATABASE_STEP_OF: Record<DatabaseComponent, string> = {
  cluster: 'Cluster',
  claims: 'Claims',
  secrets: 'Secrets',
  roles: 'Roles',
  database: 'Database',
  privileges: 'Privileges',
};

function clusterPhrases({ cluster }: DatabaseObservedFacts): string[] {
  const name = `PostgresCluster ${cluster.name ?? '(none)'}`;
  if (!cluster.exists) return [`${name} missing`];
  if (cluster.deleting) return [`${name} being deleted`];
  if (!cluster.published) return [`${name} (${cluster.phase ?? 'new'}) has not published its endpoints`];
  return [`${name} published ${cluster.rw}:${cluster.port}${cluster.pooled ? ' (pooler)' : ''}`];
}

function claimPhrases({ claims }: DatabaseObservedFacts): string[] {
  if (claims.refused.length > 0) return claims.refused.map((r) => `${r.kind} ${r.name} held by ${r.heldBy}`);
  const secrets = claims.secrets.length;
  return [
    `holds database ${claims.database ?? '(none)'}, role(s) ${claims.roles.join(', ')}, ${secrets} Secret name(s)`,
  ];
}

function secretPhrases({ secrets }: DatabaseObservedFacts): string[] {
  const open = secrets.flatMap((s) => {
    if (!s.exists) return [`Secret ${s.name} for role ${s.role} missing`];
    if (s.ownership === 'foreign') return [`Secret ${s.name} controlled by ${s.controller}`];
    if (s.ownership === 'orphan') {
      return [`Secret ${s.name} without an owner${s.handedOver ? ', handed over' : ', not handed over'}`];
    }
    return s.driftedKeys.length ? [`Secret ${s.name}: ${s.driftedKeys.join(', ')} differ`] : [];
  });
  return open.length ? open : [`${secrets.length} Secret(s) up to date`];
}

function rolePhrases({ roles, cluster }: DatabaseObservedFacts): string[] {
  const phrase: Record<DatabaseRoleFact['state'], (r: DatabaseRoleFact) => string | undefined> = {
    claimed: (r) => `role ${r.name} held by ${r.heldBy}`,
    failed: (r) => `role ${r.name} failed: ${r.error}`,
    notPushed: (r) => `role ${r.name} not pushed by PostgresCluster ${cluster.name ?? '(none)'} yet`,
    absent: (r) => `role ${r.name} pushed as absent`,
    pending: (r) => `role ${r.name} not reconciled by CNPG yet`,
    reconciled: () => undefined,
  };
  const open = roles.flatMap((r) => phrase[r.state](r) ?? []);
  return open.length ? open : [`${roles.length} role(s) reconciled`];
}

function databasePhrases({ cnpgDatabase: d, inPostgres }: DatabaseObservedFacts): string[] {
  if (inPostgres && !inPostgres.database) return [`PostgreSQL has no such database, though ${d.name} says applied`];
  if (!d.exists) return [`CNPG Database ${d.name} missing`];
  if (d.ownership !== 'ours') return [`CNPG Database ${d.name} controlled by ${d.controller ?? 'nobody'}`];
  if (d.driftedFields.length) return [`CNPG Database ${d.name}: ${d.driftedFields.join(', ')} differ`];
  if (d.applied === false) return [`CNPG cannot apply ${d.name}: ${d.message ?? ''}`];
  if (d.applied !== true) return [`CNPG has not applied ${d.name} yet`];
  return [`CNPG Database ${d.name} applied`];
}

function privilegePhrases({ privileges: p }: DatabaseObservedFacts): string[] {
  if (p.digest === null) return ['not assessed: the spec cannot be acted on'];
  if (p.granted) return [`granted (${p.digest})`];
  const users = p.users.join(', ') || 'no users besides the owner';
  return [p.recorded ? `recorded ${p.recorded}, wanted ${p.digest}: ${users}` : `not granted yet: ${users}`];
}

export function databaseComponentFacts(component: DatabaseComponent, facts: DatabaseObservedFacts): string[] {
  switch (component) {
    case 'cluster':
      return clusterPhrases(facts);
    case 'claims':
      return claimPhrases(facts);
    case 'secrets':
      return secretPhrases(facts);
    case 'roles':
      return rolePhrases(facts);
    case 'database':
      return databasePhrases(facts);
    case 'privileges':
      return privilegePhrases(facts);
  }
}
