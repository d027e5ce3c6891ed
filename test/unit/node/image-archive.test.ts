/**
 * The docker-archive writer: the manifest and configuration it writes have the shape `ctr images import` and
 * buildah's docker-archive transport read, and an archive made from a small tree carries it back intact.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  dockerArchiveManifest,
  imageConfigDocument,
  repositoriesFile,
  sha256,
  writeDockerArchive,
  writeLayerTar,
} from '../../../src/tools/node/image-archive.ts';

const scratch = mkdtempSync(join(tmpdir(), 'pgfsm-image-archive-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('image configuration', () => {
  it('is a Docker/OCI image config with the runtime settings, the layers by diff ID and one history entry each', () => {
    const document = imageConfigDocument(
      {
        env: ['PATH=/usr/lib/postgresql/17/bin:/usr/bin:/bin', 'LANG=C.UTF-8'],
        entrypoint: ['/usr/bin/pgbouncer'],
        cmd: ['/etc/pgbouncer/pgbouncer.ini'],
        user: '998:996',
        workingDir: '/',
        labels: { 'org.opencontainers.image.version': '1.24.1' },
        exposedPorts: ['5432/tcp'],
      },
      ['ab'.repeat(32)],
      { created: '2026-01-01T00:00:00Z', createdBy: 'test' },
    );
    expect(document).toEqual({
      architecture: 'amd64',
      os: 'linux',
      created: '2026-01-01T00:00:00Z',
      config: {
        Env: ['PATH=/usr/lib/postgresql/17/bin:/usr/bin:/bin', 'LANG=C.UTF-8'],
        Entrypoint: ['/usr/bin/pgbouncer'],
        Cmd: ['/etc/pgbouncer/pgbouncer.ini'],
        User: '998:996',
        WorkingDir: '/',
        Labels: { 'org.opencontainers.image.version': '1.24.1' },
        ExposedPorts: { '5432/tcp': {} },
      },
      rootfs: { type: 'layers', diff_ids: [`sha256:${'ab'.repeat(32)}`] },
      history: [{ created: '2026-01-01T00:00:00Z', created_by: 'test' }],
    });
  });

  it('leaves out what a recipe does not set, but always has a working directory', () => {
    const document = imageConfigDocument({ env: [] }, [], { created: 'now', createdBy: 'x' });
    expect(document.config).toEqual({ Env: [], WorkingDir: '/' });
  });
});

describe('manifest.json and repositories', () => {
  it('names the config file, the tag and the layer files', () => {
    expect(dockerArchiveManifest('c0ffee.json', 'ghcr.io/cloudnative-pg/postgresql:17', ['d1/layer.tar'])).toEqual([
      { Config: 'c0ffee.json', RepoTags: ['ghcr.io/cloudnative-pg/postgresql:17'], Layers: ['d1/layer.tar'] },
    ]);
    expect(repositoriesFile('registry.k8s.io/pause:3.10', 'd1')).toEqual({ 'registry.k8s.io/pause': { '3.10': 'd1' } });
    expect(repositoriesFile('localhost:5000/a/b', 'd1')).toEqual({ 'localhost:5000/a/b': { latest: 'd1' } });
  });
});

describe('writeDockerArchive', () => {
  it('writes manifest.json, the config named by its digest and the layer named by its diff ID', async () => {
    const rootfs = join(scratch, 'rootfs');
    mkdirSync(join(rootfs, 'usr/bin'), { recursive: true });
    writeFileSync(join(rootfs, 'usr/bin/hello'), '#!/bin/sh\necho hello\n', { mode: 0o755 });
    const layer = join(scratch, 'layer.tar');
    await writeLayerTar(rootfs, layer, { rootOwned: true });
    const out = join(scratch, 'image.tar');
    const { imageId, diffIds } = await writeDockerArchive({
      layers: [layer],
      config: { env: ['PATH=/usr/bin'], entrypoint: ['/usr/bin/hello'], user: '65532' },
      ref: 'localhost/test/hello:1',
      out,
      createdBy: 'unit test',
    });

    const entries = execFileSync('tar', ['-tf', out], { encoding: 'utf8' }).trim().split('\n').sort();
    const diffId = diffIds[0]?.slice('sha256:'.length) ?? '';
    const configFile = `${imageId.slice('sha256:'.length)}.json`;
    expect(entries).toEqual([`${diffId}/layer.tar`, configFile, 'manifest.json', 'repositories'].sort());

    const read = (name: string) => execFileSync('tar', ['-xOf', out, name]);
    expect(JSON.parse(read('manifest.json').toString())).toEqual([
      { Config: configFile, RepoTags: ['localhost/test/hello:1'], Layers: [`${diffId}/layer.tar`] },
    ]);
    const configText = read(configFile);
    expect(`sha256:${sha256(configText)}`).toBe(imageId);
    const config = JSON.parse(configText.toString());
    expect(config.rootfs.diff_ids).toEqual(diffIds);
    expect(config.config).toMatchObject({ Entrypoint: ['/usr/bin/hello'], User: '65532', Env: ['PATH=/usr/bin'] });

    const layerBytes = read(`${diffId}/layer.tar`);
    expect(sha256(layerBytes)).toBe(diffId);
    expect(layerBytes.equals(readFileSync(layer))).toBe(true);
    const listing = execFileSync('tar', ['-tvf', layer], { encoding: 'utf8' });
    expect(listing).toMatch(/-rwxr-xr-x 0\/0 .* usr\/bin\/hello/);
    expect(listing).not.toMatch(/ \.\//);
  });
});
