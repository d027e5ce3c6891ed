/** mergeConfig: the cluster spec over its class defaults, validated; invalid input names the field. */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterClass, PostgresClusterSpec } from '../../../src/operator/api/schema.ts';
import { assess } from '../../../src/operator/domain/assessment.ts';
import { POSTGRES_IMAGE } from '../../../src/operator/domain/components/cluster.ts';
import { type MergeResult, mergeConfig } from '../../../src/operator/domain/config.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import { defaultSettings, type Observation } from '../../../src/operator/domain/observation.ts';
import { Reason } from '../../../src/operator/domain/vocabulary.ts';
import { FOREIGN_OWNER } from '../../../src/tools/fixtures/observations.ts';
import { config, invalid, makeClass, world } from './support.ts';

/** A healthy world whose cluster spec is `spec` (replacing the fixture's) and class is `clusterClass`. */
function observation(
  spec: Partial<PostgresClusterSpec>,
  /** null: the class does not exist. */
  clusterClass: PostgresClusterClass | null = makeClass(),
  running?: Partial<CnpgCluster['spec']>,
): Observation {
  const base = world();
  const cnpg = running && base.cnpg ? { ...base.cnpg, spec: { ...base.cnpg.spec, ...running } } : undefined;
  return {
    ...base,
    cluster: { ...base.cluster, spec: { class: 'standard', ...spec } },
    clusterClass: clusterClass ?? undefined,
    cnpg,
  };
}

const CLASS_WITH_EVERYTHING = makeClass({
  config: {
    instances: 2,
    storage: '10Gi',
    postgresVersion: '16',
    resources: { requests: { cpu: '1' } },
    postgresqlConfig: { max_connections: '200', shared_buffers: '1GB' },
    pgHBA: ['host all all 10.0.0.0/8 scram-sha-256'],
    connectionPoolerEnabled: true,
  },
  cnpg: {
    primaryUpdateMethod: 'restart',
    connectionPooler: { instances: 4, mode: 'session', parameters: { default_pool_size: '1' } },
  },
});

describe('merging the spec over the class defaults', () => {
  it('class defaults fill every field the spec leaves out', () => {
    const c = config(mergeConfig(observation({}, CLASS_WITH_EVERYTHING)));
    expect(c).toEqual({
      instances: 2,
      postgresVersion: '16',
      storage: '10Gi',
      resources: { requests: { cpu: '1' } },
      postgresqlConfig: { max_connections: '200', shared_buffers: '1GB' },
      pgHBA: ['host all all 10.0.0.0/8 scram-sha-256'],
      primaryUpdateMethod: 'restart',
      pooler: { instances: 4, mode: 'session', parameters: { default_pool_size: '1' } },
      managedRoles: [],
      deletionPolicy: 'Retain',
    });
  });

  it('cluster fields override the class defaults', () => {
    const c = config(
      mergeConfig(
        observation(
          {
            instances: 5,
            postgresVersion: '17.2',
            storage: '50Gi',
            resources: { limits: { memory: '4Gi' } },
            pgHBA: ['hostssl all all 0.0.0.0/0 scram-sha-256'],
            connectionPoolerEnabled: false,
            clusterDeletionPolicy: 'Delete',
            managedRoles: [{ name: 'app' }],
          },
          CLASS_WITH_EVERYTHING,
        ),
      ),
    );
    expect(c.instances).toBe(5);
    expect(c.postgresVersion).toBe('17.2');
    expect(c.storage).toBe('50Gi');
    expect(c.resources).toEqual({ limits: { memory: '4Gi' } });
    expect(c.pgHBA).toEqual(['hostssl all all 0.0.0.0/0 scram-sha-256']);
    expect(c.pooler).toBeUndefined();
    expect(c.deletionPolicy).toBe('Delete');
    expect(c.managedRoles).toEqual([{ name: 'app' }]);
  });

  it('postgresqlConfig merges key-wise: the spec wins per key, class keys are kept', () => {
    const c = config(
      mergeConfig(
        observation({ postgresqlConfig: { max_connections: '300', work_mem: '64MB' } }, CLASS_WITH_EVERYTHING),
      ),
    );
    expect(c.postgresqlConfig).toEqual({ max_connections: '300', shared_buffers: '1GB', work_mem: '64MB' });
  });

  it('the pooler can be enabled by the spec when the class only configures it', () => {
    const c = config(mergeConfig(observation({ connectionPoolerEnabled: true })));
    expect(c.pooler).toEqual({ instances: 2, mode: 'transaction', parameters: {} });
  });

  it('without any pooler setting the pooler is off, and the update method defaults to switchover', () => {
    const cls = makeClass({ cnpg: {} });
    const c = config(mergeConfig(observation({}, cls)));
    expect(c.pooler).toBeUndefined();
    expect(c.primaryUpdateMethod).toBe('switchover');
    expect(c.pgHBA).toEqual([]);
    expect(c.resources).toEqual({});
  });

  it('the fixture world merges to 3 instances of PostgreSQL 17 on 10Gi with the pooler on', () => {
    const c = config(mergeConfig(world()));
    expect(c.instances).toBe(3);
    expect(c.postgresVersion).toBe('17');
    expect(c.storage).toBe('10Gi');
    expect(c.pooler?.instances).toBe(2);
    expect(c.managedRoles.map((r) => r.name)).toEqual(['app']);
  });
});

