/**
 * Files of the checkout the tools read: the CRDs and RBAC under deploy/, the examples and the
 * control-plane wrapper modules under src/tools/ (CloudNativePG's own CRDs come from its Go module). The
 * tools wing always runs from its sources (it is never compiled into dist/), so the package root is a fixed
 * step up from this module.
 * The operator wing reads no file of the checkout but package.json, for its version (operator/driver/build-info.ts).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The directory holding pgfsm's package.json. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** An absolute path to a file or directory of the checkout, given relative to the package root. */
export const packageFile = (...segments: string[]): string => join(PACKAGE_ROOT, ...segments);
