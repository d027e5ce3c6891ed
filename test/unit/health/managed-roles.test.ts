/** Managed roles: pushed into `spec.managed.roles` of the CNPG Cluster, removed with `ensure: absent`. */
import { describe, expect, it } from 'vitest';
import type { ManagedRole } from '../../../src/operator/api/schema.ts';
import {
  type DesiredRoles,
  desiredRoles,
  judgeManagedRoles,
  rolesDrifted,
  rolesStatus,
} from '../../../src/operator/domain/components/managed-roles.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { CnpgCluster, CnpgRoleConfiguration } from '../../../src/operator/domain/objects.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { Reason } from '../../../src/operator/domain/vocabulary.ts';
import { configOf, eventOf, world } from './support.ts';

const present = (name: string, secret = `${name}-password`): CnpgRoleConfiguration => ({
  name,
  ensure: 'present',
  login: true,
  passwordSecret: { name: secret },
});
const absent = (name: string): CnpgRoleConfiguration => ({ name, ensure: 'absent' });

interface Scenario {
  /** `spec.managedRoles` of the PostgresCluster. */
  spec: ManagedRole[];
  /** `spec.managed.roles` of the CNPG Cluster; undefined leaves the field out. */
  pushed?: CnpgRoleConfiguration[];
  reconciled?: string[];
  pending?: string[];
  cannotReconcile?: Record<string, string[]>;
  /** Password Secrets that exist; default: every Secret the spec names. */
  secrets?: string[];
}

/** A healthy world with the roles of a scenario. */
function scenario(s: Scenario): { observation: Observation; desired: DesiredRoles } {
  const base = world();
  const cnpg = structuredClone(base.cnpg) as CnpgCluster;
  // Without pushed roles the CNPG spec has no `managed` section at all.
  if (s.pushed === undefined) delete cnpg.spec.managed;
  else cnpg.spec.managed = { roles: s.pushed };
  cnpg.status = {
    ...cnpg.status,
    managedRolesStatus: {
      byStatus: {
        reconciled: s.reconciled ?? [],
        'pending-reconciliation': s.pending ?? [],
        reserved: ['postgres', 'streaming_replica'],
      },
      cannotReconcile: s.cannotReconcile ?? {},
    },
  };
  const secretNames = s.secrets ?? s.spec.flatMap((r) => (r.passwordSecretRef ? [r.passwordSecretRef.name] : []));
  const roleSecrets = Object.fromEntries(
    secretNames.map((name) => [
      name,
      {
        apiVersion: 'v1',
        kind: 'Secret' as const,
        metadata: { name, namespace: base.cluster.metadata.namespace },
        keys: ['username', 'password'],
      },
    ]),
  );
  const observation: Observation = {
    ...base,
    cluster: { ...base.cluster, spec: { ...base.cluster.spec, managedRoles: s.spec } },
    cnpg,
    roleSecrets,
  };
  return { observation, desired: desiredRoles(observation, configOf(observation)) };
}

const role = (name: string, extra: Partial<ManagedRole> = {}): ManagedRole => ({
  name,
  passwordSecretRef: { name: `${name}-password` },
  ...extra,
});

/** The one managed-roles apply a plan holds, with its roles. */
function rolesApply(effects: Effect[]) {
  expect(effects).toHaveLength(1);
  const [effect] = effects;
  if (effect?.type !== 'apply') throw new Error(`expected an apply, got ${JSON.stringify(effect)}`);
  return { effect, roles: (effect.object as CnpgCluster).spec.managed?.roles };
}

