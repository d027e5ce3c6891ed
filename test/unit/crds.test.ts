import { readdirSync, readFileSync } from 'node:fs';
import { evaluate } from '@marcbachmann/cel-js';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import {
  LIMITS,
  MAX_ANNOTATION_BYTES,
  MAX_OBJECT_BYTES,
  PGBOUNCER_PARAMETERS,
} from '../../src/operator/api/cnpg-rules.ts';
import {
  MAX_CLUSTER_NAME_LENGTH,
  type PostgresClusterClassSpec,
  type PostgresClusterSpec,
  schemas,
} from '../../src/operator/api/schema.ts';
import { desiredCnpgCluster } from '../../src/operator/domain/components/cluster.ts';
import { desiredPooler } from '../../src/operator/domain/components/pooler.ts';
import { mergeConfig } from '../../src/operator/domain/config.ts';
import { planDeletionPolicy, planPoolerDeletion } from '../../src/operator/domain/deletion.ts';
import { healthyFacts, makeClass, observe } from '../../src/tools/fixtures/observations.ts';
import {
  type CustomResourceDefinition,
  postgresClusterClassCrd,
  postgresClusterCrd,
  postgresDatabaseCrd,
  renderCrdFiles,
  type StructuralSchema,
} from '../../src/tools/generate/crd-manifests.ts';

const REGENERATE = 'node --conditions=development --import tsx src/tools/generate/crds.ts';
const crdDir = new URL('../../deploy/crds/', import.meta.url);
const crds = [postgresClusterCrd(), postgresClusterClassCrd(), postgresDatabaseCrd()];
const rootOf = (crd: CustomResourceDefinition): StructuralSchema => {
  const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
  if (!root) throw new Error(`${crd.metadata.name} has no schema`);
  return root;
};
const clusterSpec = rootOf(postgresClusterCrd()).properties?.spec;
const classSpec = rootOf(postgresClusterClassCrd()).properties?.spec;

/** Every schema node with its dotted path, descending the three ways a structural schema nests. */
function* nodes(schema: StructuralSchema, path = ''): Generator<[string, StructuralSchema]> {
  yield [path || '<root>', schema];
  for (const [name, child] of Object.entries(schema.properties ?? {})) yield* nodes(child, `${path}.${name}`);
  if (schema.items) yield* nodes(schema.items, `${path}[]`);
  if (schema.additionalProperties) yield* nodes(schema.additionalProperties, `${path}[*]`);
}

/** Every key, at any depth, of any JSON value: forbidden keywords must not hide in defaults or extensions either. */
function* allKeys(value: unknown): Generator<string> {
  if (typeof value !== 'object' || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    yield key;
    yield* allKeys(child);
  }
}

/** Follows a printer column's JSONPath through the schema; a filter such as `[?(@.type=="Ready")]` means items. */
function schemaAt(root: StructuralSchema, jsonPath: string): StructuralSchema | undefined {
  let node: StructuralSchema | undefined = root;
  for (const segment of jsonPath
    .replace(/\[\?\(.*?\)\]/g, '[]')
    .split('.')
    .slice(1)) {
    const name = segment.replace('[]', '');
    if (name === 'creationTimestamp' && node === root.properties?.metadata) return { type: 'string' };
    node = node?.properties?.[name];
    if (segment.endsWith('[]')) node = node?.items;
  }
  return node;
}

const errorPaths = (schema: TSchema, value: unknown) => [...Value.Errors(schema, value)].map((error) => error.path);

const validClusterSpec: PostgresClusterSpec = {
  class: 'standard',
  instances: 3,
  postgresVersion: '17.2',
  storage: '10Gi',
  resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
  postgresqlConfig: { max_connections: '200' },
  pgHBA: ['hostssl all all 10.0.0.0/8 scram-sha-256'],
  connectionPoolerEnabled: true,
  managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-credentials' }, exists: true }],
  clusterDeletionPolicy: 'Retain',
  suspend: false,
};