describe('invalid input names the field', () => {
  it.each([[0], [11], [2.5]])('instances %j is rejected by the schema', (instances) => {
    const r = invalid(mergeConfig(observation({ instances })));
    expect(r.field).toBe('spec.instances');
  });

  it('instances 1 and 10 are the bounds', () => {
    expect(config(mergeConfig(observation({ instances: 1 }))).instances).toBe(1);
    expect(config(mergeConfig(observation({ instances: 10 }))).instances).toBe(10);
  });

  it('missing storage with no class default', () => {
    const cls = makeClass({ config: { instances: 1, postgresVersion: '17' } });
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toBe('spec.storage');
  });

  it('missing postgresVersion with no class default', () => {
    const cls = makeClass({ config: { instances: 1, storage: '1Gi' } });
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toBe('spec.postgresVersion');
  });

  it('missing instances with no class default', () => {
    const cls = makeClass({ config: { storage: '1Gi', postgresVersion: '17' } });
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toBe('spec.instances');
  });

  it('the pooler enabled without cnpg.connectionPooler in the class', () => {
    const cls = makeClass({ cnpg: { primaryUpdateMethod: 'switchover' } });
    const r = invalid(mergeConfig(observation({ connectionPoolerEnabled: true }, cls)));
    expect(r.field).toBe('spec.connectionPoolerEnabled');
    expect(r.message).toContain('cnpg.connectionPooler');
  });

  it('storage below what CNPG runs is a shrink', () => {
    const r = invalid(mergeConfig(observation({ storage: '5Gi' }, makeClass(), { storage: { size: '10Gi' } })));
    expect(r.field).toBe('spec.storage');
    expect(r.message).toContain('10Gi');
    expect(r.message).toContain('5Gi');
  });

  it('a class default below what CNPG runs is a shrink too', () => {
    const r = invalid(mergeConfig(observation({}, makeClass(), { storage: { size: '20Gi' } })));
    expect(r.field).toBe('spec.storage');
  });

  it.each([
    ['10Gi', '10240Mi'],
    ['20Gi', '10Gi'],
  ])('storage %s over a running %s is no shrink', (storage, running) => {
    expect(mergeConfig(observation({ storage }, makeClass(), { storage: { size: running } })).ok).toBe(true);
  });

  it('a postgres major going down against the running image', () => {
    const r = invalid(
      mergeConfig(observation({ postgresVersion: '16' }, makeClass(), { imageName: `${POSTGRES_IMAGE}:17.2` })),
    );
    expect(r.field).toBe('spec.postgresVersion');
    expect(r.message).toContain('17.2');
  });

  describe('a CNPG Cluster of the same name that is not ours bounds nothing (issue 30)', () => {
    const running = { imageName: `${POSTGRES_IMAGE}:17.2`, storage: { size: '20Gi' } };
    /** The observation with the CNPG Cluster's metadata changed by `meta`. */
    const withCnpg = (meta: (m: CnpgCluster['metadata']) => CnpgCluster['metadata']) => {
      const o = observation({ postgresVersion: '16', storage: '5Gi' }, makeClass(), running);
      if (!o.cnpg) throw new Error('no CNPG cluster');
      return { ...o, cnpg: { ...o.cnpg, metadata: meta(o.cnpg.metadata) } };
    };
    const unowned = (m: CnpgCluster['metadata']) => ({ ...m, ownerReferences: [] });

    it('an orphan not handed over: the merge passes, and the cluster step says whose it is', () => {
      const o = withCnpg(unowned);
      expect(mergeConfig(o).ok).toBe(true);
      const health = assess(o, defaultSettings, 0).health.cluster;
      expect(health?.reason).toBe(Reason.ClusterNotAdoptable);
      expect(health?.message).toContain('pgfsm.io/adopt=true');
    });

    it("another controller's: the merge passes, and the cluster step says who controls it", () => {
      const o = withCnpg((m) => ({ ...m, ownerReferences: [FOREIGN_OWNER] }));
      expect(mergeConfig(o).ok).toBe(true);
      expect(assess(o, defaultSettings, 0).health.cluster?.reason).toBe(Reason.ClusterOwnedByOther);
    });

    it('an orphan handed over (pgfsm.io/adopt) is about to be ours: what it runs bounds the spec', () => {
      const o = withCnpg((m) => ({ ...unowned(m), annotations: { 'pgfsm.io/adopt': 'true' } }));
      const r = invalid(mergeConfig(o));
      expect(r.field).toBe('spec.storage');
    });
  });

  // CNPG's own images are tagged `<version>-<flavour>-<distro>` (e.g. 18-standard-trixie); a cluster
  // adopted with such an image must be guarded too.
  it.each([['18-standard-trixie'], ['18.1-standard-trixie'], ['18-minimal-bookworm']])(
    'a postgres major going down against a running image tagged %s',
    (tag) => {
      const r = invalid(
        mergeConfig(observation({ postgresVersion: '17' }, makeClass(), { imageName: `${POSTGRES_IMAGE}:${tag}` })),
      );
      expect(r.field).toBe('spec.postgresVersion');
    },
  );

  it.each([
    ['17.1', '17.4'],
    ['18', '17'],
    ['17', '17'],
  ])('postgresVersion %s over a running %s is allowed (minor changes and upgrades)', (version, running) => {
    expect(
      mergeConfig(observation({ postgresVersion: version }, makeClass(), { imageName: `${POSTGRES_IMAGE}:${running}` }))
        .ok,
    ).toBe(true);
  });

  it('duplicate role names', () => {
    const r = invalid(
      mergeConfig(observation({ managedRoles: [{ name: 'app' }, { name: 'batch' }, { name: 'app' }] })),
    );
    expect(r.field).toBe('spec.managedRoles[2].name');
    expect(r.message).toContain('app');
  });

  it('an invalid class spec (pool mode statement) names the class and the field', () => {
    const cls = makeClass({ cnpg: { connectionPooler: { mode: 'statement' as never } } });
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toContain('standard');
    expect(r.field).toContain('cnpg.connectionPooler.mode');
  });

  it('a missing class names spec.class', () => {
    const r = invalid(mergeConfig(observation({}, null)));
    expect(r.field).toBe('spec.class');
    expect(r.message).toContain('standard');
    // Only what the API accepts: spec.class is immutable, so create the class or recreate the cluster.
    expect(r.message).toContain('create the class');
    expect(r.message).toContain('delete this PostgresCluster and create it again');
    expect(r.message).toContain('clusterDeletionPolicy is Retain, so its data is kept');
    expect(r.message).not.toMatch(/fix spec\.class/);
    const deleting = invalid(mergeConfig(observation({ clusterDeletionPolicy: 'Delete' }, null)));
    expect(deleting.message).toContain('clusterDeletionPolicy is Delete, so its data goes with it');
  });
});

