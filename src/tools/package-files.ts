/**
 * Files pgfsm ships beside its code: the CRDs and RBAC under deploy/, the examples, the CNPG stand-in
 * CRDs and the control-plane wrapper modules under test/. They are found from the package root, not
 * relative to the importing module, because the same module runs at two depths: from src/ through tsx
 * (`npm start`, the tests) and from dist/src/ once compiled (`npm run build`, the image).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'pgfsm';

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME
    ) {
      return dir;
    }
    if (dirname(dir) === dir) throw new Error(`no package.json of ${PACKAGE_NAME} in ${from} or above it`);
  }
}

/** The directory holding pgfsm's package.json. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** An absolute path to a file or directory shipped with pgfsm, given relative to the package root. */
export const packageFile = (...segments: string[]): string => join(PACKAGE_ROOT, ...segments);
