/**
 * Behaviour contract: what the API server refuses at admission (CNPG's webhook, a schema, a CEL rule) is a
 * failure of the spec. The step fails with the API server's words, Stalled, one Warning; the refused object
 * is never sent again, and any change of the spec, the class or the world that changes it is tried.
 */
import { describe, expect, it } from 'vitest';
import type { CnpgCluster } from '../../src/operator/domain/objects.ts';
import {
  clusterObject,
  conditionOf,
  conditionSummary,
  editSpec,
  eventsOf,
  NS,
  passwordSecret,
  simulationWith,
  standardClass,
  statusOf,
  untilReady,
} from '../../src/tools/fixtures/simulation.ts';
import type { Admission, StoredObject } from '../../src/tools/memory/api-server.ts';
import type { Simulation } from '../../src/tools/simulation/simulation.ts';

const WORK_MEM_REFUSAL =
  'admission webhook "vcluster.cnpg.io" denied the request: Cluster.postgresql.cnpg.io "orders" is invalid: ' +
  'spec.postgresql.parameters.work_mem: Invalid value: "1TB": work_mem may not exceed the memory request';

/** A webhook in CNPG's manner that refuses one thing, and counts what it refused. */
function refusing(sim: Simulation, refuse: (object: StoredObject, manager?: string) => string | undefined) {
  const refused: string[] = [];
  const admission: Admission = ({ verb, object, manager }) => {
    const said = verb === 'apply' ? refuse(object, manager) : undefined;
    if (said) refused.push(`${object.kind}/${object.metadata.name}`);
    return said;
  };
  sim.api.admit(admission);
  return refused;
}

const workMem = (object: StoredObject) =>
  object.kind === 'Cluster' && (object as unknown as CnpgCluster).spec.postgresql?.parameters?.work_mem === '1TB'
    ? WORK_MEM_REFUSAL
    : undefined;

const warnings = (sim: Simulation, name: string) =>
  eventsOf(sim, name)
    .filter((e) => e.type === 'Warning')
    .map((e) => e.reason);