const validClassSpec: PostgresClusterClassSpec = {
  provisioner: 'postgresql.cnpg.io',
  config: { instances: 3, storage: '20Gi', postgresVersion: '17', connectionPoolerEnabled: true },
  cnpg: { primaryUpdateMethod: 'switchover', connectionPooler: { instances: 2, mode: 'transaction' } },
};

describe('deploy/crds', () => {
  it('holds exactly what src/tools/generate/crds.ts writes now', () => {
    const expected = renderCrdFiles();
    const onDisk = readdirSync(crdDir).filter((name) => name.endsWith('.yaml'));
    expect(onDisk.sort(), `deploy/crds has other files than the generator writes: run ${REGENERATE}`).toEqual(
      Object.keys(expected).sort(),
    );
    for (const [name, text] of Object.entries(expected)) {
      const committed = readFileSync(new URL(name, crdDir), 'utf8');
      expect(committed, `deploy/crds/${name} is stale: run ${REGENERATE}`).toBe(text);
    }
  });

  it('starts every file with the do-not-edit header', () => {
    for (const text of Object.values(renderCrdFiles())) {
      expect(text.split('\n')[0]).toBe(
        '# Generated from src/operator/api/schema.ts by src/tools/generate/crds.ts — do not edit',
      );
    }
  });
});

describe.each(crds.map((crd) => [crd.spec.names.kind, crd] as const))('%s CRD schema', (_kind, crd) => {
  const root = rootOf(crd);

  it('is structural: every node has a type', () => {
    for (const [path, node] of nodes(root)) {
      const typed =
        node.type !== undefined ||
        node['x-kubernetes-int-or-string'] === true ||
        node['x-kubernetes-preserve-unknown-fields'] === true;
      expect(typed, `${path} has no type`).toBe(true);
      expect(
        node.properties && node.additionalProperties,
        `${path} has properties and additionalProperties`,
      ).toBeFalsy();
    }
  });

  it('carries no keyword or TypeBox internal that Kubernetes rejects', () => {
    const keys = new Set(allKeys(crd));
    for (const forbidden of ['$id', '$schema', '$ref', 'const', 'patternProperties', 'anyOf', 'oneOf', 'allOf']) {
      expect(keys.has(forbidden), `${forbidden} appears in the CRD`).toBe(false);
    }
    for (const [path, node] of nodes(root)) {
      expect(node.additionalProperties, `${path} has additionalProperties: false`).not.toBe(false);
      expect(Object.getOwnPropertySymbols(node), `${path} keeps TypeBox symbols`).toEqual([]);
    }
  });

  it('describes the kind and every property, spec and status, nested objects, array items and maps alike', () => {
    // What `kubectl explain` shows: a field without a description reads `<empty>` there.
    expect(root.description?.trim(), `${crd.spec.names.kind} has no description`).toBeTruthy();
    const undescribed: string[] = [];
    for (const [path, node] of nodes(root)) {
      for (const [name, child] of Object.entries(node.properties ?? {})) {
        // The root's metadata may carry nothing but its type (the API server refuses more): ObjectMeta describes it.
        if (path === '<root>' && name === 'metadata') continue;
        if (!child.description?.trim()) undescribed.push(`${path === '<root>' ? '' : path}.${name}`);
      }
      // A map keeps what it is given (x-kubernetes-preserve-unknown-fields) or describes its values: either way it says what it holds.
      if (node['x-kubernetes-preserve-unknown-fields'] && !node.description?.trim()) undescribed.push(path);
    }
    expect(undescribed, 'properties without a description').toEqual([]);
  });

  it('points every printer column at a field of the schema', () => {
    for (const column of crd.spec.versions[0]?.additionalPrinterColumns ?? []) {
      expect(schemaAt(root, column.jsonPath), `${column.name}: ${column.jsonPath}`).toBeDefined();
    }
  });
});

