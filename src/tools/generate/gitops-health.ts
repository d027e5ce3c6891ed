/**
 * Writes deploy/health/ (an Argo CD health.lua per kind and the argocd-cm snippet, Flux healthCheckExprs,
 * mapping table) from the states of every machine (PostgresCluster, PostgresDatabase) and their meta. Run
 * after any change to machines/ or a status projection:
 *   node --conditions=development --import tsx src/tools/generate/gitops-health.ts
 * test/unit/health-artefacts.test.ts fails while the committed files differ from what this writes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { renderHealthFiles } from '../gitops/index.ts';

const outDir = new URL('../../../deploy/health/', import.meta.url);
for (const [path, text] of Object.entries(renderHealthFiles())) {
  const target = new URL(path, outDir);
  mkdirSync(new URL('.', target), { recursive: true });
  writeFileSync(target, text);
  console.log(`wrote deploy/health/${path}`);
}