describe('desired roles', () => {
  it('a role in the spec is pushed present, with login and its password Secret', () => {
    const { desired } = scenario({ spec: [role('app')] });
    expect(desired.roles).toEqual([present('app')]);
    expect(desired.waitingForSecret).toEqual({});
  });

  it('a role without a password Secret is pushed without one', () => {
    const { desired } = scenario({ spec: [{ name: 'reporting' }] });
    expect(desired.roles).toEqual([{ name: 'reporting', ensure: 'present', login: true }]);
  });

  it('a role marked exists: false is ensured absent, with nothing else', () => {
    const { desired } = scenario({ spec: [role('app'), role('legacy', { exists: false })], pushed: [present('app')] });
    expect(desired.roles).toEqual([present('app'), absent('legacy')]);
  });

  it('a role removed from the spec but present in the CNPG spec is ensured absent', () => {
    const { observation, desired } = scenario({
      spec: [role('app')],
      pushed: [present('app'), present('legacy')],
      reconciled: ['app', 'legacy'],
    });
    expect(desired.roles).toEqual([present('app'), absent('legacy')]);
    expect(rolesDrifted(observation, desired)).toBe(true);
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.ManagedRolesPending);
    expect(rolesApply(judgeManagedRoles(observation, desired).effects).roles).toEqual([
      present('app'),
      absent('legacy'),
    ]);
  });

  it('an emptied spec.managedRoles still removes the roles pushed earlier (ref. §10.7)', () => {
    const { observation, desired } = scenario({ spec: [], pushed: [present('app')], reconciled: ['app'] });
    expect(desired.roles).toEqual([absent('app')]);
    expect(rolesApply(judgeManagedRoles(observation, desired).effects).roles).toEqual([absent('app')]);
  });

  it('a removed role stays absent while CNPG has not reconciled the removal, and is not pending', () => {
    const { observation, desired } = scenario({
      spec: [role('app')],
      pushed: [present('app'), absent('legacy')],
      reconciled: ['app'],
      pending: ['legacy'],
    });
    expect(desired.roles).toEqual([present('app'), absent('legacy')]);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
    // Leaving is not waited for: a PostgresDatabase deleted with its roles must not cost the cluster its Ready.
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Ready');
    expect(h.message).toBe('1 managed role(s) reconciled, 1 role(s) ensured absent');
  });

  it('a removed role stays absent even once CNPG reports it reconciled (its status may be stale)', () => {
    const { observation, desired } = scenario({
      spec: [role('app')],
      pushed: [present('app'), absent('legacy')],
      reconciled: ['app', 'legacy'],
    });
    expect(desired.roles).toEqual([present('app'), absent('legacy')]);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
    // Counted apart: the removed role is not a managed role any more.
    expect(judgeManagedRoles(observation, desired).verdict.message).toBe(
      '1 managed role(s) reconciled, 1 role(s) ensured absent',
    );
  });

  it('a role marked exists: false is kept absent even when reconciled (it is still in the spec)', () => {
    const { observation, desired } = scenario({
      spec: [role('app'), role('legacy', { exists: false })],
      pushed: [present('app'), absent('legacy')],
      reconciled: ['app', 'legacy'],
    });
    expect(desired.roles).toEqual([present('app'), absent('legacy')]);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
    expect(judgeManagedRoles(observation, desired).verdict.state).toBe('Ready');
  });
});