/** The class of the fixture with its config changed by `config` (the rest of the class stays). */
const classWith = (
  config: Partial<NonNullable<PostgresClusterClass['spec']['config']>>,
  cnpg?: PostgresClusterClass['spec']['cnpg'],
) => {
  const base = makeClass();
  return makeClass({ config: { ...base.spec.config, ...config }, ...(cnpg ? { cnpg } : {}) });
};

// What CloudNativePG's admission would refuse, judged after the merge (docs/cnpg-admission.md names these tests):
// what only shows once a cluster meets its class, and objects stored before the CRD rules existed.
describe('CNPG admission rules after the merge', () => {
  const field = (result: MergeResult) => invalid(result).field;

  it('a metadata.name that is no DNS-1035 label', () => {
    for (const name of ['my.db', '1orders']) {
      const base = observation({});
      const r = invalid(
        mergeConfig({ ...base, cluster: { ...base.cluster, metadata: { ...base.cluster.metadata, name } } }),
      );
      expect(r.field).toBe('metadata.name');
      expect(r.message).toContain('DNS-1035');
    }
  });

  it('a postgresVersion below 13, from the class or the cluster', () => {
    expect(field(mergeConfig(observation({}, classWith({ postgresVersion: '12' }))))).toBe(
      'class standard spec.config.postgresVersion',
    );
    expect(field(mergeConfig(observation({ postgresVersion: '9.6' })))).toBe('spec.postgresVersion');
    expect(mergeConfig(observation({ postgresVersion: '13' })).ok).toBe(true);
  });

  it('a major upgrade of the running cluster to 14 or 15', () => {
    const running = { imageName: `${POSTGRES_IMAGE}:13.20` };
    const r = invalid(mergeConfig(observation({ postgresVersion: '15' }, makeClass(), running)));
    expect(r.field).toBe('spec.postgresVersion');
    expect(r.message).toContain('16 or newer');
    expect(field(mergeConfig(observation({}, classWith({ postgresVersion: '14' }), running)))).toBe(
      'class standard spec.config.postgresVersion',
    );
    expect(mergeConfig(observation({ postgresVersion: '16' }, makeClass(), running)).ok).toBe(true);
    expect(mergeConfig(observation({ postgresVersion: '13.21' }, makeClass(), running)).ok).toBe(true);
  });

  it('a pg_hba line with a podselector reference, in the list in effect (stored before the CRD rule)', () => {
    const reference = 'host all all \u0024{podselector:app} scram-sha-256';
    const ok = 'host all all 10.0.0.0/8 scram-sha-256';
    const refused = invalid(mergeConfig(observation({ pgHBA: [ok, reference] })));
    expect(refused.field).toBe('spec.pgHBA[1]');
    expect(refused.message).toContain('podSelectorRefs');
    // The class's lines count only while the cluster sets none of its own: the cluster's list replaces them.
    expect(field(mergeConfig(observation({}, classWith({ pgHBA: [reference] }))))).toBe(
      'class standard spec.config.pgHBA[0]',
    );
    expect(mergeConfig(observation({ pgHBA: [ok] }, classWith({ pgHBA: [reference] }))).ok).toBe(true);
  });

  it('a reserved role name', () => {
    for (const name of ['postgres', 'streaming_replica', 'cnpg_x', 'pg_read_all_data']) {
      const r = invalid(mergeConfig(observation({ managedRoles: [{ name: 'app' }, { name }] })));
      expect(r.field).toBe('spec.managedRoles[1].name');
      expect(r.message).toContain(name);
    }
    expect(mergeConfig(observation({ managedRoles: [{ name: 'postgres_app' }, { name: 'pgadmin' }] })).ok).toBe(true);
  });

  it('a role password Secret name that no Secret can have (stored before the CRD rule)', () => {
    for (const name of ['app/password', 'App-Password', 'app..password', '-app', 'app.', 'a_b']) {
      const roles = [{ name: 'app' }, { name: 'batch', passwordSecretRef: { name } }];
      const r = invalid(mergeConfig(observation({ managedRoles: roles })));
      expect(r.field).toBe('spec.managedRoles[1].passwordSecretRef.name');
      expect(r.message).toContain('DNS-1123 subdomain');
    }
    for (const name of ['app-password', 'app.password', '1', 'a.b-c.d9', 'x'.repeat(253)]) {
      expect(mergeConfig(observation({ managedRoles: [{ name: 'app', passwordSecretRef: { name } }] })).ok, name).toBe(
        true,
      );
    }
  });

  it('a fixed parameter, from the class or the cluster', () => {
    const fromClass = invalid(mergeConfig(observation({}, classWith({ postgresqlConfig: { port: '5433' } }))));
    expect(fromClass.field).toBe('class standard spec.config.postgresqlConfig.port');
    expect(fromClass.message).toContain('CloudNativePG fixes this parameter');
    expect(field(mergeConfig(observation({ postgresqlConfig: { listen_addresses: '*' } })))).toBe(
      'spec.postgresqlConfig.listen_addresses',
    );
    expect(mergeConfig(observation({ postgresqlConfig: { log_min_duration_statement: '1s' } })).ok).toBe(true);
  });

  it('a parameter name longer than 128 characters', () => {
    // The key is quoted and cut short: a stored object's key can be as long as the object.
    expect(field(mergeConfig(observation({ postgresqlConfig: { ['x'.repeat(129)]: '1' } })))).toBe(
      `spec.postgresqlConfig["${'x'.repeat(64)}"…]`,
    );
  });

  it('wal_level minimal, from the class', () => {
    const r = invalid(mergeConfig(observation({}, classWith({ postgresqlConfig: { wal_level: 'minimal' } }))));
    expect(r.field).toBe('class standard spec.config.postgresqlConfig.wal_level');
    expect(mergeConfig(observation({ postgresqlConfig: { wal_level: 'logical' } })).ok).toBe(true);
  });

  it('a boolean parameter that is no PostgreSQL boolean', () => {
    const r = invalid(mergeConfig(observation({ postgresqlConfig: { hot_standby_feedback: 'sure' } })));
    expect(r.field).toBe('spec.postgresqlConfig.hot_standby_feedback');
    expect(mergeConfig(observation({ postgresqlConfig: { hot_standby_feedback: 'On' } })).ok).toBe(true);
  });

  it('a size CNPG cannot read', () => {
    const r = invalid(mergeConfig(observation({}, classWith({ postgresqlConfig: { shared_buffers: '1G' } }))));
    expect(r.field).toBe('class standard spec.config.postgresqlConfig.shared_buffers');
    expect(mergeConfig(observation({ postgresqlConfig: { shared_buffers: '1GB' } })).ok).toBe(true);
  });

  it('min_wal_size not below max_wal_size, counting the default and the class', () => {
    // 2GB is not below CNPG's default max_wal_size of 1GB ...
    expect(field(mergeConfig(observation({ postgresqlConfig: { min_wal_size: '2GB' } })))).toBe(
      'spec.postgresqlConfig.min_wal_size',
    );
    // ... nor below a class's max_wal_size of 2GB; a class max of 4GB holds it.
    const r = invalid(
      mergeConfig(
        observation(
          { postgresqlConfig: { min_wal_size: '2GB' } },
          classWith({ postgresqlConfig: { max_wal_size: '2GB' } }),
        ),
      ),
    );
    expect(r.message).toContain('max_wal_size (2GB)');
    expect(
      mergeConfig(
        observation(
          { postgresqlConfig: { min_wal_size: '2GB' } },
          classWith({ postgresqlConfig: { max_wal_size: '4GB' } }),
        ),
      ).ok,
    ).toBe(true);
    expect(field(mergeConfig(observation({ postgresqlConfig: { max_wal_size: '64MB' } })))).toBe(
      'spec.postgresqlConfig.max_wal_size',
    );
  });

  it('wal_log_hints off with more than one instance from the class', () => {
    const r = invalid(mergeConfig(observation({ postgresqlConfig: { wal_log_hints: 'off' } })));
    expect(r.field).toBe('spec.postgresqlConfig.wal_log_hints');
    expect(r.message).toContain('class standard spec.config.instances');
    expect(mergeConfig(observation({ instances: 1, postgresqlConfig: { wal_log_hints: 'off' } })).ok).toBe(true);
  });

  it('a pg_failover_slots parameter without hot_standby_feedback on', () => {
    const r = invalid(
      mergeConfig(observation({ postgresqlConfig: { 'pg_failover_slots.synchronize_slot_names': 'x' } })),
    );
    // Set nowhere: the cluster that asked for pg_failover_slots is the one to set it, not a class that never did.
    expect(r.field).toBe('spec.postgresqlConfig.hot_standby_feedback');
    const off = classWith({ postgresqlConfig: { hot_standby_feedback: 'off' } });
    expect(
      invalid(mergeConfig(observation({ postgresqlConfig: { 'pg_failover_slots.synchronize_slot_names': 'x' } }, off)))
        .field,
    ).toBe('class standard spec.config.postgresqlConfig.hot_standby_feedback');
    const on = classWith({ postgresqlConfig: { hot_standby_feedback: 'on' } });
    expect(
      mergeConfig(observation({ postgresqlConfig: { 'pg_failover_slots.synchronize_slot_names': 'x' } }, on)).ok,
    ).toBe(true);
  });

  it('a request above its limit, from the class', () => {
    const cls = classWith({ resources: { requests: { memory: '2Gi' }, limits: { memory: '1Gi' } } });
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toBe('class standard spec.config.resources.requests.memory');
    expect(field(mergeConfig(observation({ resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } })))).toBe(
      'spec.resources.requests.cpu',
    );
    // A zero limit is no limit to CNPG; equal amounts in other units are equal.
    expect(mergeConfig(observation({ resources: { requests: { cpu: '2' }, limits: { cpu: '0' } } })).ok).toBe(true);
    expect(mergeConfig(observation({ resources: { requests: { cpu: '1' }, limits: { cpu: '1000m' } } })).ok).toBe(true);
  });

  it('hugepages whose request differs from the limit, or without cpu or memory', () => {
    expect(
      field(
        mergeConfig(
          observation({
            resources: { requests: { memory: '1Gi', 'hugepages-2Mi': '1Gi' }, limits: { 'hugepages-2Mi': '2Gi' } },
          }),
        ),
      ),
    ).toBe('spec.resources.requests.hugepages-2Mi');
    expect(field(mergeConfig(observation({ resources: { limits: { 'hugepages-2Mi': '1Gi' } } })))).toBe(
      'spec.resources',
    );
  });

  it("the cluster's memory request below the class's shared_buffers", () => {
    const cls = classWith({ postgresqlConfig: { shared_buffers: '2GB' } });
    const r = invalid(mergeConfig(observation({ resources: { requests: { memory: '1Gi' } } }, cls)));
    expect(r.field).toBe('spec.resources.requests.memory');
    expect(r.message).toContain('class standard spec.config.postgresqlConfig.shared_buffers');
    expect(mergeConfig(observation({ resources: { requests: { memory: '2Gi' } } }, cls)).ok).toBe(true);
    // Hugepages that hold shared_buffers are enough, as for CNPG.
    const huge = { requests: { memory: '1Gi', 'hugepages-1Gi': '2Gi' }, limits: { 'hugepages-1Gi': '2Gi' } };
    expect(mergeConfig(observation({ resources: huge }, cls)).ok).toBe(true);
  });

  it('a PgBouncer parameter CNPG reserves in the class, once the pooler is on', () => {
    const cls = makeClass({ cnpg: { connectionPooler: { parameters: { listen_port: '6433' } } } });
    const r = invalid(mergeConfig(observation({ connectionPoolerEnabled: true }, cls)));
    expect(r.field).toBe('class standard spec.cnpg.connectionPooler.parameters.listen_port');
    // Only a pooler that is written can be refused.
    expect(mergeConfig(observation({ connectionPoolerEnabled: false }, cls)).ok).toBe(true);
  });
});

