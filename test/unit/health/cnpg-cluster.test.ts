/** The CNPG Cluster component: readiness evidence beyond the phase, drift of owned fields, ownership. */
import { describe, expect, it } from 'vitest';
import { assess, isBusy } from '../../../src/operator/domain/assessment.ts';
import {
  CNPG_TAKE_UP_MS,
  cnpgDrift,
  desiredCnpgCluster,
  judgeCnpgCluster,
  OWNED_PARAMETERS_ANNOTATION,
  POSTGRES_IMAGE,
  SPEC_WRITTEN_AT_ANNOTATION,
} from '../../../src/operator/domain/components/cluster.ts';
import { CnpgPhase } from '../../../src/operator/domain/components/cnpg-phases.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../../src/operator/domain/observation.ts';
import { ADOPT_ANNOTATION, Reason } from '../../../src/operator/domain/vocabulary.ts';
import { CLUSTER_UID } from '../../../src/tools/fixtures/observations.ts';
import { configOf, eventOf, world } from './support.ts';

/** The desired CNPG Cluster for an observation, built the way the assessment builds it. */
const desiredOf = (observation: Observation) => desiredCnpgCluster(observation, configOf(observation));

/** A healthy world whose observed CNPG Cluster is changed by `mutate`. */
function withCnpg(mutate: (cnpg: CnpgCluster) => void, facts: Parameters<typeof world>[0] = {}): Observation {
  const observation = world(facts);
  if (!observation.cnpg) throw new Error('fixture has no CNPG cluster');
  const cnpg = structuredClone(observation.cnpg);
  mutate(cnpg);
  return { ...observation, cnpg };
}

/** The one apply the planner asks for; fails when there is not exactly one. */
function singleApply(effects: Effect[]) {
  expect(effects).toHaveLength(1);
  const [effect] = effects;
  if (effect?.type !== 'apply') throw new Error(`expected an apply, got ${JSON.stringify(effect)}`);
  expect(effect.component).toBe('cluster');
  return effect;
}

