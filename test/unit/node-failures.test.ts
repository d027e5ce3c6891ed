/**
 * Inputs CloudNativePG's webhook lets through that fail only on a node (docs/cnpg-admission.md, "Beyond CNPG's
 * webhook"): the CRDs carry a rule for each, and the merge check refuses the objects stored before it, naming the
 * field. The CRD rules themselves run on a real API server in test/integration/bad-inputs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isPodResourceName, MAX_ROLE_NAME_BYTES, MIN_STORAGE } from '../../src/operator/api/cnpg-rules.ts';
import type { ClassConfig, PostgresClusterSpec } from '../../src/operator/api/schema.ts';
import { mergeConfig } from '../../src/operator/domain/config.ts';
import type { Observation } from '../../src/operator/domain/observation.ts';
import { healthyFacts, makeClass, observe } from '../../src/tools/fixtures/observations.ts';
import {
  postgresClusterClassCrd,
  postgresClusterCrd,
  type StructuralSchema,
} from '../../src/tools/generate/crd-manifests.ts';

/** A healthy world with the spec and class config changed as given, before CNPG runs anything or once it runs `running`. */
function world(spec: Partial<PostgresClusterSpec>, config: Partial<ClassConfig> = {}, running?: string): Observation {
  const base = observe(healthyFacts);
  const clusterClass = makeClass({ config: { ...makeClass().spec.config, ...config } });
  const cnpg =
    running && base.cnpg ? { ...base.cnpg, spec: { ...base.cnpg.spec, storage: { size: running } } } : undefined;
  return { ...base, cluster: { ...base.cluster, spec: { ...base.cluster.spec, ...spec } }, clusterClass, cnpg };
}

const problem = (observation: Observation) => {
  const merged = mergeConfig(observation);
  return merged.ok ? undefined : merged.message;
};

describe('storage: at least 1Gi, for the data and the WAL CNPG keeps', () => {
  it.each(['0', '1m', '100k', '1Ki', '1000Mi', '0.5Gi'])('refuses %s in the spec, naming spec.storage', (storage) => {
    expect(problem(world({ storage }))).toBe(
      `spec.storage: ${storage} is too small: at least ${MIN_STORAGE}, for PostgreSQL keeps its data and its WAL on this volume`,
    );
  });

  it('refuses a class default below it, naming the class field; the cluster’s own size wins', () => {
    expect(problem(world({ storage: undefined }, { storage: '512Mi' }))).toContain(
      'class standard spec.config.storage: 512Mi is too small',
    );
    expect(problem(world({ storage: '2Gi' }, { storage: '512Mi' }))).toBeUndefined();
  });

  it('accepts 1Gi and its equivalents', () => {
    for (const storage of ['1Gi', '1024Mi', '1073741824', '2G'])
      expect(problem(world({ storage })), storage).toBeUndefined();
  });

  it('leaves alone a size CNPG already runs, stored before the rule; growing it must reach the minimum', () => {
    expect(problem(world({ storage: '512Mi' }, {}, '512Mi'))).toBeUndefined();
    expect(problem(world({ storage: '768Mi' }, {}, '512Mi'))).toContain('spec.storage: 768Mi is too small');
    expect(problem(world({ storage: '1Gi' }, {}, '512Mi'))).toBeUndefined();
  });
});

