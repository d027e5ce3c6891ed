/**
 * One holder for every name a PostgresDatabase uses (issue 37): database and role names on a cluster, Secret
 * names in a namespace. What the cluster pushes, what a database creates and what its deletion drops follow
 * the holder, never the asker; a role's password comes only from a Secret its holder controls.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresCluster, PostgresDatabase } from '../../src/operator/api/schema.ts';
import { desiredRoles } from '../../src/operator/domain/components/managed-roles.ts';
import type { MergedConfig } from '../../src/operator/domain/config.ts';
import { assessDatabase } from '../../src/operator/domain/database/assessment.ts';
import { claimsOn } from '../../src/operator/domain/database/claims.ts';
import { planCnpgDatabaseDeletion, planDatabaseFinalizerRemoval } from '../../src/operator/domain/database/deletion.ts';
import type { DatabaseTick } from '../../src/operator/domain/database/observation.ts';
import { ownerReferenceToDatabase } from '../../src/operator/domain/database/vocabulary.ts';
import type { SecretView } from '../../src/operator/domain/objects.ts';
import type { Observation } from '../../src/operator/domain/observation.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { databaseObservation, healthyDatabaseFacts } from '../../src/tools/fixtures/database-samples.ts';

const NS = 'team-a';
const cluster: PostgresCluster = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresCluster',
  metadata: { name: 'shared', namespace: NS, uid: 'uid-shared', generation: 1 },
  spec: { class: 'standard', managedRoles: [{ name: 'platform', passwordSecretRef: { name: 'platform-pw' } }] },
};

let clock = 0;
function database(
  name: string,
  spec: Partial<PostgresDatabase['spec']>,
  extra: { created?: string; claims?: object; deleting?: boolean } = {},
): PostgresDatabase {
  clock += 1;
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresDatabase',
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      generation: 1,
      creationTimestamp: extra.created ?? `2026-12-01T10:00:${String(clock).padStart(2, '0')}Z`,
      ...(extra.deleting ? { deletionTimestamp: '2026-12-02T00:00:00Z', finalizers: ['pgfsm.io/finalizer'] } : {}),
    },
    spec: { cluster: 'shared', name: name.replaceAll('-', '_'), owner: `${name.replaceAll('-', '_')}_owner`, ...spec },
    ...(extra.claims ? { status: { claims: extra.claims } as PostgresDatabase['status'] } : {}),
  } as PostgresDatabase;
}

describe('who holds a name', () => {
  it('a database name: the older PostgresDatabase; the newer is refused and holds none of it', () => {
    const first = database('first', { name: 'shop', owner: 'shop_owner' });
    const second = database('second', { name: 'shop', owner: 'rival_owner', deletionPolicy: 'Delete' });
    const claims = claimsOn(cluster, [second, first]);
    expect(claims.held.get('first')).toMatchObject({ database: 'shop', roles: ['shop_owner'] });
    expect(claims.held.get('second')?.database).toBeUndefined();
    expect(claims.refused.get('second')).toEqual([
      { kind: 'database', name: 'shop', heldBy: 'PostgresDatabase first' },
    ]);
  });

  it('Secret names collide across objects (`shopx` + app_ro, `shopx-app` + ro) and across clusters', () => {
    const shopx = database('shopx', { users: [{ name: 'app_ro', access: 'readOnly' }] });
    const other = database('shopx-app', { cluster: 'elsewhere', users: [{ name: 'ro', access: 'readOnly' }] });
    const claims = claimsOn(cluster, [shopx, other]);
    expect(claims.refused.get('shopx-app')).toEqual([
      { kind: 'secret', name: 'shopx-app-ro', heldBy: 'PostgresDatabase shopx' },
    ]);
    expect(claims.held.get('shopx')?.secrets).toContain('shopx-app-ro');
  });

  it("the cluster's own roles, their password Secrets and its superuser Secret are the cluster's", () => {
    const d = database('shared', { owner: 'platform', users: [{ name: 'superuser', access: 'readWrite' }] });
    const refused = claimsOn(cluster, [d]).refused.get('shared') ?? [];
    expect(refused.map((r) => `${r.kind} ${r.name}: ${r.heldBy}`)).toEqual([
      "role platform: PostgresCluster shared's spec.managedRoles",
      'secret shared-superuser: PostgresCluster shared (its superuser Secret)',
    ]);
  });

  it('a name held and recorded stays held when an older database later asks for it', () => {
    const older = database('older', {}, { created: '2026-11-01T00:00:00Z' });
    const newer = database(
      'newer',
      { users: [{ name: 'report', access: 'readOnly' }] },
      {
        claims: { database: 'newer', roles: ['newer_owner', 'report'], secrets: ['newer-newer-owner', 'newer-report'] },
      },
    );
    // The older one's spec is edited to add the user the newer holds: it must not take it, password and all.
    const edited = { ...older, spec: { ...older.spec, users: [{ name: 'report', access: 'readWrite' as const }] } };
    const claims = claimsOn(cluster, [edited, newer]);
    expect(claims.roles.get('report')?.database).toBe('newer');
    expect(claims.refused.get('older')).toEqual([{ kind: 'role', name: 'report', heldBy: 'PostgresDatabase newer' }]);
    // …and the older keeps what it held: refused as a whole, its own roles are still pushed for it.
    expect(claims.roles.get('older_owner')?.database).toBe('older');
  });

  it('the same answer whatever the order of the list', () => {
    const a = database('a', { name: 'x' });
    const b = database('b', { name: 'x' });
    const c = database('c', { owner: 'a_owner' });
    const one = claimsOn(cluster, [a, b, c]);
    const other = claimsOn(cluster, [c, b, a]);
    expect([...other.refused.entries()].sort()).toEqual([...one.refused.entries()].sort());
    expect([...other.held.entries()].sort()).toEqual([...one.held.entries()].sort());
  });
});

/** The cluster's observation with PostgresDatabases and their role Secrets (as `owner` says). */
function clusterObservation(databases: PostgresDatabase[], secrets: Record<string, SecretView>): Observation {
  return {
    cluster,
    poolers: {},
    roleSecrets: secrets,
    databases,
    cnpg: {
      apiVersion: 'postgresql.cnpg.io/v1',
      kind: 'Cluster',
      metadata: { name: 'shared', namespace: NS },
      spec: { instances: 1 },
    },
  };
}