describe('password Secrets of roles', () => {
  it('a role whose password Secret is missing is Pending, names Secret and role, and is not pushed', () => {
    const { observation, desired } = scenario({ spec: [role('app')], secrets: [] });
    expect(desired.roles).toEqual([]);
    expect(desired.waitingForSecret).toEqual({ app: 'app-password' });
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Pending');
    expect(h.reason).toBe(Reason.ManagedRolesPending);
    expect(h.message).toContain('app-password');
    expect(h.message).toMatch(/role app\b/);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('the fixture world with a missing role Secret is Pending too', () => {
    const observation = world({ rolesState: 'secretMissing' });
    const desired = desiredRoles(observation, configOf(observation));
    expect(judgeManagedRoles(observation, desired).verdict.state).toBe('Pending');
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('a role already pushed is kept when its password Secret disappears', () => {
    const { observation, desired } = scenario({
      spec: [role('app')],
      pushed: [present('app')],
      reconciled: ['app'],
      secrets: [],
    });
    expect(desired.roles).toEqual([present('app')]);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Pending');
    expect(h.message).toContain('app-password');
  });

  it('a role already pushed keeps its old Secret while the new one named in the spec is missing', () => {
    const { desired } = scenario({
      spec: [role('app', { passwordSecretRef: { name: 'app-password-v2' } })],
      pushed: [present('app')],
      reconciled: ['app'],
      secrets: ['app-password'],
    });
    expect(desired.roles).toEqual([present('app')]);
    expect(desired.waitingForSecret).toEqual({ app: 'app-password-v2' });
  });

  it('other roles are pushed while one waits for its Secret', () => {
    const { observation, desired } = scenario({ spec: [role('app'), role('batch')], secrets: ['batch-password'] });
    expect(rolesApply(judgeManagedRoles(observation, desired).effects).roles).toEqual([present('batch')]);
  });
});

describe('managed roles health', () => {
  it('all reconciled is Ready / ManagedRolesReconciled', () => {
    const observation = world();
    const desired = desiredRoles(observation, configOf(observation));
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.ManagedRolesReconciled);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('pending reconciliation is not Ready', () => {
    const observation = world({ rolesState: 'pending' });
    const desired = desiredRoles(observation, configOf(observation));
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.ManagedRolesPending);
    expect(h.message).toContain('app');
  });

  it('a role CNPG reports nowhere is pending, not reconciled', () => {
    const { observation, desired } = scenario({ spec: [role('app')], pushed: [present('app')] });
    expect(judgeManagedRoles(observation, desired).verdict.state).not.toBe('Ready');
    expect(rolesStatus(observation, desired)).toEqual({ reconciled: [], pending: ['app'], failed: {} });
  });

  it('cannotReconcile is Failed / ManagedRolesReconciliationFailed naming the role and the error', () => {
    const observation = world({ rolesState: 'failed' });
    const desired = desiredRoles(observation, configOf(observation));
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.ManagedRolesReconciliationFailed);
    expect(h.message).toContain('app');
    expect(h.message).toContain('role is in use');
  });

  it('cannotReconcile with several errors joins them; with none it still fails', () => {
    const { observation, desired } = scenario({
      spec: [role('app'), role('batch')],
      pushed: [present('app'), present('batch')],
      cannotReconcile: { app: ['owns database app', 'has grants'], batch: [] },
    });
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Failed');
    expect(h.message).toContain('owns database app; has grants');
    expect(h.message).toContain('batch: role cannot be reconciled');
    expect(rolesStatus(observation, desired).failed).toEqual({
      app: 'owns database app; has grants',
      batch: 'role cannot be reconciled',
    });
  });

  it('no roles at all is Ready', () => {
    const observation = world({ roles: [] });
    const desired = desiredRoles(observation, configOf(observation));
    expect(desired.roles).toEqual([]);
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.ManagedRolesReconciled);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('no roles and no managed section in CNPG is Ready and plans nothing', () => {
    const { observation, desired } = scenario({ spec: [] });
    expect(observation.cnpg?.spec.managed).toBeUndefined();
    expect(judgeManagedRoles(observation, desired).verdict.state).toBe('Ready');
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('without a CNPG cluster the step waits and plans nothing', () => {
    const observation = world({ cnpg: 'missing' });
    const desired = desiredRoles(observation, configOf(observation));
    const h = judgeManagedRoles(observation, desired).verdict;
    expect(h.state).toBe('Pending');
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
  });

  it('the status projection lists reconciled, pending and failed roles, sorted', () => {
    const { observation, desired } = scenario({
      spec: [role('zeta'), role('app'), role('batch'), role('mid')],
      pushed: [present('app'), present('batch'), present('mid'), present('zeta')],
      reconciled: ['zeta', 'app'],
      pending: ['mid'],
      cannotReconcile: { batch: ['boom'] },
    });
    expect(rolesStatus(observation, desired)).toEqual({
      reconciled: ['app', 'zeta'],
      pending: ['mid'],
      failed: { batch: 'boom' },
    });
  });
});

describe('managed roles drift and planning', () => {
  it('a role not pushed yet is planned as exactly one apply of spec.managed.roles, and nothing else', () => {
    const observation = world({ rolesState: 'notPushed' });
    const desired = desiredRoles(observation, configOf(observation));
    const { effect, roles } = rolesApply(judgeManagedRoles(observation, desired).effects);
    expect(effect.component).toBe('managedRoles');
    const object = effect.object as CnpgCluster;
    expect(object.apiVersion).toBe('postgresql.cnpg.io/v1');
    expect(object.kind).toBe('Cluster');
    expect(object.metadata.name).toBe(observation.cnpg?.metadata.name);
    expect(object.metadata.namespace).toBe(observation.cnpg?.metadata.namespace);
    expect(Object.keys(object.spec)).toEqual(['managed']);
    expect(Object.keys(object.spec.managed ?? {})).toEqual(['roles']);
    expect(roles).toEqual([present('app')]);
    // Owner references, labels and annotations belong to the cluster step's field manager.
    expect(object.metadata.ownerReferences).toBeUndefined();
    expect(object.metadata.annotations).toBeUndefined();
    const event = eventOf(effect);
    expect(event.reason).toBe('ManagedRolesApplied');
    expect(event.message).toContain('app(present)');
  });

  it('a changed role (login turned off in CNPG) is drift', () => {
    const { observation, desired } = scenario({
      spec: [role('app')],
      pushed: [{ ...present('app'), login: false }],
      reconciled: ['app'],
    });
    expect(rolesDrifted(observation, desired)).toBe(true);
    expect(rolesApply(judgeManagedRoles(observation, desired).effects).roles).toEqual([present('app')]);
  });

  it('fields CNPG defaults on a role and the order of the list are not drift', () => {
    const defaulted = { ...present('batch'), inherit: true, connectionLimit: -1 } as CnpgRoleConfiguration;
    const { observation, desired } = scenario({
      spec: [role('app'), role('batch')],
      pushed: [defaulted, present('app')],
      reconciled: ['app', 'batch'],
    });
    expect(rolesDrifted(observation, desired)).toBe(false);
    expect(judgeManagedRoles(observation, desired).effects).toEqual([]);
    expect(judgeManagedRoles(observation, desired).verdict.state).toBe('Ready');
  });
});
