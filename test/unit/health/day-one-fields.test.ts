/**
 * The day-one CNPG fields (storage class, WAL volume, affinity, topology spread, monitoring, a pinned image):
 * merged as the other fields are (the class gives defaults, the cluster overrides), written into the CNPG Cluster,
 * guarded against what CNPG would refuse or apply only in part, and owned by pgfsm only once it sends them. And
 * the contract beside them: a CNPG Cluster field pgfsm does not set (spec.backup) is the user's, never drift.
 */
import { describe, expect, it } from 'vitest';
import type { PostgresClusterClass, PostgresClusterSpec } from '../../../src/operator/api/schema.ts';
import { cnpgDrift, desiredCnpgCluster } from '../../../src/operator/domain/components/cluster.ts';
import { mergeConfig } from '../../../src/operator/domain/config.ts';
import type { CnpgCluster } from '../../../src/operator/domain/objects.ts';
import type { Observation } from '../../../src/operator/domain/observation.ts';
import { OWNED_FIELDS_ANNOTATION } from '../../../src/operator/domain/owned-keys.ts';
import { config, invalid, makeClass, world } from './support.ts';

/**
 * A healthy world whose cluster spec is `spec` over the class `standard`, its CNPG Cluster edited by `running`;
 * without `running`, the CNPG Cluster was created for this spec, so its volumes have the class it names (a class
 * is decided when the volumes are created: one added later is refused).
 */
function observation(
  spec: Partial<PostgresClusterSpec>,
  clusterClass: PostgresClusterClass = makeClass(),
  running?: (cnpg: CnpgCluster) => void,
): Observation {
  const base = world();
  const cnpg = base.cnpg && structuredClone(base.cnpg);
  const createdWith = spec.storageClass ?? clusterClass.spec.config?.storageClass;
  if (cnpg && running) running(cnpg);
  else if (cnpg && createdWith) cnpg.spec.storage = { ...cnpg.spec.storage, storageClass: createdWith };
  return { ...base, cluster: { ...base.cluster, spec: { class: 'standard', ...spec } }, clusterClass, cnpg };
}

const classWith = (config: NonNullable<PostgresClusterClass['spec']['config']>) =>
  makeClass({ config: { instances: 3, storage: '10Gi', postgresVersion: '17', ...config } });

/** The CNPG Cluster pgfsm would write for an observation. */
function desiredOf(o: Observation): CnpgCluster {
  return desiredCnpgCluster(o, config(mergeConfig(o)));
}

/** The world after pgfsm's write landed: the observed CNPG Cluster is what it sent, plus `extra` by others. */
function landed(o: Observation, extra?: (cnpg: CnpgCluster) => void): Observation {
  const cnpg = structuredClone(desiredOf(o));
  cnpg.status = o.cnpg?.status;
  extra?.(cnpg);
  return { ...o, cnpg };
}