describe('CNPG cluster health', () => {
  it('a healthy phase with every instance ready is Ready / CNPGClusterHealthy and plans nothing', () => {
    const observation = world();
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Ready');
    expect(h.reason).toBe(Reason.CNPGClusterHealthy);
    expect(h.message).toContain('3/3');
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it('a healthy phase with fewer ready instances than requested is not Ready (CNPGClusterScaling, n/m)', () => {
    const observation = world({ cnpg: 'scaling' });
    expect(observation.cnpg?.status?.phase).toBe(CnpgPhase.Healthy);
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.CNPGClusterScaling);
    expect(h.message).toContain('1/3');
    // Scaling is CNPG's work, not ours: nothing to write.
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it.each([
    ['no readyInstances reported', undefined],
    ['2 of 3 ready', 2],
    ['0 of 3 ready', 0],
  ])('a healthy phase with %s is not Ready', (_what, ready) => {
    const observation = withCnpg((cnpg) => {
      if (cnpg.status) cnpg.status.readyInstances = ready;
    });
    const h = judgeCnpgCluster(observation, desiredOf(observation), 0).verdict;
    expect(h.state).not.toBe('Ready');
    expect(h.reason).toBe(Reason.CNPGClusterScaling);
    expect(h.message).toContain(`${ready ?? 0}/3`);
  });

  it('while CNPG scales in (more ready than requested) the cluster is not Ready yet', () => {
    const observation = withCnpg((cnpg) => {
      if (cnpg.status) cnpg.status.readyInstances = 4;
    });
    const h = judgeCnpgCluster(observation, desiredOf(observation), 0).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.CNPGClusterScaling);
    expect(h.message).toContain('4/3');
  });

  it('right after pgfsm applies a new image, a healthy status that still names the old one is not Ready', () => {
    // The spec has the new image (pgfsm's apply landed), the status is CNPG's from before it looked.
    const observation = withCnpg((cnpg) => {
      if (cnpg.status) cnpg.status.image = `${POSTGRES_IMAGE}:16`;
    });
    const desired = desiredOf(observation);
    if (!observation.cnpg) throw new Error('fixture has no CNPG cluster');
    expect(cnpgDrift(observation.cnpg, desired)).toEqual([]);
    const { verdict, effects } = judgeCnpgCluster(observation, desired, 0);
    expect(verdict.state).toBe('Provisioning');
    // An update in progress, not a loss: the machine waits in its updating course.
    expect(verdict.reason).toBe(Reason.CNPGClusterUpdating);
    expect(verdict.message).toContain(`has not taken up the image ${desired.spec.imageName}`);
    expect(verdict.message).toContain(`${POSTGRES_IMAGE}:16`);
    // CNPG's work: nothing to write.
    expect(effects).toEqual([]);
  });

  it('is Ready once CNPG names the new image, and believes a status that names none (an older CNPG)', () => {
    const taken = world();
    expect(taken.cnpg?.status?.image).toBe(desiredOf(taken).spec.imageName);
    expect(judgeCnpgCluster(taken, desiredOf(taken), 0).verdict.state).toBe('Ready');
    const unnamed = withCnpg((cnpg) => {
      if (cnpg.status) delete cnpg.status.image;
    });
    expect(judgeCnpgCluster(unnamed, desiredOf(unnamed), 0).verdict.reason).toBe(Reason.CNPGClusterHealthy);
  });

  describe('after its own write, pgfsm waits for CNPG to take the change up (CNPG reports no generation)', () => {
    const WRITTEN = Date.parse('2026-12-07T10:00:00Z');
    const writtenAt = (at: number) =>
      withCnpg((cnpg) => {
        cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [SPEC_WRITTEN_AT_ANNOTATION]: String(at) };
      });

    it('a healthy status read within the wait is not Ready, names when the wait ends, and asks to look again then', () => {
      const observation = writtenAt(WRITTEN);
      const h = judgeCnpgCluster(observation, desiredOf(observation), WRITTEN + 38).verdict;
      expect(h.state).toBe('Provisioning');
      expect(h.reason).toBe(Reason.CNPGClusterUpdating);
      expect(h.message).toContain(new Date(WRITTEN + CNPG_TAKE_UP_MS).toISOString());
      expect(judgeCnpgCluster(observation, desiredOf(observation), WRITTEN + 38).effects).toEqual([]);
      expect(assess(observation, defaultSettings, WRITTEN + 38).recheckAt).toBe(WRITTEN + CNPG_TAKE_UP_MS);
    });

    it('the same status is Ready once the wait has run out, with nothing left to look again for', () => {
      const observation = writtenAt(WRITTEN);
      const after = WRITTEN + CNPG_TAKE_UP_MS;
      expect(judgeCnpgCluster(observation, desiredOf(observation), after).verdict.state).toBe('Ready');
      expect(assess(observation, defaultSettings, after).recheckAt).toBeUndefined();
    });

    it('a status CNPG reports as busy within the wait says what CNPG says, not the wait', () => {
      const observation = withCnpg((cnpg) => {
        cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [SPEC_WRITTEN_AT_ANNOTATION]: String(WRITTEN) };
        cnpg.status = { ...cnpg.status, phase: CnpgPhase.ApplyingConfiguration };
      });
      const h = judgeCnpgCluster(observation, desiredOf(observation), WRITTEN + 1_000).verdict;
      expect(h.message).toContain(CnpgPhase.ApplyingConfiguration);
      expect(h.message).not.toContain('Ready waits until');
    });

    it('a stamp that is no number, or lies in the future (a clock or a hand), is ignored rather than waited on', () => {
      for (const stamp of ['soon', String(WRITTEN + 60_000)]) {
        const observation = withCnpg((cnpg) => {
          cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [SPEC_WRITTEN_AT_ANNOTATION]: stamp };
        });
        expect(judgeCnpgCluster(observation, desiredOf(observation), WRITTEN).verdict.state).toBe('Ready');
      }
    });
  });

  it('a non-healthy phase reports the phase and its phaseReason in the message', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.status = { ...cnpg.status, phase: CnpgPhase.WaitingForUser, phaseReason: 'PVC pgdata is missing' };
    });
    const h = judgeCnpgCluster(observation, desiredOf(observation), 0).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.CNPGWaitingForUser);
    expect(h.message).toContain(CnpgPhase.WaitingForUser);
    expect(h.message).toContain('PVC pgdata is missing');
  });

  it('a CNPG cluster that has not reported a phase yet is Pending', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.status = {};
    });
    const h = judgeCnpgCluster(observation, desiredOf(observation), 0).verdict;
    expect(h.state).toBe('Pending');
    expect(h.reason).toBe(Reason.CNPGClusterPending);
  });

  it('CNPG is busy during a switchover, not when healthy, failed, missing, or with a change still to roll out', () => {
    const busy = (observation: Observation) => isBusy(assess(observation, defaultSettings, 0), 'cluster');
    expect(busy(world({ cnpg: CnpgPhase.Switchover }))).toBe(true);
    expect(busy(world({ cnpg: CnpgPhase.InplacePrimaryRestart }))).toBe(true);
    expect(busy(world())).toBe(false);
    expect(busy(world({ cnpg: CnpgPhase.Unrecoverable }))).toBe(false);
    expect(busy(world({ cnpg: 'missing' }))).toBe(false);
    expect(busy(world({ cnpg: CnpgPhase.ApplyingConfiguration, upgrade: 'halfway' }))).toBe(false);
  });
});

