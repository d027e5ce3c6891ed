/** Behaviour contract 9, 10, 12: drift repair, managed roles, class changes. */
import { describe, expect, it } from 'vitest';
import type { CnpgCluster, Pooler } from '../../src/operator/domain/objects.ts';
import {
  clusterObject,
  conditionOf,
  editSpec,
  eventsOf,
  NS,
  passwordSecret,
  reasonsOf,
  simulationWith,
  standardClass,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { StoredObject } from '../../src/tools/memory/api-server.ts';

const withRoles = (roles: string[], extra = {}) =>
  clusterObject('orders', {
    connectionPoolerEnabled: true,
    managedRoles: roles.map((name) => ({ name, passwordSecretRef: { name: `${name}-password` } })),
    ...extra,
  });

const cnpgOf = (sim: ReturnType<typeof simulationWith>) =>
  sim.api.get<CnpgCluster>({ kind: 'Cluster', namespace: NS, name: 'orders' }) as CnpgCluster;

describe('9. drift is repaired', () => {
  it('repairs CNPG spec drift without dropping managed roles, and takes no CNPG default for drift', async () => {
    const sim = simulationWith([withRoles(['app']), passwordSecret('app-password', 'app')]);
    await untilReady(sim, 'orders');
    // CNPG added parameters of its own: still Ready, nothing rewritten.
    expect(cnpgOf(sim).spec.postgresql?.parameters?.shared_buffers).toBe('128MB');
    const writes = sim.api.writes.length;
    await sim.run(60_000);
    expect(sim.api.writes.length).toBe(writes);

    const drifted = structuredClone(cnpgOf(sim));
    drifted.spec.instances = 5;
    drifted.spec.postgresql = {
      ...drifted.spec.postgresql,
      parameters: { ...drifted.spec.postgresql?.parameters, max_connections: '7' },
    };
    sim.api.put(drifted as unknown as StoredObject);
    await untilReady(sim, 'orders');
    const repaired = cnpgOf(sim);
    expect(repaired.spec.instances).toBe(1);
    expect(repaired.spec.postgresql?.parameters).toMatchObject({ max_connections: '200', shared_buffers: '128MB' });
    expect(repaired.spec.managed?.roles?.map((r) => r.name)).toEqual(['app']);
    expect(reasonsOf(sim, 'orders')).toContain('CNPGClusterUpdated');
  });

  it('removes a parameter the user no longer sets, but keeps CNPG defaults', async () => {
    const sim = simulationWith([clusterObject('orders', { postgresqlConfig: { work_mem: '16MB' } })]);
    await untilReady(sim, 'orders');
    expect(cnpgOf(sim).spec.postgresql?.parameters?.work_mem).toBe('16MB');
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: {} }));
    await untilReady(sim, 'orders');
    expect(cnpgOf(sim).spec.postgresql?.parameters?.work_mem).toBeUndefined();
    expect(cnpgOf(sim).spec.postgresql?.parameters?.shared_buffers).toBe('128MB');
  });

  it('repairs pooler drift of instances, mode and parameters, leaving keys other writers own', async () => {
    const sim = simulationWith([withRoles([])]);
    const cls = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
    const spec = structuredClone(cls.spec) as { cnpg: { connectionPooler: { parameters?: Record<string, string> } } };
    spec.cnpg.connectionPooler.parameters = { default_pool_size: '20' };
    sim.api.put({ ...cls, spec });
    await untilReady(sim, 'orders');
    const pooler = sim.api.get<Pooler>({ kind: 'Pooler', namespace: NS, name: 'orders-pooler-ro' }) as Pooler;
    sim.api.put({
      ...pooler,
      spec: {
        ...pooler.spec,
        instances: 7,
        pgbouncer: { poolMode: 'session', parameters: { default_pool_size: '1', max_client_conn: '500' } },
      },
    } as unknown as StoredObject);
    await untilReady(sim, 'orders');
    const repaired = sim.api.get<Pooler>({ kind: 'Pooler', namespace: NS, name: 'orders-pooler-ro' }) as Pooler;
    expect(repaired.spec.instances).toBe(2);
    expect(repaired.spec.pgbouncer).toEqual({
      poolMode: 'transaction',
      parameters: { default_pool_size: '20', max_client_conn: '500' },
    });
    expect(reasonsOf(sim, 'orders')).toContain('PoolerUpdated');
  });

  it('recreates a deleted Secret and a deleted ConfigMap', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    await untilReady(sim, 'orders');
    expect(sim.api.get({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' })).toBeDefined();
    sim.api.delete({ kind: 'Secret', namespace: NS, name: 'orders-superuser' });
    await untilReady(sim, 'orders');
    expect(sim.api.get({ kind: 'Secret', namespace: NS, name: 'orders-superuser' })).toBeDefined();
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'SuperuserSecretCreated')).toHaveLength(2);
  });
});