const secret = (name: string, owners: SecretView['metadata']['ownerReferences'] = []): SecretView => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: NS, ownerReferences: owners },
  keys: ['password', 'username'],
});

describe("the cluster pushes a database's role only with a password Secret its holder controls", () => {
  // desiredRoles reads the merged config's roles only: the cluster's own, as its spec says.
  const config = { config: { managedRoles: cluster.spec.managedRoles } as unknown as MergedConfig };

  it('its own Secret: pushed with it', () => {
    const d = database('app', {});
    const o = clusterObservation([d], { 'app-app-owner': secret('app-app-owner', [ownerReferenceToDatabase(d)]) });
    expect(desiredRoles(o, config.config).roles).toContainEqual({
      name: 'app_owner',
      ensure: 'present',
      login: true,
      passwordSecret: { name: 'app-app-owner' },
    });
  });

  it('a planted Secret (no owner, or labelled only), or one another object controls: not pushed', () => {
    const d = database('app', {});
    const other = database('other', {});
    for (const planted of [secret('app-app-owner'), secret('app-app-owner', [ownerReferenceToDatabase(other)])]) {
      const o = clusterObservation([d], { 'app-app-owner': planted });
      expect(desiredRoles(o, config.config).roles.map((r) => r.name)).not.toContain('app_owner');
    }
  });

  it('a role already pushed whose Secret is replaced by a planted one keeps its password: no passwordSecret', () => {
    const d = database('app', {});
    const o = clusterObservation([d], { 'app-app-owner': secret('app-app-owner') });
    const cnpg = o.cnpg;
    if (!cnpg) throw new Error('the observation has a CNPG Cluster');
    cnpg.spec.managed = {
      roles: [{ name: 'app_owner', ensure: 'present', login: true, passwordSecret: { name: 'app-app-owner' } }],
    };
    expect(desiredRoles(o, config.config).roles).toContainEqual({ name: 'app_owner', ensure: 'present', login: true });
  });

  it('the second of a Secret-name collision gets nothing pushed, not even with the first one’s Secret', () => {
    const shopx = database('shopx', { users: [{ name: 'app_ro', access: 'readOnly' }] });
    const second = database('shopx-app', { users: [{ name: 'ro', access: 'readOnly' }] });
    const o = clusterObservation([shopx, second], {
      'shopx-app-ro': secret('shopx-app-ro', [ownerReferenceToDatabase(shopx)]),
    });
    const pushed = desiredRoles(o, config.config).roles;
    expect(pushed.map((r) => r.name)).not.toContain('ro');
    expect(pushed.filter((r) => r.passwordSecret?.name === 'shopx-app-ro').map((r) => r.name)).toEqual(['app_ro']);
  });
});

const tick = (facts: Partial<typeof healthyDatabaseFacts>, edit?: (t: DatabaseTick) => void): DatabaseTick => {
  const t: DatabaseTick = {
    type: 'tick',
    now: Date.parse('2026-12-01T12:00:00Z'),
    observation: databaseObservation({ ...healthyDatabaseFacts, ...facts }),
    settings: defaultSettings,
  };
  edit?.(t);
  return t;
};

