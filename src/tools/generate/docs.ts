/**
 * Fills the generated sections of docs/operations.md and docs/databases.md (between `<!-- generated:NAME -->`
 * and `<!-- /generated:NAME -->`) from the code, through src/tools/docs/. Run after changing run options,
 * metrics, log lines, events, conditions or reasons:
 *   node --conditions=development --import tsx src/tools/generate/docs.ts          # rewrite
 *   node --conditions=development --import tsx src/tools/generate/docs.ts --check  # fail when stale
 * test/unit/docs.test.ts fails while a committed file differs from what this writes.
 *
 * The sample worlds each lifecycle is explored with are its path tests' samples plus a few more, so that
 * every reason of its vocabulary (src/operator/domain/vocabulary.ts, src/operator/domain/database/vocabulary.ts)
 * shows up; src/tools/docs fails when one does not.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CnpgPhase } from '../../operator/domain/components/cnpg-phases.ts';
import type { DatabaseObservation, DatabaseTick } from '../../operator/domain/database/observation.ts';
import { defaultSettings, type Observation, type TickEvent } from '../../operator/domain/observation.ts';
import { ADOPT_ANNOTATION } from '../../operator/domain/vocabulary.ts';
import { fillSections, REGENERATE, renderDatabaseSections, renderSections } from '../docs/index.ts';
import { type BackupVariant, backedUp, type RestoreVariant, restoring } from '../fixtures/backups.ts';
import {
  allDatabaseSamples,
  type DatabaseFacts,
  databaseObservation,
  healthyDatabaseFacts,
} from '../fixtures/database-samples.ts';
import { type Facts, FOREIGN_OWNER, healthyFacts, tickOf } from '../fixtures/observations.ts';
import { allSamples } from '../fixtures/samples.ts';

export const OPERATIONS_DOC = fileURLToPath(new URL('../../../docs/operations.md', import.meta.url));
export const DATABASES_DOC = fileURLToPath(new URL('../../../docs/databases.md', import.meta.url));

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
    // Poolers left without an owner and handed over: adopted.
    variant({}, (o) => {
      for (const view of [o.poolers.rw, o.poolers.ro]) {
        if (!view) continue;
        view.pooler.metadata.ownerReferences = [];
        view.pooler.metadata.annotations = { ...view.pooler.metadata.annotations, [ADOPT_ANNOTATION]: 'true' };
      }
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
    // ... and once they are gone, the endpoints ConfigMap still names them: updated.
    variant({}, (o) => {
      poolerDisabled(o);
      o.poolers = {};
    }),
    variant({ deletion: true, policy: 'Delete', poolers: 'missing' }),
    // Backed up (issue 36): every state of the archive and of the backup objects, and the restores.
    ...BACKUP_VARIANTS.map((v) => variant({}, (o) => backedUp(o, v))),
    ...RESTORE_VARIANTS.map((v) => variant(NEW_CLUSTER, (o) => restoring(o, v))),
  ];
}

const BACKUP_VARIANTS: BackupVariant[] = [
  'archiving',
  'archivingUnknown',
  'archivingFailing',
  'objectsMissing',
  'credentialsMissing',
  'storeOfNobody',
  'tokenRefused',
  'backupAsked',
  'backupStuck',
];
const RESTORE_VARIANTS: RestoreVariant[] = ['sourceMissing', 'sourceReady', 'storeReady', 'targetTooEarly'];
/** A cluster whose Secret exists and nothing else yet: where a restore starts. */
const NEW_CLUSTER: Partial<Facts> = {
  cnpg: 'missing',
  rolesState: 'notPushed',
  poolers: 'missing',
  configMap: 'missing',
};

const databaseVariant = (facts: Partial<DatabaseFacts>, edit: (o: DatabaseObservation) => void): DatabaseTick => {
  const observation = databaseObservation({ ...healthyDatabaseFacts, ...facts });
  edit(observation);
  return { type: 'tick', now: Date.parse('2026-11-30T12:00:00Z'), observation, settings: defaultSettings };
};

/** The database path tests' samples, and the worlds they leave out. */
export function databaseSampleTicks(): DatabaseTick[] {
  return [
    ...allDatabaseSamples,
    // A Secret of a role's name that nobody handed over: no owner, no pgfsm.io/adopt.
    databaseVariant({}, (o) => {
      for (const view of Object.values(o.secrets)) {
        if (view) view.metadata = { ...view.metadata, ownerReferences: [], annotations: {} };
      }
    }),
    // A role the cluster's own spec.managedRoles holds.
    databaseVariant({}, (o) => {
      if (o.cluster) o.cluster.spec = { ...o.cluster.spec, managedRoles: [{ name: 'reader' }] };
    }),
  ];
}

/** docs/operations.md with its generated sections filled from the code. */
export async function renderOperationsDoc(current: string): Promise<string> {
  return fillSections(current, await renderSections({ ticks: sampleTicks() }));
}

/** docs/databases.md with its generated sections filled from the code. */
export async function renderDatabasesDoc(current: string): Promise<string> {
  return fillSections(current, await renderDatabaseSections({ ticks: databaseSampleTicks() }));
}

const DOCS: Array<[string, string, (current: string) => Promise<string>]> = [
  [OPERATIONS_DOC, 'docs/operations.md', renderOperationsDoc],
  [DATABASES_DOC, 'docs/databases.md', renderDatabasesDoc],
];

async function main(args: string[]): Promise<void> {
  for (const [file, name, render] of DOCS) {
    const current = readFileSync(file, 'utf8');
    const next = await render(current);
    if (args.includes('--check')) {
      if (next !== current) {
        console.error(`${name} is stale — run: ${REGENERATE}`);
        process.exitCode = 1;
      }
      continue;
    }
    if (next !== current) writeFileSync(file, next);
    console.log(next === current ? `${name} is up to date` : `wrote ${name}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv.slice(2));
