/**
 * Managed roles: pushed into the CNPG Cluster's `spec.managed.roles` as their own step, with their own
 * field manager so that repairing the cluster spec never drops them. Roles marked absent or removed from
 * the list are set to `ensure: absent` until CNPG confirms they are gone.
 */
import type { MergedConfig } from '../config.ts';
import { claimsOn, type RoleClaim } from '../database/claims.ts';
import type { Effect } from '../effects.ts';
import { normal } from '../effects.ts';
import { CNPG_API_VERSION, type CnpgCluster, type CnpgRoleConfiguration } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { type Judgment, judgment, type Verdict, verdict } from '../verdict.ts';
import { EventReason, Reason } from '../vocabulary.ts';

export interface DesiredRoles {
  roles: CnpgRoleConfiguration[];
  /** Roles of the spec held back because their password Secret does not exist yet: role -> Secret name. */
  waitingForSecret: Record<string, string>;
  /**
   * The names among `roles` that PostgresDatabases asked for (domain/database/roles.ts), released ones
   * included. They are pushed in the same list — this pass is the list's only writer — but judged by each
   * PostgresDatabase, not by the cluster: a database being added must not take the cluster out of Ready.
   */
  databaseRoles: ReadonlySet<string>;
}

const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);

const normalize = (role: CnpgRoleConfiguration): CnpgRoleConfiguration =>
  role.ensure === 'absent'
    ? { name: role.name, ensure: 'absent' }
    : {
        name: role.name,
        ensure: 'present',
        login: role.login ?? false,
        ...(role.passwordSecret ? { passwordSecret: { name: role.passwordSecret.name } } : {}),
      };

const reconciledInCnpg = (cnpg: CnpgCluster | undefined) =>
  new Set(cnpg?.status?.managedRolesStatus?.byStatus?.reconciled ?? []);

export function desiredRoles(observation: Observation, config: MergedConfig): DesiredRoles {
  const current = new Map((observation.cnpg?.spec?.managed?.roles ?? []).map((r) => [r.name, r]));
  const waitingForSecret: Record<string, string> = {};
  const roles: CnpgRoleConfiguration[] = [];
  // Who holds each role a PostgresDatabase asks for: judged once, for the removals below and the pushes after.
  const claimed = claimsOn(observation.cluster, observation.databases ?? []).roles;
  const wanted = new Set([...config.managedRoles.map((r) => r.name), ...claimed.keys()]);
  for (const role of config.managedRoles) {
    if (role.exists === false) {
      roles.push({ name: role.name, ensure: 'absent' });
      continue;
    }
    const secretName = role.passwordSecretRef?.name;
    const pushed = current.get(role.name);
    if (secretName && !observation.roleSecrets[secretName]) {
      waitingForSecret[role.name] = secretName;
      // Keep what CNPG already has (a role whose Secret vanished is not dropped); hold back new ones.
      if (pushed) roles.push(normalize(pushed));
      continue;
    }
    roles.push({
      name: role.name,
      ensure: 'present',
      login: true,
      ...(secretName ? { passwordSecret: { name: secretName } } : {}),
    });
  }
  for (const name of current.keys()) {
    // Removed from the list: PostgreSQL must drop it. The entry stays as `absent` for good: CNPG's
    // status carries no generation, so "reconciled" could be stale, and forgetting the role then would
    // leave it in the database as not-managed. An absent entry for a gone role costs nothing.
    if (!wanted.has(name)) roles.push({ name, ensure: 'absent' });
  }
  const databaseRoles = new Set<string>();
  for (const claim of claimed.values()) {
    databaseRoles.add(claim.name);
    const role = databaseRole(claim, current.get(claim.name), observation);
    if (role) roles.push(role);
  }
  return { roles: roles.sort(byName), waitingForSecret, databaseRoles };
}

/**
 * A PostgresDatabase's role as it is pushed: absent while its database is deleted with it, out of the list once
 * released (Retain), and present once its connection Secret exists and is controlled by the database that holds
 * the role (CNPG reads the password there). A Secret of that name planted by someone else, or controlled by
 * another object, is never named as the password: a role not pushed yet waits, and one already pushed is kept
 * without a password Secret (CloudNativePG then leaves its password as it is).
 */
function databaseRole(
  claim: RoleClaim,
  pushed: CnpgRoleConfiguration | undefined,
  observation: Observation,
): CnpgRoleConfiguration | undefined {
  if (claim.ensure === 'released') return undefined;
  if (claim.ensure === 'absent') return { name: claim.name, ensure: 'absent' };
  if (!passwordSecretOfClaimant(claim, observation)) {
    if (!pushed) return undefined;
    const { passwordSecret: _planted, ...kept } = normalize(pushed);
    return kept;
  }
  return { name: claim.name, ensure: 'present', login: true, passwordSecret: { name: claim.secretName } };
}

/** Whether the role's Secret exists and its controller is the PostgresDatabase that holds the role. */
function passwordSecretOfClaimant(claim: RoleClaim, observation: Observation): boolean {
  const secret = observation.roleSecrets[claim.secretName];
  const controller = secret?.metadata.ownerReferences?.find((o) => o.controller);
  return controller !== undefined && controller.kind === 'PostgresDatabase' && controller.uid === claim.uid;
}

const rolesKey = (roles: CnpgRoleConfiguration[] | undefined, keep: (name: string) => boolean = () => true) =>
  JSON.stringify(
    (roles ?? [])
      .filter((r) => keep(r.name))
      .map(normalize)
      .sort(byName),
  );

export function rolesDrifted(observation: Observation, desired: DesiredRoles): boolean {
  return rolesKey(observation.cnpg?.spec?.managed?.roles) !== rolesKey(desired.roles);
}