describe('10. managed roles are their own step', () => {
  it('is Pending naming the missing password Secret, then reconciles once it exists', async () => {
    const sim = simulationWith([withRoles(['app'])]);
    await sim.run(3 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Provisioning.ManagedRoles');
    expect(conditionOf(sim, 'orders', 'ManagedRolesReady')).toMatchObject({
      status: 'False',
      reason: 'ManagedRolesPending',
      message: expect.stringContaining('Secret app-password for role app'),
    });
    expect(statusOf(sim, 'orders').managedRolesStatus).toEqual({ reconciled: [], pending: ['app'], failed: {} });
    sim.api.create(passwordSecret('app-password', 'app'));
    await untilReady(sim, 'orders');
    expect(statusOf(sim, 'orders').managedRolesStatus).toEqual({ reconciled: ['app'], pending: [], failed: {} });
  });

  it('removes roles marked absent and roles removed from the list', async () => {
    const sim = simulationWith([
      withRoles(['app', 'report', 'legacy']),
      passwordSecret('app-password', 'app'),
      passwordSecret('report-password', 'report'),
      passwordSecret('legacy-password', 'legacy'),
    ]);
    await untilReady(sim, 'orders');
    editSpec(sim, 'orders', (spec) => ({
      ...spec,
      managedRoles: [
        { name: 'app', passwordSecretRef: { name: 'app-password' } },
        { name: 'report', exists: false },
      ],
    }));
    await untilReady(sim, 'orders');
    const roles = cnpgOf(sim).spec.managed?.roles ?? [];
    expect(roles.find((r) => r.name === 'report')?.ensure).toBe('absent');
    // A removed role is dropped from PostgreSQL and stays marked absent.
    await sim.run(60_000);
    const rolesNow = () => cnpgOf(sim).spec.managed?.roles?.map((r) => `${r.name}:${r.ensure}`);
    expect(rolesNow()).toEqual(['app:present', 'legacy:absent', 'report:absent']);
    editSpec(sim, 'orders', (spec) => ({ ...spec, managedRoles: [] }));
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    expect(rolesNow()).toEqual(['app:absent', 'legacy:absent', 'report:absent']);
    expect(statusOf(sim, 'orders').managedRolesStatus?.reconciled).toEqual(['app', 'legacy', 'report']);
  });

  it('fails with the role named when CNPG cannot reconcile it, and recovers when it can', async () => {
    const sim = simulationWith([withRoles(['app']), passwordSecret('app-password', 'app')]);
    sim.cnpg.roleCannotReconcile(NS, 'orders', 'app', 'role "app" owns database "x"');
    await sim.run(3 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ManagedRoles');
    expect(conditionOf(sim, 'orders', 'ManagedRolesReady').message).toContain('app: role "app" owns database "x"');
    expect(conditionOf(sim, 'orders', 'Stalled').status).toBe('True');
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'ManagedRolesReconciliationFailed')).toHaveLength(1);
    sim.cnpg.clearFaults();
    sim.api.put({ ...(sim.api.get({ kind: 'Secret', namespace: NS, name: 'app-password' }) as StoredObject) });
    await untilReady(sim, 'orders');
  });
});

describe('12. a change of the class reaches every cluster that uses it', () => {
  it('rolls a new class default out to each cluster', async () => {
    const sim = simulationWith([
      clusterObject('a'),
      clusterObject('b'),
      clusterObject('c', { postgresqlConfig: { max_connections: '50' } }),
    ]);
    await untilReady(sim, 'a');
    await untilReady(sim, 'b');
    await untilReady(sim, 'c');
    const cls = standardClass();
    (cls.spec as { config: { postgresqlConfig: Record<string, string> } }).config.postgresqlConfig = {
      max_connections: '300',
    };
    const live = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
    sim.api.put({ ...live, spec: cls.spec });
    await sim.run(2 * 60_000);
    const param = (name: string) =>
      sim.api.get<CnpgCluster>({ kind: 'Cluster', namespace: NS, name })?.spec.postgresql?.parameters?.max_connections;
    expect([param('a'), param('b'), param('c')]).toEqual(['300', '300', '50']);
    for (const name of ['a', 'b', 'c']) expect(statusOf(sim, name).state).toBe('Ready');
    // A rollout is routine: no cluster warns that it is no longer ready.
    for (const name of ['a', 'b', 'c']) expect(reasonsOf(sim, name)).not.toContain('NotReady');
  });
});

describe('a Ready cluster that loses something says so once; a change the user or the class asked for does not', () => {
  it('says the lost ConfigMap once, as it re-creates it, without leaving Ready in the status', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const readyAt = statusOf(sim, 'orders').conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    const repaired = () => eventsOf(sim, 'orders').filter((e) => e.reason === 'EndpointsRepaired');
    expect(repaired().map((e) => [e.type, e.message])).toEqual([
      ['Normal', 'ConfigMap orders-endpoints was deleted; published again'],
    ]);
    // Re-created within the pass that saw it gone: Ready never changed, so neither NotReady nor Ready is said.
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'NotReady')).toEqual([]);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'Ready')).toHaveLength(1);
    expect(statusOf(sim, 'orders').conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(readyAt);

    editSpec(sim, 'orders', (spec) => ({ ...spec, instances: 2 }));
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Ready');
    expect(reasonsOf(sim, 'orders')).toContain('CNPGClusterUpdated');
    expect(repaired()).toHaveLength(1);
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'NotReady')).toEqual([]);
  });

  it('warns NotReady once when what it lost takes more than a pass to come back', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'Cluster', namespace: NS, name: 'orders' });
    await untilReady(sim, 'orders');
    await sim.run(60_000);
    const warnings = eventsOf(sim, 'orders').filter((e) => e.reason === 'NotReady');
    expect(warnings.map((e) => e.type)).toEqual(['Warning']);
    expect(warnings[0]?.message).toContain('ClusterReady');
    expect(reasonsOf(sim, 'orders').filter((r) => r === 'Ready')).toHaveLength(2);
  });
});
