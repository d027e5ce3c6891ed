/**
 * CloudNativePG's default image names, read from its own module: the real node tags its operator and PgBouncer
 * images (src/tools/node/images/recipes.ts) with the references CNPG pulls by default, so they must be the ones the
 * pinned CNPG names. This lives in the integration project, not the unit one, because the module is only sure to
 * be on the machine here: `ensureCnpgModule` (the call the control plane's CNPG harness makes) fetches it when it
 * is missing, and fails naming the step when it cannot. Never a skip: a unit test that skipped while the module
 * had not been fetched yet checked nothing on a fresh machine.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CNPG_VERSION, ensureCnpgModule } from '../../src/tools/control-plane/build.ts';
import { CNPG_OPERATOR_REF, PGBOUNCER_REF } from '../../src/tools/node/images/recipes.ts';

let moduleDir = '';

beforeAll(async () => {
  moduleDir = await ensureCnpgModule();
});

describe(`CloudNativePG ${CNPG_VERSION}'s default image names (its module)`, () => {
  it('are the references the operator and PgBouncer images are tagged with', () => {
    const versions = readFileSync(join(moduleDir, 'pkg/versions/versions.go'), 'utf8');
    expect(versions).toContain(`DefaultOperatorImageName = "${CNPG_OPERATOR_REF}"`);
    expect(versions).toContain(`DefaultPgbouncerImage = "${PGBOUNCER_REF}"`);
  });

  it('is the version the operator image names', () => {
    expect(CNPG_OPERATOR_REF.endsWith(`:${CNPG_VERSION.replace(/^v/, '')}`)).toBe(true);
  });
});