/** Whether the spec's own roles differ from what CNPG has (the cluster's step pushes them, out of Ready). */
function specRolesDrifted(observation: Observation, desired: DesiredRoles): boolean {
  const own = (name: string) => !desired.databaseRoles.has(name);
  return rolesKey(observation.cnpg?.spec?.managed?.roles, own) !== rolesKey(desired.roles, own);
}

/** The spec's roles only: what the cluster's own condition judges. */
export const specRoles = (desired: DesiredRoles): DesiredRoles => ({
  ...desired,
  roles: desired.roles.filter((r) => !desired.databaseRoles.has(r.name)),
});

/**
 * The push of the list when only PostgresDatabases' roles differ: no step of the cluster's own, since nothing of
 * the cluster is missing. The ManagedRoles step makes it as it passes, and Ready without leaving (the machine).
 */
export function databaseRolesPush(observation: Observation, desired: DesiredRoles): Effect[] {
  const { cnpg } = observation;
  if (!cnpg || specRolesDrifted(observation, desired) || !rolesDrifted(observation, desired)) return [];
  const names = desired.roles
    .filter((r) => desired.databaseRoles.has(r.name))
    .map((r) => `${r.name}(${r.ensure})`)
    .join(', ');
  return [rolesApply(cnpg, desired, `Roles of PostgresDatabases pushed to CNPG: ${names || 'none'}`)];
}

const rolesApply = (cnpg: CnpgCluster, desired: DesiredRoles, message: string): Effect => ({
  type: 'apply',
  component: 'managedRoles',
  object: {
    apiVersion: CNPG_API_VERSION,
    kind: 'Cluster',
    metadata: { name: cnpg.metadata.name, namespace: cnpg.metadata.namespace },
    spec: { managed: { roles: desired.roles } },
  } as CnpgCluster,
  event: normal(EventReason.ManagedRolesApplied, 'ApplyManagedRoles', message),
});

/** The roles that CNPG refused, by role, with its error messages. */
export function failedRoles(observation: Observation, desired: DesiredRoles): Record<string, string> {
  const cannot = observation.cnpg?.status?.managedRolesStatus?.cannotReconcile ?? {};
  const failed: Record<string, string> = {};
  for (const role of desired.roles) {
    const errors = cannot[role.name];
    if (errors) failed[role.name] = errors.length ? errors.join('; ') : 'role cannot be reconciled';
  }
  return failed;
}

export function rolesStatus(observation: Observation, desired: DesiredRoles) {
  const reconciled = reconciledInCnpg(observation.cnpg);
  const failed = failedRoles(observation, desired);
  const names = desired.roles.map((r) => r.name).concat(Object.keys(desired.waitingForSecret));
  const unique = [...new Set(names)].sort();
  // A role leaving (`ensure: absent`) is not pending: the cluster has all it needs without it, and a
  // PostgresDatabase deleted with its roles must not take its cluster out of Ready while CNPG drops them.
  const leaving = new Set(desired.roles.filter((r) => r.ensure === 'absent').map((r) => r.name));
  return {
    reconciled: unique.filter((n) => reconciled.has(n) && !failed[n] && !desired.waitingForSecret[n]),
    pending: unique.filter((n) => (!reconciled.has(n) || desired.waitingForSecret[n]) && !failed[n] && !leaving.has(n)),
    failed,
  };
}

/**
 * No CNPG cluster yet: wait. Drifted: push the roles. Otherwise what CNPG reports on them: refused,
 * waiting for a password Secret, not reconciled yet, or reconciled.
 */
export function judgeManagedRoles(observation: Observation, desired: DesiredRoles): Judgment {
  const { cnpg } = observation;
  if (!cnpg) return judgment(verdict('Pending', Reason.ManagedRolesPending, 'Waiting for the CNPG cluster'));
  if (specRolesDrifted(observation, desired)) {
    const names = desired.roles.map((r) => `${r.name}(${r.ensure})`).join(', ') || 'none';
    return judgment(
      verdict('Provisioning', Reason.ManagedRolesPending, 'Pushing managed roles to the CNPG cluster'),
      rolesApply(cnpg, desired, `Managed roles pushed to CNPG: ${names}`),
    );
  }
  return judgment(reportedHealth(observation, specRoles(desired)));
}

/** How CNPG reports on roles that are pushed as we want them: nothing to write. */
function reportedHealth(observation: Observation, desired: DesiredRoles): Verdict {
  const failed = Object.entries(failedRoles(observation, desired));
  if (failed.length > 0) {
    const detail = failed.map(([role, error]) => `${role}: ${error}`).join('; ');
    return verdict(
      'Failed',
      Reason.ManagedRolesReconciliationFailed,
      `CNPG cannot reconcile ${failed.length} role(s): ${detail}`,
    );
  }
  const waiting = Object.entries(desired.waitingForSecret);
  if (waiting.length > 0) {
    const detail = waiting.map(([role, secret]) => `Secret ${secret} for role ${role}`).join(', ');
    return verdict('Pending', Reason.ManagedRolesPending, `Waiting for password ${detail} to exist`);
  }
  const { pending } = rolesStatus(observation, desired);
  if (pending.length > 0) {
    return verdict('Provisioning', Reason.ManagedRolesPending, `CNPG has not reconciled role(s) ${pending.join(', ')}`);
  }
  // Roles taken out of the list (or marked exists: false) are `ensure: absent` entries: not counted as managed.
  const present = desired.roles.filter((r) => r.ensure !== 'absent').length;
  const absent = desired.roles.length - present;
  const message = [
    present ? `${present} managed role(s) reconciled` : 'No managed roles',
    ...(absent ? [`${absent} role(s) ensured absent`] : []),
  ].join(', ');
  return verdict('Ready', Reason.ManagedRolesReconciled, message);
}