describe('merging the day-one fields', () => {
  it('the class gives every one of them, the cluster sending none', () => {
    const c = config(
      mergeConfig(
        observation(
          {},
          classWith({
            storageClass: 'fast',
            walStorage: { size: '2Gi', storageClass: 'wal' },
            affinity: { topologyKey: 'topology.kubernetes.io/zone', tolerations: [{ key: 'db', operator: 'Exists' }] },
            topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway' }],
            monitoring: { enablePodMonitor: true },
          }),
        ),
      ),
    );
    expect(c).toMatchObject({
      storageClass: 'fast',
      walStorage: { size: '2Gi', storageClass: 'wal' },
      affinity: { topologyKey: 'topology.kubernetes.io/zone', tolerations: [{ key: 'db', operator: 'Exists' }] },
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway' }],
      monitoring: { enablePodMonitor: true },
    });
  });

  it('the cluster overrides field by field; lists and maps are replaced whole', () => {
    const c = config(
      mergeConfig(
        observation(
          {
            storageClass: 'premium',
            walStorage: { size: '5Gi' },
            affinity: { podAntiAffinityType: 'required', tolerations: [] },
            topologySpreadConstraints: [{ maxSkew: 2, topologyKey: 'host', whenUnsatisfiable: 'DoNotSchedule' }],
            monitoring: { enablePodMonitor: false },
          },
          classWith({
            storageClass: 'fast',
            walStorage: { size: '2Gi', storageClass: 'wal' },
            affinity: { topologyKey: 'zone', nodeSelector: { db: 'yes' }, tolerations: [{ operator: 'Exists' }] },
            topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway' }],
            monitoring: { enablePodMonitor: true },
          }),
        ),
      ),
    );
    expect(c.storageClass).toBe('premium');
    expect(c.walStorage).toEqual({ size: '5Gi', storageClass: 'wal' });
    expect(c.affinity).toEqual({
      topologyKey: 'zone',
      nodeSelector: { db: 'yes' },
      podAntiAffinityType: 'required',
      tolerations: [],
    });
    expect(c.topologySpreadConstraints).toEqual([
      { maxSkew: 2, topologyKey: 'host', whenUnsatisfiable: 'DoNotSchedule' },
    ]);
    expect(c.monitoring).toEqual({ enablePodMonitor: false });
  });

  it('sends none of them when neither sets them: the CNPG Cluster is what it always was', () => {
    const cnpg = desiredOf(observation({}));
    for (const field of ['walStorage', 'affinity', 'topologySpreadConstraints', 'monitoring']) {
      expect(cnpg.spec, field).not.toHaveProperty(field);
    }
    expect(cnpg.spec.storage).toEqual({ size: '10Gi' });
    expect(cnpg.metadata.annotations).not.toHaveProperty(OWNED_FIELDS_ANNOTATION);
  });

  it('maps each onto the CNPG Cluster spec, and lists them in the owned-fields annotation', () => {
    const cnpg = desiredOf(
      observation({
        storageClass: 'fast',
        walStorage: { size: '2Gi' },
        affinity: { enablePodAntiAffinity: true, nodeSelector: { 'node-role/db': 'true' } },
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }],
        monitoring: { enablePodMonitor: true },
      }),
    );
    expect(cnpg.spec.storage).toEqual({ size: '10Gi', storageClass: 'fast' });
    expect(cnpg.spec.walStorage).toEqual({ size: '2Gi' });
    expect(cnpg.spec.affinity).toEqual({ enablePodAntiAffinity: true, nodeSelector: { 'node-role/db': 'true' } });
    expect(cnpg.spec.monitoring).toEqual({ enablePodMonitor: true });
    // Without a selector of its own, a constraint counts this cluster's instances.
    expect(cnpg.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'zone',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { 'cnpg.io/cluster': cnpg.metadata.name } },
      },
    ]);
    expect(cnpg.metadata.annotations?.[OWNED_FIELDS_ANNOTATION]).toBe(
      'affinity.enablePodAntiAffinity,affinity.nodeSelector,monitoring.enablePodMonitor,storage.storageClass,topologySpreadConstraints,walStorage',
    );
  });

  it('keeps a selector the constraint has', () => {
    const labelSelector = { matchExpressions: [{ key: 'app', operator: 'In' as const, values: ['db'] }] };
    const cnpg = desiredOf(
      observation({
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector },
        ],
      }),
    );
    expect(cnpg.spec.topologySpreadConstraints?.[0]?.labelSelector).toEqual(labelSelector);
  });
});