describe('a database that does not hold its name creates nothing and drops nothing', () => {
  it('no CNPG Database is planned for a name another holds', () => {
    const x = assessDatabase(tick({ claims: 'database', cnpgDatabase: 'missing', privileges: false }));
    expect(x.health.claims).toMatchObject({ state: 'Failed', reason: 'DatabaseClaimed' });
    expect(x.health.database).toMatchObject({ state: 'Failed', reason: 'DatabaseClaimed' });
    expect(x.plans.database).toEqual([]);
  });

  it('deleting it under Delete sets its CNPG Database to retain first, and deletes it only once it is', () => {
    const t = tick({ claims: 'database', deletion: true, policy: 'Delete' });
    const seen = t.observation.cnpgDatabase;
    if (!seen) throw new Error('the sample has a CNPG Database');
    expect(seen.spec.databaseReclaimPolicy).toBe('delete');
    const first = planCnpgDatabaseDeletion(t.observation);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ type: 'applyDatabase', object: { spec: { databaseReclaimPolicy: 'retain' } } });
    seen.spec = { ...seen.spec, databaseReclaimPolicy: 'retain' };
    expect(planCnpgDatabaseDeletion(t.observation)).toMatchObject([{ type: 'delete' }]);
  });

  it('a CNPG Database that CNPG refused ("already managed by …") is set to retain too, even when held', () => {
    const t = tick({ cnpgDatabase: 'refused', deletion: true, policy: 'Delete' });
    expect(planCnpgDatabaseDeletion(t.observation)).toMatchObject([
      { type: 'applyDatabase', object: { spec: { databaseReclaimPolicy: 'retain' } } },
    ]);
  });

  it('its cleanup never says it dropped a database it did not hold', () => {
    const [refused] = planDatabaseFinalizerRemoval(
      tick({ claims: 'database', deletion: true, policy: 'Delete' }).observation,
    );
    expect(refused?.event?.message).toBe(
      "Cleanup complete: database app was never this PostgresDatabase's and is left as it is",
    );
    const [own] = planDatabaseFinalizerRemoval(tick({ deletion: true, policy: 'Delete' }).observation);
    expect(own?.event?.message).toBe('Cleanup complete: database app dropped');
  });

  it('its own, applied, under Delete: deleted at once (CNPG drops it)', () => {
    const t = tick({ deletion: true, policy: 'Delete' });
    expect(planCnpgDatabaseDeletion(t.observation)).toMatchObject([{ type: 'delete' }]);
  });
});

describe('Ready means PostgreSQL has it', () => {
  it('a database dropped by hand: Failed with DatabaseMissing, though CNPG says applied', () => {
    const x = assessDatabase(tick({ lost: 'database' }));
    expect(x.health.database).toMatchObject({ state: 'Failed', reason: 'DatabaseMissing' });
  });

  it('a role dropped: RolesMissing, waiting for CNPG to make it again', () => {
    const x = assessDatabase(tick({ lost: 'role' }));
    expect(x.health.roles).toMatchObject({ state: 'Provisioning', reason: 'RolesMissing' });
    expect(x.health.roles.message).toContain('reader');
  });

  it('grants revoked: granted again', () => {
    const x = assessDatabase(tick({ lost: 'privileges' }));
    expect(x.health.privileges).toMatchObject({ state: 'Provisioning', reason: 'PrivilegesMissing' });
    expect(x.plans.privileges).toMatchObject([{ type: 'grantPrivileges' }]);
  });

  it('PostgreSQL not asked (unreachable): judged by what CNPG reports', () => {
    const x = assessDatabase(
      tick({}, (t) => {
        delete t.observation.inPostgres;
      }),
    );
    expect(x.health.database.state).toBe('Ready');
  });
});

describe('the Secrets follow only endpoints the cluster published', () => {
  it('a planted endpoints ConfigMap (no owner) is not followed: no Secret is written toward it', () => {
    const x = assessDatabase(
      tick({ secrets: 'missing' }, (t) => {
        const cm = t.observation.endpoints;
        if (cm) cm.metadata.ownerReferences = [];
      }),
    );
    expect(x.health.cluster).toMatchObject({ state: 'Pending', reason: 'ClusterNotPublished' });
    expect(x.health.cluster.message).toContain('is not controlled by PostgresCluster orders');
    expect(x.plans.secrets).toEqual([]);
  });

  it("the cluster's own ConfigMap edited to name another host: not followed", () => {
    const x = assessDatabase(
      tick({}, (t) => {
        const data = t.observation.endpoints?.data;
        if (data) data.CLUSTER_RW_ENDPOINT = 'collector.attacker.svc.cluster.local';
      }),
    );
    expect(x.health.cluster.message).toContain('names host(s) collector.attacker.svc.cluster.local');
    expect(x.health.cluster.state).toBe('Pending');
  });
});
