/**
 * Fills the generated sections of docs/operations.md (between `<!-- generated:NAME -->` and
 * `<!-- /generated:NAME -->`) from the code, through src/tools/docs/. Run after changing run options, metrics,
 * log lines, events, conditions or reasons:
 *   node --conditions=development --import tsx src/tools/generate/docs.ts          # rewrite
 *   node --conditions=development --import tsx src/tools/generate/docs.ts --check  # fail when stale
 * test/unit/docs.test.ts fails while the committed file differs from what this writes.
 *
 * The sample worlds the lifecycle is explored with are the path tests' samples plus a few more, so that
 * every reason of the vocabulary (src/operator/domain/vocabulary.ts) shows up; src/tools/docs fails when one does not.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CnpgPhase } from '../../operator/domain/components/cnpg-phases.ts';
import type { Observation, TickEvent } from '../../operator/domain/observation.ts';
import { fillSections, REGENERATE, renderSections } from '../docs/index.ts';
import { type Facts, FOREIGN_OWNER, healthyFacts, tickOf } from '../fixtures/observations.ts';
import { allSamples } from '../fixtures/samples.ts';

export const OPERATIONS_DOC = fileURLToPath(new URL('../../../docs/operations.md', import.meta.url));

const variant = (facts: Partial<Facts>, edit?: (o: Observation) => void): TickEvent => {
  const tick = tickOf({ ...healthyFacts, ...facts });
  edit?.(tick.observation);
  return tick;
};

const poolerDisabled = (o: Observation) => {
  o.cluster.spec = { ...o.cluster.spec, connectionPoolerEnabled: false };
};

/** The path tests' samples, every CNPG phase, and the worlds they leave out. */
export function sampleTicks(): TickEvent[] {
  return [
    ...allSamples,
    ...Object.values(CnpgPhase).map((phase) => variant({ cnpg: phase })),
    // Children left behind by a Retain deletion, taken back by a new cluster of the same name.
    variant({ secret: 'released' }),
    variant({ cnpg: 'released' }),
    variant({ configMap: 'released' }),
    variant({}, (o) => {
      for (const view of [o.poolers.rw, o.poolers.ro]) if (view) view.pooler.metadata.ownerReferences = [];
    }),
    variant({}, (o) => {
      if (o.cnpg) o.cnpg.metadata.ownerReferences = [FOREIGN_OWNER];
    }),
    // A CNPG Cluster left without an owner that authenticates with another superuser Secret.
    variant({ cnpg: 'released' }, (o) => {
      if (o.cnpg) o.cnpg.spec = { ...o.cnpg.spec, superuserSecret: { name: `${o.cluster.metadata.name}-secret` } };
    }),
    // The pooler switched off: the poolers are deleted, then the condition says so.
    variant({}, poolerDisabled),
    variant({ poolers: 'missing' }, poolerDisabled),
    variant({ deletion: true, policy: 'Delete', poolers: 'missing' }),
  ];
}

/** The document with its generated sections filled from the code. */
export async function renderOperationsDoc(current: string): Promise<string> {
  return fillSections(current, await renderSections({ ticks: sampleTicks() }));
}

async function main(args: string[]): Promise<void> {
  const current = readFileSync(OPERATIONS_DOC, 'utf8');
  const next = await renderOperationsDoc(current);
  if (args.includes('--check')) {
    if (next !== current) {
      console.error(`docs/operations.md is stale — run: ${REGENERATE}`);
      process.exitCode = 1;
    }
    return;
  }
  if (next !== current) writeFileSync(OPERATIONS_DOC, next);
  console.log(next === current ? 'docs/operations.md is up to date' : 'wrote docs/operations.md');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
