/**
 * Cache keys of the node's images: each changes when, and only when, something that decides the image's content
 * changes (a recipe's text, a resolved package version, a copied file, a base image).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { debianImageKey, filesImageKey } from '../../../src/tools/node/images/build.ts';
import { cacheKey, canonicalJson } from '../../../src/tools/node/images/cache.ts';
import { hashContextFiles, type PgfsmKeyInputs, pgfsmImageKey } from '../../../src/tools/node/images/pgfsm.ts';
import { cnpgOperatorRecipe, pgbouncerRecipe, postgresRecipe } from '../../../src/tools/node/images/recipes.ts';

const scratch = mkdtempSync(join(tmpdir(), 'pgfsm-image-keys-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const packages = new Map([
  ['libc6', '2.41-12+deb13u5'],
  ['postgresql-17', '17.12-0+deb13u1'],
]);

describe('canonical JSON and keys', () => {
  it('do not depend on the order of object keys or map entries', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe(canonicalJson({ a: { c: 3, d: 2 }, b: 1 }));
    expect(
      canonicalJson(
        new Map([
          ['b', '1'],
          ['a', '2'],
        ]),
      ),
    ).toBe('{"a":"2","b":"1"}');
    expect(cacheKey({ x: 1, y: [1, 2] })).toBe(cacheKey({ y: [1, 2], x: 1 }));
    expect(cacheKey({ y: [1, 2] })).not.toBe(cacheKey({ y: [2, 1] }));
    expect(cacheKey({})).toMatch(/^[0-9a-f]{24}$/);
  });
});

describe('Debian image keys', () => {
  const key = debianImageKey(postgresRecipe, packages);

  it('are stable for the same recipe and packages', () => {
    expect(debianImageKey(postgresRecipe, new Map([...packages].reverse()))).toBe(key);
  });

  it('change with any resolved package version, or a package more', () => {
    expect(debianImageKey(postgresRecipe, new Map([...packages, ['libc6', '2.41-12+deb13u6']]))).not.toBe(key);
    expect(debianImageKey(postgresRecipe, new Map([...packages, ['tzdata', '2025b-4']]))).not.toBe(key);
  });

  it("change with the recipe's text: its hooks, its image configuration, its packages", () => {
    const hook = { ...postgresRecipe, customize: [...postgresRecipe.customize, 'true'] };
    const env = { ...postgresRecipe, config: { ...postgresRecipe.config, env: ['LANG=C'] } };
    const include = { ...postgresRecipe, include: [...postgresRecipe.include, 'postgresql-contrib'] };
    for (const changed of [hook, env, include]) expect(debianImageKey(changed, packages)).not.toBe(key);
    expect(debianImageKey(pgbouncerRecipe, packages)).not.toBe(key);
  });
});

describe('file image keys', () => {
  const recipe = cnpgOperatorRecipe('/somewhere/cnpg-manager');

  it('follow the content of the files, not where they lie', () => {
    const key = filesImageKey(recipe, ['aa'.repeat(32)]);
    expect(filesImageKey(cnpgOperatorRecipe('/elsewhere/manager'), ['aa'.repeat(32)])).toBe(key);
    expect(filesImageKey(recipe, ['bb'.repeat(32)])).not.toBe(key);
    expect(filesImageKey(recipe, ['aa'.repeat(32)], { catatonit: '0.1.7-1+b2' })).not.toBe(key);
  });
});

describe("pgfsm's image key", () => {
  const base: PgfsmKeyInputs = {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile variable, not JavaScript's
    dockerfile: 'FROM ${BUILD_IMAGE:-x} AS build\n',
    dockerignore: 'node_modules\n',
    files: { 'package.json': '-:11', 'src/operator/a.ts': '-:22' },
    bases: { BUILD_IMAGE: 'build-key', RUNTIME_IMAGE: 'runtime-key' },
    ref: 'localhost/pgfsm/pgfsm:0.1.0',
    buildah: 'buildah version 1.28.2',
  };
  const key = pgfsmImageKey(base);

  it('changes with the Dockerfile, .dockerignore, any copied file, either base image, the tag or buildah', () => {
    const variants: PgfsmKeyInputs[] = [
      { ...base, dockerfile: `${base.dockerfile}RUN true\n` },
      { ...base, dockerignore: '' },
      { ...base, files: { ...base.files, 'src/operator/a.ts': '-:23' } },
      { ...base, files: { ...base.files, 'src/operator/b.ts': '-:33' } },
      { ...base, bases: { ...base.bases, BUILD_IMAGE: 'build-key-2' } },
      { ...base, bases: { ...base.bases, RUNTIME_IMAGE: 'runtime-key-2' } },
      { ...base, ref: 'localhost/pgfsm/pgfsm:0.2.0' },
      { ...base, buildah: 'buildah version 1.39.3' },
    ];
    const keys = new Set(variants.map(pgfsmImageKey));
    expect(keys.size).toBe(variants.length);
    expect(keys.has(key)).toBe(false);
    expect(pgfsmImageKey({ ...base })).toBe(key);
  });

  it('hashes every file under the copied paths, with its executable bit', () => {
    const project = join(scratch, 'project');
    mkdirSync(join(project, 'src/operator/cli'), { recursive: true });
    writeFileSync(join(project, 'package.json'), '{}');
    writeFileSync(join(project, 'src/operator/cli/main.ts'), 'export {};');
    writeFileSync(join(project, 'README.md'), 'not copied');
    const before = hashContextFiles(project, ['package.json', 'src/operator']);
    expect(Object.keys(before).sort()).toEqual(['package.json', 'src/operator/cli/main.ts']);

    writeFileSync(join(project, 'README.md'), 'still not copied');
    expect(hashContextFiles(project, ['package.json', 'src/operator'])).toEqual(before);
    chmodSync(join(project, 'src/operator/cli/main.ts'), 0o755);
    const executable = hashContextFiles(project, ['package.json', 'src/operator']);
    expect(executable['src/operator/cli/main.ts']).not.toBe(before['src/operator/cli/main.ts']);
    writeFileSync(join(project, 'src/operator/cli/main.ts'), 'export const x = 1;');
    expect(hashContextFiles(project, ['package.json', 'src/operator'])['src/operator/cli/main.ts']).not.toBe(
      executable['src/operator/cli/main.ts'],
    );
  });
});
