/**
 * Every `Cluster.status.phase` sentence of the CloudNativePG in use has a meaning in pgfsm
 * (src/operator/domain/components/cnpg-phases.ts), read from its own module's API types. A phase pgfsm does not know
 * reads as "still working", which would hide a failure: 1.30 added "Invalid cluster definition", a Failed one.
 * Here, not in the unit project, because only here is the module sure to be on the machine (`ensureCnpgModule`
 * fetches it); the compat rows run it on every supported CloudNativePG.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CnpgPhase } from '../../src/operator/domain/components/cnpg-phases.ts';
import { CNPG_VERSION, ensureCnpgModule } from '../../src/tools/control-plane/build.ts';

let moduleDir = '';

beforeAll(async () => {
  moduleDir = await ensureCnpgModule();
});

/** The phase sentences the module declares: `Phase… = "sentence"` in api/v1/cluster_types.go. */
function declaredPhases(dir: string): string[] {
  const source = readFileSync(join(dir, 'api/v1/cluster_types.go'), 'utf8');
  return [...source.matchAll(/^\s+Phase[A-Za-z]+\s*=\s*"([^"]+)"/gm)].map((match) => match[1] ?? '');
}

describe(`CloudNativePG ${CNPG_VERSION}'s cluster phases (its module)`, () => {
  it('are each known to pgfsm', () => {
    const declared = declaredPhases(moduleDir);
    expect(declared.length).toBeGreaterThan(15);
    const known = new Set<string>(Object.values(CnpgPhase));
    expect(declared.filter((phase) => !known.has(phase))).toEqual([]);
  });
});