describe('resources: only what a PostgreSQL pod can be given', () => {
  it.each(['cpu', 'memory', 'ephemeral-storage', 'hugepages-2Mi', 'hugepages-1Gi', 'hugepages-64Ki', 'hugepages-32Mi'])(
    'accepts %s',
    (name) => expect(isPodResourceName(name)).toBe(true),
  );

  it.each(['nvidia.com/gpu', 'storage', 'gpu', 'pods', 'hugepages-2048Ki', 'hugepages-3Mi', 'hugepages-', 'CPU'])(
    'refuses %s',
    (name) => expect(isPodResourceName(name)).toBe(false),
  );

  it('names the offending resource where it was set: the cluster’s requests or limits, or the class’s', () => {
    expect(problem(world({ resources: { requests: { cpu: '1', 'nvidia.com/gpu': '1' } } }))).toMatch(
      /^spec\.resources\.requests\.nvidia\.com\/gpu: is no resource of a PostgreSQL pod/,
    );
    expect(problem(world({ resources: { limits: { memory: '1Gi', 'hugepages-2048Ki': '1Gi' } } }))).toMatch(
      /^spec\.resources\.limits\.hugepages-2048Ki: /,
    );
    expect(problem(world({ resources: undefined }, { resources: { limits: { storage: '1Gi' } } }))).toMatch(
      /^class standard spec\.config\.resources\.limits\.storage: /,
    );
    const hugepages = { cpu: '1', memory: '2Gi', 'hugepages-2Mi': '1Gi', 'ephemeral-storage': '1Gi' };
    expect(problem(world({ resources: { requests: hugepages, limits: hugepages } }))).toBeUndefined();
  });
});

describe('managed role names PostgreSQL refuses or cuts short', () => {
  const roles = (...names: string[]) => ({ managedRoles: names.map((name) => ({ name })) });

  it.each(['public', 'none'])('refuses %s, which PostgreSQL reserves', (name) => {
    expect(problem(world(roles('app', name)))).toBe(
      `spec.managedRoles[1].name: ${name} is reserved by PostgreSQL; choose another name`,
    );
  });

  it('accepts other spellings: CNPG quotes the name, and PostgreSQL reserves only these', () => {
    expect(problem(world(roles('Public', 'NONE', 'public_app', 'nobody')))).toBeUndefined();
  });

  it('counts bytes, not characters: 32 two-byte characters are one byte too many', () => {
    const twoByte = 'é'.repeat(32);
    expect(twoByte).toHaveLength(32);
    expect(problem(world(roles(twoByte)))).toBe(
      `spec.managedRoles[0].name: 64 bytes is too long: at most ${MAX_ROLE_NAME_BYTES} bytes in UTF-8, as PostgreSQL cuts longer names`,
    );
    expect(problem(world(roles(`${'é'.repeat(31)}a`)))).toBeUndefined();
    // Two names PostgreSQL would cut to the same role are both over the bound.
    expect(problem(world(roles(`${'é'.repeat(31)}a1`, `${'é'.repeat(31)}a2`)))).toContain('spec.managedRoles[0].name');
  });
});

describe('the CRD rules that refuse them at admission', () => {
  const clusterSpec = postgresClusterCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
  const classConfig =
    postgresClusterClassCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec?.properties?.config;
  const rules = (node: StructuralSchema | undefined) => (node?.['x-kubernetes-validations'] ?? []).map((r) => r.rule);

  it('guard every storage size, in the cluster and in the class', () => {
    const minimum = `!isQuantity(self) || quantity(self).compareTo(quantity('${MIN_STORAGE}')) >= 0`;
    expect(rules(clusterSpec?.properties?.storage)).toEqual([minimum]);
    expect(rules(classConfig?.properties?.storage)).toEqual([minimum]);
  });

  it('guard the names of every resource map, in the cluster and in the class', () => {
    for (const resources of [clusterSpec?.properties?.resources, classConfig?.properties?.resources]) {
      for (const map of ['requests', 'limits']) {
        expect(rules(resources?.properties?.[map]).join(), map).toContain("k.matches(r'^(cpu|memory|");
      }
    }
  });

  it('guard the role name by its UTF-8 bytes and PostgreSQL’s reserved names', () => {
    const name = clusterSpec?.properties?.managedRoles?.items?.properties?.name;
    expect(name?.maxLength).toBe(63);
    expect(rules(name)).toEqual(
      expect.arrayContaining([`bytes(self).size() <= ${MAX_ROLE_NAME_BYTES}`, "!(self in ['public', 'none'])"]),
    );
  });
});
