/**
 * The project's Dockerfile and this machine's way of building it: the defaults of its two base-image arguments
 * are still the public images (so the same file builds unchanged where registries are reachable), and it copies
 * exactly what pgfsm's image key hashes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  dockerfileBaseImages,
  dockerfileContextSources,
  dockerfileInstructions,
} from '../../../src/tools/node/images/dockerfile.ts';
import { readProject } from '../../../src/tools/node/images/pgfsm.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

describe("the project's Dockerfile", () => {
  it('builds on node:20-bookworm-slim and distroless nodejs20 nonroot unless told otherwise', () => {
    expect(dockerfileBaseImages(DOCKERFILE)).toEqual([
      { name: 'build', arg: 'BUILD_IMAGE', image: 'docker.io/library/node:20-bookworm-slim' },
      { arg: 'RUNTIME_IMAGE', image: 'gcr.io/distroless/nodejs20-debian12:nonroot' },
    ]);
  });

  it('declares both arguments before the first FROM (global scope, usable in FROM)', () => {
    const instructions = dockerfileInstructions(DOCKERFILE);
    const firstFrom = instructions.findIndex((i) => i.keyword === 'FROM');
    const globals = instructions.slice(0, firstFrom).filter((i) => i.keyword === 'ARG');
    expect(globals.map((i) => i.args.split('=')[0])).toEqual(['BUILD_IMAGE', 'RUNTIME_IMAGE']);
  });

  it('copies from the build context exactly the files the image key hashes', () => {
    expect(dockerfileContextSources(DOCKERFILE)).toEqual([
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'machines',
      'src/operator',
    ]);
  });

  it('is tagged localhost/pgfsm/pgfsm:<package.json version>', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(readProject(ROOT).ref).toBe(`localhost/pgfsm/pgfsm:${version}`);
  });
});

describe('dockerfileBaseImages', () => {
  it("reads a default from a global ARG, from the variable's own default, or a literal image", () => {
    const text = `ARG A=alpine:3.20
ARG B
FROM \${A} AS one
FROM \${B:-busybox:1.36}
FROM --platform=linux/amd64 debian:trixie AS three
`;
    expect(dockerfileBaseImages(text)).toEqual([
      { name: 'one', arg: 'A', image: 'alpine:3.20' },
      { arg: 'B', image: 'busybox:1.36' },
      { name: 'three', image: 'debian:trixie' },
    ]);
  });
});
