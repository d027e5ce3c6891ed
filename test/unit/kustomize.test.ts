/**
 * The renderer deploy/ is tested and installed with (src/tools/install/kustomize.ts): the JSON 6902
 * operations it applies, and every kustomize feature it does not implement is refused, not ignored.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJsonPatch, asModel, renderKustomization } from '../../src/tools/install/kustomize.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A directory of files, given as path → content. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'pgfsm-kustomize-'));
  dirs.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const CONFIG_MAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c, namespace: n }\ndata: { a: "1" }\n';

describe('applyJsonPatch', () => {
  it('adds, appends, replaces and removes, on a copy', () => {
    const doc = { a: { list: [1, 2] as number[], 'x/y': 1 as number | undefined, b: 'keep' } };
    const patched = applyJsonPatch(doc, [
      { op: 'add', path: '/a/list/-', value: 3 },
      { op: 'add', path: '/a/list/0', value: 0 },
      { op: 'replace', path: '/a/b', value: 'changed' },
      { op: 'remove', path: '/a/x~1y' },
      { op: 'add', path: '/a/new', value: { n: 1 } },
    ]);
    expect(patched).toEqual({ a: { list: [0, 1, 2, 3], b: 'changed', new: { n: 1 } } });
    expect(doc.a.list).toEqual([1, 2]);
  });

  it('fails on a path that does not exist', () => {
    expect(() => applyJsonPatch({ a: {} }, [{ op: 'replace', path: '/a/b', value: 1 }])).toThrow(/does not exist/);
    expect(() => applyJsonPatch({ a: [1] }, [{ op: 'remove', path: '/a/1' }])).toThrow(/no such index/);
    expect(() => applyJsonPatch({}, [{ op: 'add', path: '/a/b', value: 1 }])).toThrow(/does not exist/);
  });
});

describe('renderKustomization', () => {
  it('collects resources of files and directories in order, and patches the targets', () => {
    const root = tree({
      'base/kustomization.yaml': 'resources: [cm.yaml]\n',
      'base/cm.yaml': CONFIG_MAP,
      'overlay/kustomization.yaml': [
        'resources: [../base, extra.yaml]',
        'patches:',
        '  - target: { kind: ConfigMap, name: c }',
        '    patch: |-',
        '      - op: add',
        '        path: /data/b',
        '        value: "2"',
      ].join('\n'),
      'overlay/extra.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata: { name: n }\n',
    });
    const files: string[] = [];
    const rendered = renderKustomization(join(root, 'overlay'), files);
    expect(rendered.map((r) => r.object.kind)).toEqual(['ConfigMap', 'Namespace']);
    expect(rendered[0]?.object.data).toEqual({ a: '1', b: '2' });
    expect(files).toEqual([join(root, 'overlay/../base/cm.yaml'), join(root, 'overlay/extra.yaml')]);
  });

  it.each([
    ['a field it does not implement', 'resources: [cm.yaml]\nnamespace: other\n', /"namespace" is not supported/],
    [
      'a strategic-merge patch',
      'resources: [cm.yaml]\npatches:\n  - target: { kind: ConfigMap }\n    patch: |-\n      data: { b: "2" }\n',
      /strategic-merge/,
    ],
    ['a patch from a file', 'resources: [cm.yaml]\npatches:\n  - path: p.yaml\n', /only an inline JSON 6902 patch/],
    [
      'a target that matches nothing',
      'resources: [cm.yaml]\npatches:\n  - target: { kind: Secret }\n    patch: "[]"\n',
      /matches no object/,
    ],
    ['a resource that does not exist', 'resources: [missing.yaml]\n', /missing.yaml does not exist/],
    ['an object listed twice', 'resources: [cm.yaml, again.yaml]\n', /ConfigMap n\/c is listed twice/],
  ])('refuses %s', (_, kustomization, message) => {
    const root = tree({ 'kustomization.yaml': kustomization, 'cm.yaml': CONFIG_MAP, 'again.yaml': CONFIG_MAP });
    expect(() => renderKustomization(root)).toThrow(message);
  });

  it('turns wire names into client-node model names for the typed APIs', () => {
    const [crd] = asModel([
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'x' },
        spec: {
          versions: [{ name: 'v1', schema: { openAPIV3Schema: { 'x-kubernetes-validations': [{ rule: 'true' }] } } }],
        },
      },
    ]);
    const schema = (crd as { spec: { versions: Array<{ schema: { openAPIV3Schema: object } }> } }).spec.versions[0]
      ?.schema.openAPIV3Schema;
    expect(schema).toHaveProperty('x_kubernetes_validations');
    expect(schema).not.toHaveProperty('x-kubernetes-validations');
  });
});