describe('a pinned image (imageName) and postgresVersion', () => {
  it('imageName wins: the CNPG Cluster runs it, and the version is read from its tag', () => {
    const image = `registry.example/team/postgresql:17.4-custom@sha256:${'a'.repeat(64)}`;
    const o = observation({ imageName: image }, makeClass({ config: { instances: 1, storage: '10Gi' } }));
    expect(config(mergeConfig(o)).postgresVersion).toBe('17.4');
    expect(desiredOf(o).spec.imageName).toBe(image);
  });

  it('a postgresVersion of the same major may stand beside it', () => {
    const o = observation({
      imageName: 'ghcr.io/cloudnative-pg/postgresql:17.2-standard-bookworm',
      postgresVersion: '17',
    });
    expect(mergeConfig(o).ok).toBe(true);
  });

  it('a postgresVersion of another major is refused, naming where each was set', () => {
    const r = invalid(mergeConfig(observation({ imageName: 'ghcr.io/cloudnative-pg/postgresql:18.1' })));
    // The class's postgresVersion 17 meets the cluster's image of 18.
    expect(r.field).toBe('class standard spec.config.postgresVersion');
    expect(r.message).toContain('spec.imageName');
    const own = invalid(mergeConfig(observation({ imageName: 'postgres:16-alpine', postgresVersion: '17' })));
    expect(own.field).toBe('spec.postgresVersion');
  });

  it('a class pinning an image: its clusters follow it, one of another major must pin its own', () => {
    const pinned = makeClass({ config: { instances: 1, storage: '10Gi', imageName: 'postgres:17.2' } });
    expect(desiredOf(observation({}, pinned)).spec.imageName).toBe('postgres:17.2');
    expect(invalid(mergeConfig(observation({ postgresVersion: '18' }, pinned))).field).toBe('spec.postgresVersion');
    expect(mergeConfig(observation({ postgresVersion: '18', imageName: 'postgres:18' }, pinned)).ok).toBe(true);
  });

  it.each([['postgres:latest'], [`postgres@sha256:${'a'.repeat(64)}`], ['postgres'], ['postgres:17beta1']])(
    'an image CNPG cannot read a version from (%s), stored before the CRD rule, stalls naming imageName',
    (imageName) => {
      const r = invalid(mergeConfig(observation({ imageName })));
      expect(r.field).toBe('spec.imageName');
    },
  );

  it('its major cannot go down from the one CNPG runs', () => {
    const r = invalid(
      mergeConfig(
        observation(
          { imageName: 'postgres:16.4', postgresVersion: undefined },
          makeClass({ config: { instances: 1, storage: '10Gi' } }),
          (cnpg) => {
            cnpg.spec.imageName = 'ghcr.io/cloudnative-pg/postgresql:17.2';
          },
        ),
      ),
    );
    expect(r.field).toBe('spec.imageName');
    expect(r.message).toContain('cannot go down from 17.2');
  });

  it('a digest after the tag is no version (the running image is read by its tag)', () => {
    const o = observation({ postgresVersion: '17' }, makeClass(), (cnpg) => {
      cnpg.spec.imageName = `ghcr.io/cloudnative-pg/postgresql:17.2@sha256:9${'a'.repeat(63)}`;
    });
    expect(mergeConfig(o).ok).toBe(true);
  });
});