describe('malformed input never throws', () => {
  const malformedSpecs: Array<[string, unknown, RegExp]> = [
    ['instances as a string', { class: 'standard', instances: '3' }, /^spec\.instances$/],
    ['storage as a number', { class: 'standard', storage: 10 }, /^spec\.storage$/],
    ['storage not a quantity', { class: 'standard', storage: 'ten gigs' }, /^spec\.storage$/],
    ['postgresVersion not a version', { class: 'standard', postgresVersion: 'latest' }, /^spec\.postgresVersion$/],
    ['managedRoles as a string', { class: 'standard', managedRoles: 'app' }, /^spec\.managedRoles/],
    ['a role without a name', { class: 'standard', managedRoles: [{}] }, /^spec\.managedRoles\[0\]/],
    ['a parameter value as a number', { class: 'standard', postgresqlConfig: { a: 1 } }, /^spec\.postgresqlConfig/],
    ['pgHBA as a string', { class: 'standard', pgHBA: 'host all all' }, /^spec\.pgHBA$/],
    [
      'resources with a bad quantity',
      { class: 'standard', resources: { requests: { cpu: 'lots' } } },
      /^spec\.resources/,
    ],
    ['no class', {}, /^spec\.class$/],
    [
      'a deletion policy that does not exist',
      { class: 'standard', clusterDeletionPolicy: 'Orphan' },
      /^spec\.clusterDeletionPolicy$/,
    ],
  ];

  it.each(malformedSpecs)('%s gives ok:false naming the field', (_what, spec, field) => {
    const base = world();
    const obs = { ...base, cluster: { ...base.cluster, spec: spec as never } };
    let result: MergeResult | undefined;
    expect(() => {
      result = mergeConfig(obs);
    }).not.toThrow();
    const r = invalid(result as MergeResult);
    expect(r.field).toMatch(field);
  });

  it.each([
    ['a missing spec', undefined],
    ['a null spec', null],
    ['a spec that is a string', 'standard'],
  ])('%s gives ok:false and names the spec', (_what, spec) => {
    const base = world();
    const obs = { ...base, cluster: { ...base.cluster, spec: spec as never } };
    let result: MergeResult | undefined;
    expect(() => {
      result = mergeConfig(obs);
    }).not.toThrow();
    const r = invalid(result as MergeResult);
    expect(r.field).toMatch(/^spec\b/);
  });

  // The field of a spec that is not an object at all is `spec` itself, not `spec.` with a dangling dot.
  it.each([
    ['a missing spec', undefined],
    ['a null spec', null],
  ])('%s names the field exactly "spec"', (_what, spec) => {
    const base = world();
    const r = invalid(mergeConfig({ ...base, cluster: { ...base.cluster, spec: spec as never } }));
    expect(r.field).toBe('spec');
  });

  it('a missing class spec names the field exactly "class standard spec"', () => {
    const cls = { ...makeClass(), spec: undefined as never };
    const r = invalid(mergeConfig(observation({}, cls)));
    expect(r.field).toBe('class standard spec');
  });

  it.each([
    ['a missing class spec', undefined],
    ['a class config that is null', { provisioner: 'postgresql.cnpg.io', config: null }],
    ['a foreign provisioner', { provisioner: 'zalando' }],
    ['class instances out of range', { provisioner: 'postgresql.cnpg.io', config: { instances: 0 } }],
  ])('%s gives ok:false naming the class', (_what, classSpec) => {
    const cls = { ...makeClass(), spec: classSpec as never };
    let result: MergeResult | undefined;
    expect(() => {
      result = mergeConfig(observation({}, cls));
    }).not.toThrow();
    const r = invalid(result as MergeResult);
    expect(r.field).toMatch(/^class standard spec/);
  });
});