describe('CRD contents', () => {
  it('requires only the fields TypeBox does not mark Optional', () => {
    expect(clusterSpec?.required).toEqual(['class']);
    expect(classSpec?.required).toEqual(['provisioner']);
  });

  it('offers only the pool modes CNPG accepts', () => {
    const mode = classSpec?.properties?.cnpg?.properties?.connectionPooler?.properties?.mode;
    expect(mode?.type).toBe('string');
    expect(mode?.enum).toEqual(['session', 'transaction']);
    // No enum anywhere offers it (the word itself may appear, e.g. in PgBouncer's max_prepared_statements).
    for (const crd of crds) {
      for (const [path, node] of nodes(rootOf(crd))) expect(node.enum ?? [], path).not.toContain('statement');
    }
  });

  it('gives bounded integers format int32', () => {
    expect(clusterSpec?.properties?.instances).toMatchObject({ type: 'integer', format: 'int32', minimum: 1 });
  });

  it('has the CEL rules on class, storage, postgresVersion and metadata.name', () => {
    const specRules = clusterSpec?.['x-kubernetes-validations'] ?? [];
    expect(clusterSpec?.properties?.class?.['x-kubernetes-validations']).toContainEqual(
      expect.objectContaining({ rule: 'self == oldSelf' }),
    );
    expect(specRules.filter((rule) => rule.fieldPath === '.storage').length).toBeGreaterThanOrEqual(2);
    expect(specRules.filter((rule) => rule.fieldPath === '.postgresVersion').length).toBeGreaterThanOrEqual(2);
    expect(rootOf(postgresClusterCrd())['x-kubernetes-validations']).toContainEqual({
      rule: `oldSelf.hasValue() || self.metadata.name.size() <= ${MAX_CLUSTER_NAME_LENGTH}`,
      optionalOldSelf: true,
      message: expect.stringContaining('metadata.name'),
    });
    // Most rules are only compiled by the API server (test/integration/crds.test.ts); the storage class rules
    // below use nothing beyond standard CEL, so they are evaluated here too.
  });
});

describe('clusterDeletionPolicy says what a deletion does (src/operator/domain/deletion.ts)', () => {
  const description = clusterSpec?.properties?.clusterDeletionPolicy?.description ?? '';
  /** The words each child kind goes by in the description. */
  const NAMED: Record<string, string> = {
    Cluster: 'CNPG Cluster',
    Secret: 'Secret',
    ConfigMap: 'ConfigMap',
    Pooler: 'Pooler',
  };
  const kinds = (policy: 'Retain' | 'Delete', type: string) => {
    const o = observe({ ...healthyFacts, deletion: true, policy });
    return [...planPoolerDeletion(o), ...planDeletionPolicy(o)]
      .filter((e) => e.type === type)
      .map((e) => ('ref' in e ? (NAMED[e.ref.kind] ?? e.ref.kind) : ''));
  };

  it('under Retain names every child released as staying, and says only the Poolers are deleted', () => {
    const retain = description.slice(description.indexOf('Retain (default)'), description.indexOf('Delete:'));
    expect(kinds('Retain', 'releaseOwner')).toEqual(['CNPG Cluster', 'Secret', 'ConfigMap']);
    for (const kind of kinds('Retain', 'releaseOwner')) expect(retain).toContain(kind);
    expect(retain).toMatch(/stay, released/);
    expect(retain).not.toMatch(/deleted/);
    expect(kinds('Retain', 'delete')).toEqual(['Pooler', 'Pooler']);
    expect(description.slice(0, description.indexOf('Retain (default)'))).toMatch(/Poolers are deleted/);
  });

  it('under Delete names every child deleted', () => {
    const deleted = description.slice(description.indexOf('Delete:'));
    for (const kind of kinds('Delete', 'delete')) if (kind !== 'Pooler') expect(deleted).toContain(kind);
  });
});