describe('volumes against what CNPG runs', () => {
  const runs = (edit: (cnpg: CnpgCluster) => void, owned?: string) => (cnpg: CnpgCluster) => {
    edit(cnpg);
    if (owned) cnpg.metadata.annotations = { ...cnpg.metadata.annotations, [OWNED_FIELDS_ANNOTATION]: owned };
  };

  it('a storage class other than the one the volumes have is refused, naming where it was set', () => {
    const running = runs((c) => {
      c.spec.storage = { size: '10Gi', storageClass: 'fast' };
    }, 'storage.storageClass');
    expect(invalid(mergeConfig(observation({ storageClass: 'slow' }, makeClass(), running))).field).toBe(
      'spec.storageClass',
    );
    const fromClass = invalid(mergeConfig(observation({}, classWith({ storageClass: 'slow' }), running)));
    expect(fromClass.field).toBe('class standard spec.config.storageClass');
    expect(fromClass.message).toContain('only to volumes it creates later');
    expect(mergeConfig(observation({ storageClass: 'fast' }, makeClass(), running)).ok).toBe(true);
  });

  it('a storage class pgfsm set cannot be dropped; one someone else set on the CNPG Cluster is theirs', () => {
    const set = (owned?: string) =>
      runs((c) => {
        c.spec.storage = { size: '10Gi', storageClass: 'fast' };
      }, owned);
    expect(invalid(mergeConfig(observation({}, makeClass(), set('storage.storageClass')))).field).toBe(
      'spec.storageClass',
    );
    expect(mergeConfig(observation({}, makeClass(), set())).ok).toBe(true);
  });

  it('a storage class added to volumes created without one is refused, unless pgfsm sent it before (drift)', () => {
    const without = (owned?: string) =>
      runs((c) => {
        c.spec.storage = { size: '10Gi' };
      }, owned);
    const added = invalid(mergeConfig(observation({ storageClass: 'fast' }, makeClass(), without())));
    expect(added.field).toBe('spec.storageClass');
    expect(added.message).toContain('cannot be added');
    expect(invalid(mergeConfig(observation({}, classWith({ storageClass: 'fast' }), without()))).field).toBe(
      'class standard spec.config.storageClass',
    );
    expect(mergeConfig(observation({ storageClass: 'fast' }, makeClass(), without('storage.storageClass'))).ok).toBe(
      true,
    );
    expect(mergeConfig(observation({}, makeClass(), without())).ok).toBe(true);
  });

  it('a storage class added to WAL volumes created without one is refused', () => {
    const running = runs((c) => {
      c.spec.walStorage = { size: '4Gi' };
    }, 'walStorage');
    const added = invalid(
      mergeConfig(observation({ walStorage: { size: '4Gi', storageClass: 'wal' } }, makeClass(), running)),
    );
    expect(added.field).toBe('spec.walStorage.storageClass');
    expect(added.message).toContain('cannot be added');
    expect(mergeConfig(observation({ walStorage: { size: '8Gi' } }, makeClass(), running)).ok).toBe(true);
  });

  it('a WAL volume cannot be removed, shrink or change class; it can be added and grow', () => {
    const wal = (owned = 'walStorage,walStorage.storageClass') =>
      runs((c) => {
        c.spec.walStorage = { size: '4Gi', storageClass: 'wal' };
      }, owned);
    expect(invalid(mergeConfig(observation({}, makeClass(), wal()))).field).toBe('spec.walStorage');
    expect(mergeConfig(observation({}, makeClass(), wal(''))).ok).toBe(true);
    const shrink = invalid(
      mergeConfig(observation({ walStorage: { size: '2Gi', storageClass: 'wal' } }, makeClass(), wal())),
    );
    expect(shrink.field).toBe('spec.walStorage.size');
    expect(shrink.message).toContain('cannot shrink from 4Gi to 2Gi');
    const other = invalid(
      mergeConfig(observation({ walStorage: { size: '4Gi', storageClass: 'ssd' } }, makeClass(), wal())),
    );
    expect(other.field).toBe('spec.walStorage.storageClass');
    const dropped = invalid(mergeConfig(observation({ walStorage: { size: '4Gi' } }, makeClass(), wal())));
    expect(dropped.field).toBe('spec.walStorage.storageClass');
    expect(
      mergeConfig(observation({ walStorage: { size: '4096Mi', storageClass: 'wal' } }, makeClass(), wal())).ok,
    ).toBe(true);
    expect(mergeConfig(observation({ walStorage: { size: '8Gi', storageClass: 'wal' } }, makeClass(), wal())).ok).toBe(
      true,
    );
    expect(mergeConfig(observation({ walStorage: { size: '2Gi' } })).ok).toBe(true);
  });
});

describe('scheduling rules on objects stored before the CRD rules', () => {
  it.each([
    [
      { affinity: { tolerations: [{ operator: 'Equal' as const, value: 'x' }] } },
      'spec.affinity.tolerations[0].operator',
    ],
    [{ affinity: { tolerations: [{ key: 'k', tolerationSeconds: 60 }] } }, 'spec.affinity.tolerations[0].effect'],
    [
      { affinity: { tolerations: [{ key: 'k', operator: 'Exists' as const, value: 'v' }] } },
      'spec.affinity.tolerations[0].value',
    ],
    [
      {
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'z', whenUnsatisfiable: 'ScheduleAnyway' as const, minDomains: 2 },
        ],
      },
      'spec.topologySpreadConstraints[0].minDomains',
    ],
    [
      {
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'z',
            whenUnsatisfiable: 'DoNotSchedule' as const,
            labelSelector: { matchExpressions: [{ key: 'a', operator: 'In' as const }] },
          },
        ],
      },
      'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values',
    ],
  ])('%j is refused naming %s', (spec, field) => {
    expect(invalid(mergeConfig(observation(spec))).field).toBe(field);
  });

  it('names the class when the class set it', () => {
    const r = invalid(
      mergeConfig(observation({}, classWith({ affinity: { tolerations: [{ key: 'k', tolerationSeconds: 1 }] } }))),
    );
    expect(r.field).toBe('class standard spec.config.affinity.tolerations[0].effect');
  });
});