describe('CNPG cluster drift', () => {
  /** [what, field named in the drift, how the world drifts] */
  const cases: Array<[string, string, () => Observation]> = [
    [
      'instances changed behind our back',
      'instances',
      () =>
        withCnpg((cnpg) => {
          cnpg.spec.instances = 1;
        }),
    ],
    [
      'postgresVersion raised in the spec (image)',
      'imageName',
      () => {
        const observation = world();
        return {
          ...observation,
          cluster: { ...observation.cluster, spec: { ...observation.cluster.spec, postgresVersion: '17.2' } },
        };
      },
    ],
    [
      'image replaced in CNPG',
      'imageName',
      () =>
        withCnpg((cnpg) => {
          cnpg.spec.imageName = 'docker.io/library/postgres:17';
        }),
    ],
    [
      'a parameter value changed in CNPG',
      'postgresql.parameters',
      () =>
        withCnpg((cnpg) => {
          cnpg.spec.postgresql = {
            ...cnpg.spec.postgresql,
            parameters: { ...cnpg.spec.postgresql?.parameters, max_connections: '100' },
          };
        }),
    ],
    [
      'a parameter value changed in the spec',
      'postgresql.parameters',
      () => {
        const observation = world();
        return {
          ...observation,
          cluster: {
            ...observation.cluster,
            spec: { ...observation.cluster.spec, postgresqlConfig: { max_connections: '300' } },
          },
        };
      },
    ],
    [
      'a parameter we own deleted from CNPG',
      'postgresql.parameters',
      () =>
        withCnpg((cnpg) => {
          const { max_connections: _dropped, ...rest } = cnpg.spec.postgresql?.parameters ?? {};
          cnpg.spec.postgresql = { ...cnpg.spec.postgresql, parameters: rest };
        }),
    ],
    [
      'a parameter key removed from the spec (known through the owned-parameters annotation)',
      'postgresql.parameters',
      () =>
        withCnpg((cnpg) => {
          cnpg.metadata.annotations = {
            ...cnpg.metadata.annotations,
            [OWNED_PARAMETERS_ANNOTATION]: 'max_connections,work_mem',
          };
          cnpg.spec.postgresql = {
            ...cnpg.spec.postgresql,
            parameters: { ...cnpg.spec.postgresql?.parameters, work_mem: '64MB' },
          };
        }),
    ],
    [
      'pg_hba changed in CNPG',
      'postgresql.pg_hba',
      () =>
        withCnpg((cnpg) => {
          cnpg.spec.postgresql = { ...cnpg.spec.postgresql, pg_hba: ['host all all 0.0.0.0/0 trust'] };
        }),
    ],
    [
      'pg_hba set in the spec',
      'postgresql.pg_hba',
      () => {
        const observation = world();
        return {
          ...observation,
          cluster: {
            ...observation.cluster,
            spec: { ...observation.cluster.spec, pgHBA: ['hostssl all all 10.0.0.0/8 scram-sha-256'] },
          },
        };
      },
    ],
    [
      'storage grown in the spec',
      'storage.size',
      () => {
        const observation = world();
        return {
          ...observation,
          cluster: { ...observation.cluster, spec: { ...observation.cluster.spec, storage: '20Gi' } },
        };
      },
    ],
    [
      'resources set in the spec',
      'resources',
      () => {
        const observation = world();
        return {
          ...observation,
          cluster: {
            ...observation.cluster,
            spec: { ...observation.cluster.spec, resources: { requests: { cpu: '1', memory: '2Gi' } } },
          },
        };
      },
    ],
    [
      'resources changed in CNPG',
      'resources',
      () =>
        withCnpg((cnpg) => {
          cnpg.spec.resources = { limits: { memory: '512Mi' } };
        }),
    ],
  ];

  it.each(cases)('%s is drift of %s, reported as Provisioning and planned as one apply', (_what, field, make) => {
    const observation = make();
    const desired = desiredOf(observation);
    expect(observation.cnpg).toBeDefined();
    expect(cnpgDrift(observation.cnpg as CnpgCluster, desired)).toContain(field);

    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.CNPGClusterUpdating);
    expect(h.message).toContain(field);

    const apply = singleApply(judgeCnpgCluster(observation, desired, 0).effects);
    expect(apply.object).toEqual(desired);
    const event = eventOf(apply);
    expect(event.type).toBe('Normal');
    expect(event.reason).toBe('CNPGClusterUpdated');
    expect(event.message).toContain(field);
  });

  it('the repair of a removed parameter key leaves the key out and records the new owned keys', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.metadata.annotations = { [OWNED_PARAMETERS_ANNOTATION]: 'max_connections,work_mem' };
      cnpg.spec.postgresql = { parameters: { max_connections: '200', work_mem: '64MB' }, pg_hba: [] };
    });
    const desired = desiredOf(observation);
    const apply = singleApply(judgeCnpgCluster(observation, desired, 0).effects);
    const object = apply.object as CnpgCluster;
    expect(object.spec.postgresql?.parameters).toEqual({ max_connections: '200' });
    expect(object.metadata.annotations?.[OWNED_PARAMETERS_ANNOTATION]).toBe('max_connections');
  });

  it('the desired image is the CNPG postgresql image at the requested version', () => {
    const observation = world();
    expect(desiredOf(observation).spec.imageName).toBe(`${POSTGRES_IMAGE}:17`);
  });

  it('parameters CNPG adds and the managed roles in the CNPG spec are not drift', () => {
    const observation = world();
    // The fixture's CNPG cluster carries both: a parameter of CNPG's own and the pushed roles.
    expect(observation.cnpg?.spec.postgresql?.parameters?.shared_buffers).toBe('128MB');
    expect(observation.cnpg?.spec.managed?.roles?.map((r) => r.name)).toEqual(['app']);
    const desired = desiredOf(observation);
    expect(desired.spec.postgresql?.parameters).not.toHaveProperty('shared_buffers');
    expect(cnpgDrift(observation.cnpg as CnpgCluster, desired)).toEqual([]);
    expect(judgeCnpgCluster(observation, desired, 0).verdict.state).toBe('Ready');
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it.each([
    ['10Gi', '10240Mi'],
    ['10Gi', '10737418240'],
    ['1Gi', '1024Mi'],
  ])('storage %s observed as %s is the same quantity, not drift', (wanted, observed) => {
    const base = withCnpg((cnpg) => {
      cnpg.spec.storage = { size: observed };
    });
    const observation = { ...base, cluster: { ...base.cluster, spec: { ...base.cluster.spec, storage: wanted } } };
    const desired = desiredOf(observation);
    expect(desired.spec.storage?.size).toBe(wanted);
    expect(cnpgDrift(observation.cnpg as CnpgCluster, desired)).not.toContain('storage.size');
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it('resources written in another unit of the same quantity are not drift', () => {
    const base = withCnpg((cnpg) => {
      cnpg.spec.resources = { requests: { cpu: '0.5', memory: '1024Mi' }, limits: { memory: '1Gi' } };
    });
    const observation = {
      ...base,
      cluster: {
        ...base.cluster,
        spec: {
          ...base.cluster.spec,
          resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '1024Mi' } },
        },
      },
    };
    const desired = desiredOf(observation);
    expect(cnpgDrift(observation.cnpg as CnpgCluster, desired)).toEqual([]);
  });

  it('the cluster apply never carries managed roles, so repairing the spec cannot drop them (ref. §10.7)', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.spec.instances = 1;
    });
    const apply = singleApply(judgeCnpgCluster(observation, desiredOf(observation), 0).effects);
    expect((apply.object as CnpgCluster).spec).not.toHaveProperty('managed');
  });

  it('a failed phase with a pending drift reports the drift, so the user fix is applied', () => {
    const observation = withCnpg(
      (cnpg) => {
        cnpg.spec.instances = 1;
      },
      { cnpg: CnpgPhase.Unrecoverable },
    );
    expect(observation.cnpg?.status?.phase).toBe(CnpgPhase.Unrecoverable);
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.CNPGClusterUpdating);
    expect(eventOf(singleApply(judgeCnpgCluster(observation, desired, 0).effects)).reason).toBe('CNPGClusterUpdated');
  });

  it('the same failed phase without drift stays Failed and plans nothing', () => {
    const observation = world({ cnpg: CnpgPhase.Unrecoverable });
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.CNPGUnrecoverable);
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });
});