describe('a write refused at admission is a failure of the spec', () => {
  it("fails the Cluster step with CNPG's words, Stalled, one Warning, and never sends the same object again", async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = refusing(sim, workMem);
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '1TB' } }));
    await sim.run(30 * 60_000);

    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      Ready: 'False/ClusterSpecRejected',
      Stalled: 'True/ClusterSpecRejected',
      Reconciling: 'False/Failed',
      ClusterReady: 'False/ClusterSpecRejected',
    });
    expect(conditionOf(sim, 'orders', 'ClusterReady').message).toContain(WORK_MEM_REFUSAL);
    expect(warnings(sim, 'orders')).toEqual(['ClusterSpecRejected']);
    expect(eventsOf(sim, 'orders').find((e) => e.type === 'Warning')?.message).toContain(WORK_MEM_REFUSAL);
    expect(refused).toEqual(['Cluster/orders']);
    expect(statusOf(sim, 'orders').rejectedWrites).toEqual([
      { component: 'cluster', digest: expect.stringMatching(/^[0-9a-f]{64}$/), message: WORK_MEM_REFUSAL },
    ]);
    // Nothing to retry until an input changes: half an hour of waiting made no pass hammer anything.
    const before = sim.passes.length;
    await sim.run(30 * 60_000);
    expect(sim.passes.length - before).toBeLessThanOrEqual(3);
  });

  it('tries again when the spec changes, and forgets the refusal', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = refusing(sim, workMem);
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '1TB' } }));
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '64MB' } }));
    await untilReady(sim, 'orders');
    const cnpg = sim.api.get<CnpgCluster>({ kind: 'Cluster', namespace: NS, name: 'orders' });
    expect(cnpg?.spec.postgresql?.parameters?.work_mem).toBe('64MB');
    expect(statusOf(sim, 'orders').rejectedWrites).toBeUndefined();
    expect(conditionSummary(sim, 'orders').Stalled).toBe('False/Ready');
    expect(refused).toHaveLength(1);
    // Going back to the refused spec is a new failure: tried once more, refused, one more Warning.
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '1TB' } }));
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(refused).toHaveLength(2);
    expect(warnings(sim, 'orders')).toEqual(['ClusterSpecRejected', 'ClusterSpecRejected']);
  });

  it('a class change the webhook refuses fails the step without warning NotReady, and its revert recovers', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    refusing(sim, workMem);
    const setClassWorkMem = (value: string) => {
      const live = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
      const cls = standardClass();
      const spec = cls.spec as { config: { postgresqlConfig?: Record<string, string> } };
      spec.config.postgresqlConfig = { ...spec.config.postgresqlConfig, work_mem: value };
      sim.api.put({ ...live, spec: cls.spec });
    };
    setClassWorkMem('1TB');
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(warnings(sim, 'orders')).toEqual(['ClusterSpecRejected']);
    setClassWorkMem('4MB');
    await untilReady(sim, 'orders');
    expect(statusOf(sim, 'orders').rejectedWrites).toBeUndefined();
  });

  it('a restarted operator stays in the failure without sending the refused object again', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    const refused = refusing(sim, workMem);
    editSpec(sim, 'orders', (spec) => ({ ...spec, postgresqlConfig: { work_mem: '1TB' } }));
    await sim.run(60_000);
    sim.restartOperator();
    await sim.run(30 * 60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Cluster');
    expect(refused).toHaveLength(1);
    expect(warnings(sim, 'orders')).toEqual(['ClusterSpecRejected']);
  });

  it('a refused Pooler fails the Pooler step with PoolerSpecRejected', async () => {
    const sim = simulationWith([clusterObject('orders', { connectionPoolerEnabled: true })]);
    await untilReady(sim, 'orders');
    const said = 'admission webhook "vpooler.cnpg.io" denied the request: Invalid or reserved parameter';
    refusing(sim, (object) => (object.kind === 'Pooler' ? said : undefined));
    const live = sim.api.get({ kind: 'PostgresClusterClass', namespace: '', name: 'standard' }) as StoredObject;
    const cls = standardClass();
    const spec = cls.spec as { cnpg: { connectionPooler: { parameters?: Record<string, string> } } };
    spec.cnpg.connectionPooler.parameters = { max_client_conn: '500' };
    sim.api.put({ ...live, spec: cls.spec });
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.Pooler');
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      PoolerReady: 'False/PoolerSpecRejected',
      Stalled: 'True/PoolerSpecRejected',
      ClusterReady: 'True/CNPGClusterHealthy',
    });
    expect(conditionOf(sim, 'orders', 'PoolerReady').message).toContain(said);
    expect(warnings(sim, 'orders')).toEqual(['PoolerSpecRejected']);
  });

  it('refused managed roles fail the ManagedRoles step with ManagedRolesSpecRejected', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    sim.api.create(passwordSecret('app-password', 'app'));
    await untilReady(sim, 'orders');
    const said = 'admission webhook "vcluster.cnpg.io" denied the request: This role is reserved for operator use';
    refusing(sim, (object, manager) =>
      object.kind === 'Cluster' &&
      manager !== 'pgfsm' &&
      (object as unknown as CnpgCluster).spec.managed?.roles?.some((r) => r.name === 'app')
        ? said
        : undefined,
    );
    editSpec(sim, 'orders', (spec) => ({
      ...spec,
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
    }));
    await sim.run(60_000);
    expect(statusOf(sim, 'orders').state).toBe('Failed.ManagedRoles');
    expect(conditionSummary(sim, 'orders')).toMatchObject({
      ManagedRolesReady: 'False/ManagedRolesSpecRejected',
      Stalled: 'True/ManagedRolesSpecRejected',
    });
    expect(conditionOf(sim, 'orders', 'ManagedRolesReady').message).toContain(said);
    expect(warnings(sim, 'orders')).toEqual(['ManagedRolesSpecRejected']);
    // Dropping the role is the fix.
    editSpec(sim, 'orders', (spec) => ({ ...spec, managedRoles: [] }));
    await untilReady(sim, 'orders');
  });

  it('any other refused write is an ordinary write failure that backs off', async () => {
    const sim = simulationWith([clusterObject('orders')]);
    await untilReady(sim, 'orders');
    sim.api.delete({ kind: 'ConfigMap', namespace: NS, name: 'orders-endpoints' });
    sim.api.injectFault('ConfigMap', 'apply', 'rejected', 1);
    const outcome = await sim.reconcileNow({ namespace: NS, name: 'orders' });
    expect(outcome.requeue.kind).toBe('backoff');
    expect(conditionOf(sim, 'orders', 'ConfigMapsReady').reason).toBe('ConfigMapReconciliationFailed');
    await untilReady(sim, 'orders');
  });
});