describe('drift of the day-one fields: what was sent is found', () => {
  const spec: Partial<PostgresClusterSpec> = {
    storageClass: 'fast',
    walStorage: { size: '2Gi' },
    affinity: { nodeSelector: { db: 'yes' }, tolerations: [{ key: 'db', operator: 'Exists', effect: 'NoSchedule' }] },
    topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }],
    monitoring: { enablePodMonitor: true },
  };

  it('none once the write landed, with CNPG defaults and other managers beside it', () => {
    const o = landed(observation(spec), (cnpg) => {
      // CNPG's defaulting webhook and CRD defaults.
      cnpg.spec.affinity = { ...cnpg.spec.affinity, podAntiAffinityType: 'preferred' };
      cnpg.spec.monitoring = { ...cnpg.spec.monitoring, disableDefaultQueries: false };
      cnpg.spec.walStorage = { ...cnpg.spec.walStorage, resizeInUseVolumes: true } as CnpgCluster['spec']['walStorage'];
      // Someone's node label next to pgfsm's.
      cnpg.spec.affinity.nodeSelector = { ...cnpg.spec.affinity.nodeSelector, rack: 'r1' };
    });
    expect(cnpgDrift(o.cnpg as CnpgCluster, desiredOf(o))).toEqual([]);
  });

  it('each field changed on the CNPG Cluster by hand is drift, named', () => {
    const desired = desiredOf(observation(spec));
    const o = landed(observation(spec), (cnpg) => {
      cnpg.spec.storage = { size: '10Gi', storageClass: 'slow' };
      cnpg.spec.walStorage = { size: '1Gi' };
      cnpg.spec.affinity = { nodeSelector: { db: 'no' }, tolerations: [] };
      cnpg.spec.topologySpreadConstraints = [];
      cnpg.spec.monitoring = { enablePodMonitor: false };
    });
    expect(cnpgDrift(o.cnpg as CnpgCluster, desired)).toEqual([
      'storage.storageClass',
      'walStorage',
      'affinity.nodeSelector',
      'affinity.tolerations',
      'topologySpreadConstraints',
      'monitoring.enablePodMonitor',
    ]);
  });

  it('a field pgfsm sent and no longer sends is drift until the apply removed it', () => {
    const before = landed(observation(spec));
    const now = {
      ...before,
      cluster: { ...before.cluster, spec: { ...before.cluster.spec, affinity: { nodeSelector: { db: 'yes' } } } },
    };
    expect(cnpgDrift(now.cnpg as CnpgCluster, desiredOf(now))).toEqual(['affinity.tolerations']);
    // Server-side apply dropped the field pgfsm owned, and the annotation with it.
    const after = landed(now);
    expect(cnpgDrift(after.cnpg as CnpgCluster, desiredOf(after))).toEqual([]);
  });

  it('the user owns what pgfsm never sent: spec.backup, nodeAffinity, tolerations while pgfsm sends none', () => {
    const o = landed(observation({}), (cnpg) => {
      cnpg.spec.backup = { barmanObjectStore: { destinationPath: 's3://backups/orders' }, retentionPolicy: '30d' };
      cnpg.spec.affinity = { tolerations: [{ key: 'ops', operator: 'Exists' }], nodeAffinity: {} };
      cnpg.spec.topologySpreadConstraints = [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway' }];
    });
    expect(cnpgDrift(o.cnpg as CnpgCluster, desiredOf(o))).toEqual([]);
  });

  it('a change of another field is applied without spec.backup: server-side apply leaves it to its owner', () => {
    const o = landed(observation({}), (cnpg) => {
      cnpg.spec.backup = { barmanObjectStore: { destinationPath: 's3://backups/orders' } };
    });
    const changed = { ...o, cluster: { ...o.cluster, spec: { ...o.cluster.spec, instances: 5 } } };
    // The drift is the change alone; the object applied carries no backup, so server-side apply, which removes only
    // fields the applier owned, leaves the user's spec.backup in place (test/integration/cnpg-rollout.test.ts).
    const desired = desiredOf(changed);
    expect(cnpgDrift(changed.cnpg as CnpgCluster, desired)).toEqual(['instances']);
    expect(desired.spec).not.toHaveProperty('backup');
  });

  it('a cluster pgfsm wrote before these fields existed (no annotation) has no drift', () => {
    const o = landed(observation({}));
    expect(o.cnpg?.metadata.annotations).not.toHaveProperty(OWNED_FIELDS_ANNOTATION);
    expect(cnpgDrift(o.cnpg as CnpgCluster, desiredOf(o))).toEqual([]);
  });
});