describe('storage classes are decided at creation (CEL transition rules, evaluated)', () => {
  /** Whether the spec rules at `fieldPath` let `oldSelf` become `self` (a rule on the spec, so `has()` sees both). */
  const allows = (fieldPath: string, oldSelf: object, self: object) => {
    const rules = (clusterSpec?.['x-kubernetes-validations'] ?? []).filter((r) => r.fieldPath === fieldPath);
    expect(rules.length, fieldPath).toBeGreaterThan(0);
    return rules.every((r) => evaluate(r.rule, { self, oldSelf }) === true);
  };
  const base = { class: 'c' };

  it('refuses storageClass added to a cluster created without one, changed or removed; keeps it unchanged', () => {
    expect(allows('.storageClass', base, { ...base, storageClass: 'fast' })).toBe(false);
    expect(allows('.storageClass', { ...base, storageClass: 'fast' }, { ...base, storageClass: 'slow' })).toBe(false);
    expect(allows('.storageClass', { ...base, storageClass: 'fast' }, base)).toBe(false);
    expect(allows('.storageClass', { ...base, storageClass: 'fast' }, { ...base, storageClass: 'fast' })).toBe(true);
    expect(allows('.storageClass', base, { ...base, instances: 2 })).toBe(true);
  });

  it('refuses a class added to an existing WAL volume; a WAL volume added later may bring one', () => {
    const wal = (walStorage: object) => ({ ...base, walStorage });
    expect(allows('.walStorage.storageClass', wal({ size: '1Gi' }), wal({ size: '1Gi', storageClass: 'w' }))).toBe(
      false,
    );
    expect(allows('.walStorage.storageClass', wal({ size: '1Gi', storageClass: 'w' }), wal({ size: '1Gi' }))).toBe(
      false,
    );
    expect(
      allows(
        '.walStorage.storageClass',
        wal({ size: '1Gi', storageClass: 'w' }),
        wal({ size: '2Gi', storageClass: 'x' }),
      ),
    ).toBe(false);
    expect(allows('.walStorage.storageClass', base, wal({ size: '1Gi', storageClass: 'w' }))).toBe(true);
    expect(allows('.walStorage.storageClass', wal({ size: '1Gi' }), wal({ size: '2Gi' }))).toBe(true);
    expect(
      allows(
        '.walStorage.storageClass',
        wal({ size: '1Gi', storageClass: 'w' }),
        wal({ size: '2Gi', storageClass: 'w' }),
      ),
    ).toBe(true);
  });
});

describe('TypeBox validation of the same schemas', () => {
  const spec = schemas.PostgresCluster.spec;
  const classSchema = schemas.PostgresClusterClass.spec;

  it('accepts a full valid PostgresCluster spec and PostgresClusterClass spec', () => {
    expect(errorPaths(spec, validClusterSpec)).toEqual([]);
    expect(errorPaths(classSchema, validClassSpec)).toEqual([]);
  });

  it.each([
    ['instances 0', { instances: 0 }, '/instances'],
    ['instances 11', { instances: 11 }, '/instances'],
    ['postgresVersion abc', { postgresVersion: 'abc' }, '/postgresVersion'],
    ['storage "ten gigs"', { storage: 'ten gigs' }, '/storage'],
    ['an empty class name', { class: '' }, '/class'],
  ])('rejects %s', (_name, change, path) => {
    const invalid = { ...validClusterSpec, ...change };
    expect(Value.Check(spec, invalid)).toBe(false);
    expect(errorPaths(spec, invalid)).toContain(path);
  });

  it('rejects the pool mode statement in a class', () => {
    const invalid = { ...validClassSpec, cnpg: { connectionPooler: { mode: 'statement' } } };
    expect(Value.Check(classSchema, invalid)).toBe(false);
    expect(errorPaths(classSchema, invalid)).toContain('/cnpg/connectionPooler/mode');
  });
});