describe('CNPG cluster bootstrap', () => {
  it('a new cluster is bootstrapped with initdb and the superuser Secret', () => {
    const desired = desiredOf(world({ cnpg: 'missing' }));
    expect(desired.spec.bootstrap).toEqual({
      initdb: { database: 'postgres', owner: 'postgres', secret: { name: 'orders-superuser' } },
    });
  });

  it('an existing cluster keeps the bootstrap it was created with: pgfsm never changes it', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.metadata.ownerReferences = [];
      cnpg.spec.bootstrap = { initdb: { database: 'app', owner: 'app', secret: { name: 'orders-secret' } } };
    });
    const desired = desiredOf(observation);
    expect(desired.spec.bootstrap).toEqual(observation.cnpg?.spec.bootstrap);
    expect(cnpgDrift(observation.cnpg as CnpgCluster, desired)).toEqual([]);
  });
});

describe('CNPG cluster existence and ownership', () => {
  it('a missing cluster is Pending and planned as one apply with CNPGClusterCreated', () => {
    const observation = world({ cnpg: 'missing' });
    expect(observation.cnpg).toBeUndefined();
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Pending');
    expect(h.reason).toBe(Reason.CNPGClusterPending);
    const apply = singleApply(judgeCnpgCluster(observation, desired, 0).effects);
    expect(apply.object).toEqual(desired);
    expect(eventOf(apply).reason).toBe('CNPGClusterCreated');
    const owners = apply.object.metadata.ownerReferences ?? [];
    expect(owners).toHaveLength(1);
    expect(owners[0]).toMatchObject({ kind: 'PostgresCluster', uid: CLUSTER_UID, controller: true });
  });

  it('an orphan (no controller owner) is adopted: not Ready, one apply with CNPGClusterAdopted', () => {
    const observation = world({ cnpg: 'released' });
    expect(observation.cnpg?.metadata.ownerReferences).toEqual([]);
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Provisioning');
    expect(h.reason).toBe(Reason.CNPGClusterUpdating);
    const apply = singleApply(judgeCnpgCluster(observation, desired, 0).effects);
    expect(eventOf(apply).reason).toBe('CNPGClusterAdopted');
    expect(apply.object.metadata.ownerReferences?.[0]).toMatchObject({ uid: CLUSTER_UID, controller: true });
  });

  it('an owner reference that is not a controller does not make the cluster ours: it is adopted', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'uid-x' }];
      cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
    });
    const desired = desiredOf(observation);
    expect(eventOf(singleApply(judgeCnpgCluster(observation, desired, 0).effects)).reason).toBe('CNPGClusterAdopted');
  });

  it('a cluster controlled by someone else is Failed / ClusterOwnedByOther and never written', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.metadata.ownerReferences = [
        {
          apiVersion: 'pgfsm.io/v1alpha1',
          kind: 'PostgresCluster',
          name: 'billing',
          uid: 'uid-billing',
          controller: true,
        },
      ];
      cnpg.spec.instances = 1; // even with drift: not ours to repair
    });
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.ClusterOwnedByOther);
    expect(h.message).toContain('PostgresCluster/billing');
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it('an orphan that authenticates with another superuser Secret is not adopted: its password would change', () => {
    const observation = withCnpg((cnpg) => {
      cnpg.metadata.ownerReferences = [];
      cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
      cnpg.spec.superuserSecret = { name: 'orders-secret' };
    });
    const desired = desiredOf(observation);
    const h = judgeCnpgCluster(observation, desired, 0).verdict;
    expect(h.state).toBe('Failed');
    expect(h.reason).toBe(Reason.ClusterSuperuserSecretMismatch);
    expect(h.message).toContain('uses superuser secret orders-secret, not orders-superuser');
    expect(h.message).toContain('spec.superuserSecret.name');
    expect(judgeCnpgCluster(observation, desired, 0).effects).toEqual([]);
  });

  it('an orphan with our superuser Secret, or none named, is adopted', () => {
    for (const superuserSecret of [{ name: 'orders-superuser' }, undefined]) {
      const observation = withCnpg((cnpg) => {
        cnpg.metadata.ownerReferences = [];
        cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
        cnpg.spec.superuserSecret = superuserSecret;
      });
      const desired = desiredOf(observation);
      expect(judgeCnpgCluster(observation, desired, 0).verdict.reason).toBe(Reason.CNPGClusterUpdating);
      expect(eventOf(singleApply(judgeCnpgCluster(observation, desired, 0).effects)).reason).toBe('CNPGClusterAdopted');
    }
  });
});
