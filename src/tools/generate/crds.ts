/**
 * Writes deploy/crds/*.yaml from src/tools/generate/crd-manifests.ts. Run after any change to src/operator/api/schema.ts:
 *   node --conditions=development --import tsx src/tools/generate/crds.ts
 * test/unit/crds.test.ts fails while the committed files differ from what this writes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { renderCrdFiles } from './crd-manifests.ts';

const outDir = new URL('../../../deploy/crds/', import.meta.url);
mkdirSync(outDir, { recursive: true });
for (const [name, text] of Object.entries(renderCrdFiles())) {
  writeFileSync(new URL(name, outDir), text);
  console.log(`wrote deploy/crds/${name}`);
}