describe('size bounds: no child pgfsm writes can outgrow the API server', () => {
  // The largest spec and class the schemas accept: every list and map full, every string at its longest.
  const params = (prefix: string) =>
    Object.fromEntries(
      Array.from({ length: LIMITS.parameters }, (_, i) => [
        `${prefix}${i}`.padEnd(LIMITS.parameterName, 'x'),
        'v'.repeat(LIMITS.parameterValue),
      ]),
    );
  // The longest names a PostgreSQL pod's resources may have: huge pages of three-digit page sizes first.
  const pageSizes = ['128', '256', '512', '16', '32', '64'].flatMap((n) => ['Ki', 'Mi', 'Gi'].map((u) => `${n}${u}`));
  const resourceNames = ['ephemeral-storage', 'memory', 'cpu', ...pageSizes.map((size) => `hugepages-${size}`)];
  const resources = Object.fromEntries(
    resourceNames.slice(0, LIMITS.resources).map((name) => [name, '9'.repeat(60)] as const),
  );
  // The longest label name: a 253-character DNS prefix, '/', and 63 characters.
  const labelName = (seed: string) => `${seed.padEnd(253, 'd')}/${seed.padEnd(63, 'x')}`;
  const labels = (seed: string, count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [labelName(`${seed}${i}`), 'v'.repeat(63)]));
  const largestSpec: PostgresClusterSpec = {
    ...validClusterSpec,
    postgresqlConfig: params('c'),
    pgHBA: Array.from({ length: LIMITS.pgHbaLines }, () => 'h'.repeat(LIMITS.pgHbaLine)),
    managedRoles: Array.from({ length: LIMITS.managedRoles }, (_, i) => ({
      name: `r${i}`.padEnd(63, 'x'),
      passwordSecretRef: { name: `s${i}`.padEnd(253, 'x') },
    })),
    resources: { requests: resources, limits: resources },
    // The day-one CNPG fields at their largest too.
    imageName: `registry.example/${'p'.repeat(LIMITS.imageName - 60)}:17.2-${'t'.repeat(20)}`,
    postgresVersion: '17',
    storageClass: 's'.repeat(253),
    walStorage: { size: '10Gi', storageClass: 'w'.repeat(253) },
    affinity: {
      enablePodAntiAffinity: true,
      topologyKey: labelName('t'),
      podAntiAffinityType: 'required',
      nodeSelector: labels('n', LIMITS.nodeSelector),
      tolerations: Array.from({ length: LIMITS.tolerations }, (_, i) => ({
        key: labelName(`k${i}`),
        operator: 'Equal' as const,
        value: 'v'.repeat(63),
        effect: 'NoExecute' as const,
        tolerationSeconds: 2 ** 40,
      })),
    },
    topologySpreadConstraints: Array.from({ length: LIMITS.topologySpreadConstraints }, (_, i) => ({
      maxSkew: 1,
      topologyKey: labelName(`z${i}`),
      whenUnsatisfiable: 'DoNotSchedule' as const,
      minDomains: 3,
      labelSelector: {
        matchLabels: labels(`m${i}`, LIMITS.matchLabels),
        matchExpressions: Array.from({ length: LIMITS.matchExpressions }, (_, j) => ({
          key: labelName(`e${i}-${j}`),
          operator: 'In' as const,
          values: Array.from({ length: LIMITS.matchValues }, () => 'v'.repeat(63)),
        })),
      },
    })),
    monitoring: { enablePodMonitor: true },
  };
  const largestClass = makeClass({
    config: { instances: 3, storage: '10Gi', postgresVersion: '17', postgresqlConfig: params('k') },
    cnpg: {
      connectionPooler: {
        parameters: Object.fromEntries(PGBOUNCER_PARAMETERS.map((key) => [key, 'v'.repeat(LIMITS.parameterValue)])),
      },
    },
  });

  it('the largest spec and class pass the schemas', () => {
    expect(errorPaths(schemas.PostgresCluster.spec, largestSpec)).toEqual([]);
    expect(errorPaths(schemas.PostgresClusterClass.spec, largestClass.spec)).toEqual([]);
  });

  it('their CNPG Cluster and Poolers stay under the object and annotation limits', () => {
    const base = observe(healthyFacts);
    const observation = {
      ...base,
      cluster: { ...base.cluster, metadata: { ...base.cluster.metadata, name: 'n'.repeat(MAX_CLUSTER_NAME_LENGTH) } },
      clusterClass: largestClass,
      cnpg: undefined,
    };
    const observationWithSpec = { ...observation, cluster: { ...observation.cluster, spec: largestSpec } };
    const merged = mergeConfig(observationWithSpec);
    if (!merged.ok) throw new Error(merged.message);
    expect(Object.keys(merged.config.postgresqlConfig)).toHaveLength(2 * LIMITS.parameters);

    const cnpg = desiredCnpgCluster(observationWithSpec, merged.config);
    cnpg.spec.managed = {
      roles: merged.config.managedRoles.map((role) => ({
        name: role.name,
        ensure: 'present' as const,
        login: true,
        passwordSecret: { name: role.passwordSecretRef?.name ?? '' },
      })),
    };
    const pooler = merged.config.pooler && desiredPooler(observationWithSpec, merged.config.pooler, 'rw');
    for (const object of [cnpg, pooler]) {
      const bytes = Buffer.byteLength(JSON.stringify(object));
      const annotations = Object.entries(object?.metadata.annotations ?? {}).reduce(
        (sum, [key, value]) => sum + key.length + value.length,
        0,
      );
      // Half a MiB of the object and half the annotation budget stay free for what CNPG and others add.
      expect(bytes, `${object?.kind} is ${bytes} bytes`).toBeLessThan(MAX_OBJECT_BYTES - 512 * 1024);
      expect(annotations, `${object?.kind} annotations are ${annotations} bytes`).toBeLessThan(
        MAX_ANNOTATION_BYTES / 2,
      );
    }
  });
});