describe('merging once per change of its inputs', () => {
  const same = (o: Observation): Observation => structuredClone(o);

  it('answers the same merge while spec, class and CNPG’s running storage and image stay, whatever else changed', () => {
    const first = observation({ instances: 2 }, makeClass(), { storage: { size: '1Gi' } });
    const merged = mergeConfig(first);
    const later = same(first);
    later.cluster.status = { state: 'Ready' } as typeof later.cluster.status;
    later.cluster.metadata.resourceVersion = '999';
    expect(mergeConfig(later)).toBe(merged);
  });

  it('merges again when any input changes, even an object changed in place', () => {
    const o = observation({ instances: 2 }, makeClass(), { storage: { size: '1Gi' } });
    const merged = mergeConfig(o);
    o.cluster.spec.instances = 0;
    expect(invalid(mergeConfig(o)).field).toBe('spec.instances');
    o.cluster.spec.instances = 2;
    expect(config(mergeConfig(o))).toEqual(config(merged));
    const classChanged = same(o);
    classChanged.clusterClass = makeClass({ cnpg: { primaryUpdateMethod: 'restart' } });
    expect(config(mergeConfig(classChanged)).primaryUpdateMethod).toBe('restart');
    const shrunk = observation({ instances: 2, storage: '1Gi' }, makeClass(), { storage: { size: '5Gi' } });
    expect(invalid(mergeConfig(shrunk)).field).toBe('spec.storage');
    const image = same(shrunk);
    if (image.cnpg)
      image.cnpg.spec = { ...image.cnpg.spec, storage: { size: '1Gi' }, imageName: `${POSTGRES_IMAGE}:18` };
    expect(invalid(mergeConfig(image)).field).toBe('spec.postgresVersion');
  });

  it('remembers a bounded number of clusters: the oldest is merged again', async () => {
    const { MAX_REMEMBERED_MERGES } = await import('../../../src/operator/domain/config.ts');
    const oldest = observation({ instances: 2 });
    oldest.cluster.metadata.uid = 'oldest';
    const merged = mergeConfig(oldest);
    expect(mergeConfig(same(oldest))).toBe(merged);
    const other = same(oldest);
    for (let i = 0; i < MAX_REMEMBERED_MERGES; i++) {
      other.cluster.metadata.uid = `other-${i}`;
      mergeConfig(other);
    }
    const again = mergeConfig(same(oldest));
    expect(again).not.toBe(merged);
    expect(again).toEqual(merged);
  });
});

