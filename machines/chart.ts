/** The lifecycle machine, walked once: what every reader outside the package looks states up in. */
import { postgresClusterMachine } from './postgres-cluster.ts';
import { type Chart, index, walk } from './walk.ts';

export const lifecycleChart: Chart = walk(postgresClusterMachine);
export const lifecycle = index(lifecycleChart);