describe('backups and restore in the CRDs (CEL rules evaluated, schemas checked)', () => {
  const backup = clusterSpec?.properties?.backup;
  const restore = clusterSpec?.properties?.restore;
  const ruleOf = (node: StructuralSchema | undefined) => {
    const rule = node?.['x-kubernetes-validations']?.[0]?.rule;
    if (!rule) throw new Error('no rule');
    return rule;
  };
  const restoreRules = (clusterSpec?.['x-kubernetes-validations'] ?? []).filter((r) => r.fieldPath === '.restore');

  it('refuses a restore added to, changed on or removed from an existing cluster; keeps it unchanged', () => {
    const allows = (oldSelf: object, self: object) =>
      restoreRules.every((r) => evaluate(r.rule, { self, oldSelf }) === true);
    const base = { class: 'c' };
    const restored = { ...base, restore: { source: { cluster: 'old' } } };
    expect(restoreRules).toHaveLength(1);
    expect(allows(base, restored)).toBe(false);
    expect(allows(restored, base)).toBe(false);
    expect(allows(restored, { ...base, restore: { source: { cluster: 'other' } } })).toBe(false);
    expect(allows(restored, { ...restored, instances: 2 })).toBe(true);
    expect(allows(base, { ...base, instances: 2 })).toBe(true);
  });

  it('refuses a restore source naming both or neither of cluster and serverName', () => {
    const rule = ruleOf(restore?.properties?.source);
    expect(evaluate(rule, { self: { cluster: 'old' } })).toBe(true);
    expect(evaluate(rule, { self: { serverName: 'old-3f2a9c1d' } })).toBe(true);
    expect(evaluate(rule, { self: { cluster: 'old', serverName: 'old-3f2a9c1d' } })).toBe(false);
    expect(evaluate(rule, { self: {} })).toBe(false);
  });

  it.each([
    ['2026-11-20T10:15:30Z', true],
    ['2026-11-20T10:15:30.123456+01:00', true],
    ['2026-11-20T10:15:30', false],
    ['2026-11-20 10:15:30Z', false],
    ['2026-13-20T10:15:30Z', false],
    ['2026-11-20T10:15:30.1234567Z', false],
  ])('judges the restore targetTime %j (a zone is required)', (time, ok) => {
    expect(evaluate(ruleOf(restore?.properties?.targetTime), { self: time })).toBe(ok);
  });

  it('refuses a schedule or retention beside backup.enabled false', () => {
    const rule = ruleOf(backup);
    expect(evaluate(rule, { self: { enabled: false } })).toBe(true);
    expect(evaluate(rule, { self: { schedule: '0 4 * * *', retention: '7d' } })).toBe(true);
    expect(evaluate(rule, { self: { enabled: true, schedule: '0 4 * * *' } })).toBe(true);
    expect(evaluate(rule, { self: { enabled: false, schedule: '0 4 * * *' } })).toBe(false);
    expect(evaluate(rule, { self: { enabled: false, retention: '7d' } })).toBe(false);
  });

  const policy = {
    objectStore: { destinationPath: 's3://pg-backups/prod', credentials: { secretName: 's3-creds' } },
    schedule: '30 2 * * *',
    retention: '7d',
  };
  const classWith = (change: object) => ({ ...validClassSpec, backup: { ...policy, ...change } });

  it('accepts a backup policy in a class, and requires its store, schedule, retention and credentials', () => {
    expect(errorPaths(schemas.PostgresClusterClass.spec, classWith({}))).toEqual([]);
    expect(classSpec?.properties?.backup?.required).toEqual(['objectStore', 'schedule', 'retention']);
    expect(classSpec?.properties?.backup?.properties?.objectStore?.required).toEqual([
      'destinationPath',
      'credentials',
    ]);
    const { credentials: _, ...noCredentials } = policy.objectStore;
    expect(errorPaths(schemas.PostgresClusterClass.spec, classWith({ objectStore: noCredentials }))).toContain(
      '/backup/objectStore/credentials',
    );
  });

  it.each([
    ['a data compression barman 3.13 refuses (lz4)', { dataCompression: 'lz4' }, '/backup/dataCompression'],
    ['a retention in hours', { retention: '12h' }, '/backup/retention'],
    ['a retention of 0 days', { retention: '0d' }, '/backup/retention'],
    [
      'a destination that is not S3',
      { objectStore: { ...policy.objectStore, destinationPath: 'gs://b/x' } },
      '/backup/objectStore/destinationPath',
    ],
    [
      'an endpoint that is no http(s) URL',
      { objectStore: { ...policy.objectStore, endpointURL: 'ftp://s3' } },
      '/backup/objectStore/endpointURL',
    ],
  ])('refuses %s in a class', (_what, change, path) => {
    expect(errorPaths(schemas.PostgresClusterClass.spec, classWith(change))).toContain(path);
  });

  it('takes lz4 for WAL, and defaults the credential keys to the plugin documentation’s', () => {
    expect(errorPaths(schemas.PostgresClusterClass.spec, classWith({ walCompression: 'lz4' }))).toEqual([]);
    const credentials = classSpec?.properties?.backup?.properties?.objectStore?.properties?.credentials;
    expect(credentials?.properties?.accessKeyIdKey?.default).toBe('ACCESS_KEY_ID');
    expect(credentials?.properties?.secretAccessKeyKey?.default).toBe('ACCESS_SECRET_KEY');
  });

  it('refuses, at creation, a restore whose source is the cluster itself', () => {
    const rule = rootOf(postgresClusterCrd())['x-kubernetes-validations']?.find((r) =>
      r.rule.includes('restore.source.cluster'),
    );
    expect(rule).toMatchObject({ optionalOldSelf: true, message: expect.stringContaining('another PostgresCluster') });
  });
});