describe('backups and restore in the merge check (domain/backup/policy.ts)', () => {
  const POLICY = {
    objectStore: { destinationPath: 's3://pg-backups/prod', credentials: { secretName: 's3-creds' } },
    schedule: '30 2 * * *',
    retention: '7d',
  };
  const withPolicy = (backup: Partial<typeof POLICY> = {}) => makeClass({ backup: { ...POLICY, ...backup } });

  it('a class policy backs up every cluster of the class, with the default credential keys', () => {
    const c = config(mergeConfig(observation({}, withPolicy())));
    expect(c.backup).toEqual({
      store: {
        destinationPath: 's3://pg-backups/prod',
        credentials: {
          secretName: 's3-creds',
          accessKeyIdKey: 'ACCESS_KEY_ID',
          secretAccessKeyKey: 'ACCESS_SECRET_KEY',
        },
      },
      schedule: '30 2 * * *',
      retention: '7d',
    });
    expect(c.restore).toBeUndefined();
  });

  it("a cluster's schedule and retention win over the class's; enabled false switches backups off", () => {
    const own = config(mergeConfig(observation({ backup: { schedule: '0 4 * * 0', retention: '4w' } }, withPolicy())));
    expect(own.backup).toMatchObject({ schedule: '0 4 * * 0', retention: '4w' });
    expect(config(mergeConfig(observation({ backup: { enabled: false } }, withPolicy()))).backup).toBeUndefined();
  });

  it('no backup policy and no backup field: nothing about backups in the merged config', () => {
    const c = config(mergeConfig(observation({})));
    expect('backup' in c || 'restore' in c).toBe(false);
  });

  it('backup.enabled true with a class that has no backup policy', () => {
    const refused = invalid(mergeConfig(observation({ backup: { enabled: true } })));
    expect(refused.field).toBe('spec.backup.enabled');
    expect(refused.message).toContain('class standard');
  });

  it('a backup schedule or retention with nothing to apply it to (no class policy, or enabled false)', () => {
    expect(invalid(mergeConfig(observation({ backup: { schedule: '0 4 * * *' } }))).field).toBe('spec.backup.schedule');
    expect(invalid(mergeConfig(observation({ backup: { retention: '7d' } }))).field).toBe('spec.backup.retention');
    const off = observation({ backup: { enabled: false, retention: '7d' } }, withPolicy());
    expect(invalid(mergeConfig(off)).field).toBe('spec.backup.retention');
  });

  it("a backup schedule that is no 5-field cron, from the cluster or the class (stored before the CRD's rule)", () => {
    const own = invalid(mergeConfig(observation({ backup: { schedule: '0 30 2 * * *' } }, withPolicy())));
    expect(own.field).toBe('spec.backup.schedule');
    expect(own.message).toContain('5-field cron');
    const fromClass = invalid(mergeConfig(observation({}, withPolicy({ schedule: '0 5-1 * * *' }))));
    expect(fromClass.field).toBe('class standard spec.backup.schedule');
    expect(fromClass.message).toContain('starts after it ends');
  });

  it('a restore with a class that has no backup policy to read from', () => {
    const refused = invalid(mergeConfig(observation({ restore: { source: { cluster: 'orders-old' } } })));
    expect(refused.field).toBe('spec.restore');
    expect(refused.message).toContain('no object store to restore from');
  });

  it('a restore source naming both or neither of cluster and serverName, or this cluster itself', () => {
    const both = { cluster: 'a', serverName: 'a-3f2a9c1d' };
    expect(invalid(mergeConfig(observation({ restore: { source: both } }, withPolicy()))).field).toBe(
      'spec.restore.source',
    );
    expect(invalid(mergeConfig(observation({ restore: { source: {} } }, withPolicy()))).field).toBe(
      'spec.restore.source',
    );
    const self = observation({ restore: { source: { cluster: 'orders' } } }, withPolicy());
    expect(invalid(mergeConfig(self)).field).toBe('spec.restore.source.cluster');
    const own = observation({}, withPolicy());
    own.cluster.spec.restore = { source: { serverName: `orders-${(own.cluster.metadata.uid ?? '').slice(0, 8)}` } };
    expect(invalid(mergeConfig(own)).field).toBe('spec.restore.source.serverName');
  });

  it.each([
    ['2026-11-20T10:15:30', 'no zone (CNPG would read it as UTC)'],
    ['2026-02-30T10:15:30Z', 'no day of the calendar'],
    ['2026-11-20 10:15:30Z', 'a space for the T'],
  ])('a restore targetTime %j: %s', (targetTime) => {
    const o = observation({ restore: { source: { cluster: 'orders-old' }, targetTime } }, withPolicy());
    const refused = invalid(mergeConfig(o));
    expect(refused.field).toBe('spec.restore.targetTime');
    expect(refused.message).toContain('RFC 3339 time with a zone');
  });

  it('a restore merges with the class store, and backs up under its own name unless switched off', () => {
    const targetTime = '2026-11-20T11:15:30.123456+01:00';
    const c = config(
      mergeConfig(observation({ restore: { source: { cluster: 'orders-old' }, targetTime } }, withPolicy())),
    );
    expect(c.restore).toEqual({ source: { cluster: 'orders-old' }, targetTime, store: c.backup?.store });
    const off = observation(
      { backup: { enabled: false }, restore: { source: { serverName: 'gone-3f2a9c1d' } } },
      withPolicy(),
    );
    const restoredOnly = config(mergeConfig(off));
    expect(restoredOnly.backup).toBeUndefined();
    expect(restoredOnly.restore?.source).toEqual({ serverName: 'gone-3f2a9c1d' });
  });
});
