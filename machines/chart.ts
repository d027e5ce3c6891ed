/**
 * The machines, walked once: what every reader outside the package looks states up in. `MACHINES`
 * describes each machine once for the tools that serve them all (the diagrams): its walked chart, its
 * guard catalogue, its sequences and the conditions its steps publish.
 */
import { DATABASE_CONDITION_OF } from '../src/operator/domain/database/vocabulary.ts';
import { CONDITION_OF } from '../src/operator/domain/vocabulary.ts';
import { DATABASE_GUARDS } from './database-guards.ts';
import { DATABASE_MACHINE_ID, DATABASE_SEQUENCES } from './database-states.ts';
import { catalogueOf, clusterGuards, type GuardReader } from './guards.ts';
import { postgresClusterMachine } from './postgres-cluster.ts';
import { postgresDatabaseMachine } from './postgres-database.ts';
import { MACHINE_ID, SEQUENCES } from './states.ts';
import { type Chart, index, walk } from './walk.ts';

export const lifecycleChart: Chart = walk(postgresClusterMachine);
export const lifecycle = index(lifecycleChart);

/** The PostgresDatabase machine, walked once. */
export const databaseChart: Chart = walk(postgresDatabaseMachine);
export const databaseLifecycle = index(databaseChart);

/** One machine, as the tools that serve every machine read it. */
export interface MachineDescription {
  /** The machine's id, as its state ids spell it (`#postgresCluster.Ready`); the chart's id. */
  id: string;
  /** The kind of resource whose lifecycle it runs. */
  title: string;
  /** Its definition is machines/<file>.ts; its pictures are diagrams/<file>.{dot,mmd,svg}. */
  file: string;
  chart: Chart;
  /** Its guard catalogue's readers. */
  guards: GuardReader;
  /** Its compound states whose children run one after the other, with how a reader names them. */
  sequences: Readonly<Record<string, string>>;
  /** The condition type each component (a state's `meta.step`) publishes. */
  conditionOf: Readonly<Record<string, string>>;
}

/** Every machine, the cluster's first: the order the diagrams list them in. */
export const MACHINES: readonly MachineDescription[] = [
  {
    id: MACHINE_ID,
    title: 'PostgresCluster',
    file: 'postgres-cluster',
    chart: lifecycleChart,
    guards: clusterGuards,
    sequences: SEQUENCES,
    conditionOf: CONDITION_OF,
  },
  {
    id: DATABASE_MACHINE_ID,
    title: 'PostgresDatabase',
    file: 'postgres-database',
    chart: databaseChart,
    guards: catalogueOf(DATABASE_GUARDS, 'machines/database-guards.ts'),
    sequences: DATABASE_SEQUENCES,
    conditionOf: DATABASE_CONDITION_OF,
  },
];
