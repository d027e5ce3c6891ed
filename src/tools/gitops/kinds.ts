/**
 * The kinds GitOps tools are told how to judge: one per machine (machines/chart.ts `MACHINES`), each with
 * the state table its machine implies. Every artefact under deploy/health/ is rendered from this list, so a
 * machine added to `MACHINES` gets its health checks by naming the status projection that publishes it.
 */
import { MACHINES, type MachineDescription } from '../../../machines/chart.ts';
import { type ExpectedStatus, expectedStatuses } from './table.ts';

/** The module that projects each kind's status from its machine's state (by the summary rule). */
const PROJECTION_OF: Readonly<Record<string, string>> = {
  PostgresCluster: 'src/operator/core/status.ts',
  PostgresDatabase: 'src/operator/core/database/status.ts',
};

export interface HealthKind {
  /** The resource's kind, `PostgresCluster`; its API version is the operator's (API_VERSION). */
  kind: string;
  /** The machine's definition, `machines/postgres-cluster.ts`: what its artefacts are generated from. */
  source: string;
  /** The status projection that publishes what `table` documents. */
  projection: string;
  /** One row per state (and deadline variant), in document order. */
  table: ExpectedStatus[];
}

export function healthKindOf(machine: MachineDescription): HealthKind {
  const projection = PROJECTION_OF[machine.title];
  if (!projection) throw new Error(`${machine.title}: no status projection is known for its health checks`);
  return {
    kind: machine.title,
    source: `machines/${machine.file}.ts`,
    projection,
    table: expectedStatuses(machine.chart),
  };
}

/** Every kind pgfsm reconciles, in `MACHINES` order (the cluster's first). */
export const healthKinds = (machines: readonly MachineDescription[] = MACHINES): HealthKind[] =>
  machines.map(healthKindOf);

/** The plural a reader uses for a kind's objects: `PostgresClusters`. */
export const plural = (kind: string) => `${kind}s`;
