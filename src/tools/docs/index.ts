/**
 * The reference tables of the docs, generated from the code. docs/operations.md: the `pgfsm run` options,
 * the metrics of the OperatorMetrics registry, the log lines of the controller, and the events and
 * conditions of the PostgresCluster's lifecycle. docs/databases.md: the events and conditions of the
 * PostgresDatabase's, by the same functions. A lifecycle's tables come from exploring it from every state
 * with sample worlds (lifecycle.ts).
 *
 * Pure apart from running the code it documents in memory: no file, network or clock. The sample worlds
 * come from the caller (src/tools/generate/docs.ts builds them from the test fixtures).
 */

import type { DatabaseTick } from '../../operator/domain/database/observation.ts';
import type { TickEvent } from '../../operator/domain/observation.ts';
import {
  CLUSTER_REASONS,
  CONDITION_MEANING,
  conditionDocs,
  conditionsTable,
  DATABASE_CONDITION_MEANING,
  DATABASE_REASONS,
  unpublishedReasons,
} from './conditions.ts';
import { eventDocs, eventsTable } from './events.ts';
import {
  CLUSTER_LIFECYCLE,
  DATABASE_LIFECYCLE,
  type ExploredMachine,
  explore,
  type LifecycleEffect,
  type LifecycleTick,
} from './lifecycle.ts';
import { captureLogLines, logKeysTable, logLines, logLinesTable } from './logs.ts';
import { metricsTable, operatorMetrics } from './metrics.ts';
import { optionsTable } from './options.ts';

export const REGENERATE = 'node --conditions=development --import tsx src/tools/generate/docs.ts';

/** The generated sections of docs/operations.md. */
export const SECTIONS = ['run-options', 'metrics', 'log-lines', 'log-keys', 'events', 'conditions'] as const;
export type SectionName = (typeof SECTIONS)[number];

/** The generated sections of docs/databases.md: a lifecycle's, as operations.md has them for the cluster. */
export const DATABASE_SECTIONS = ['events', 'conditions'] as const;
export type DatabaseSectionName = (typeof DATABASE_SECTIONS)[number];

export interface ReferenceInputs {
  /** Sample worlds; together they must make every reason of the vocabulary appear. */
  ticks: readonly TickEvent[];
}

export interface DatabaseReferenceInputs {
  /** Sample worlds; together they must make every reason of the database's vocabulary appear. */
  ticks: readonly DatabaseTick[];
}

/** What a lifecycle's tables are made from, besides the machine and its sample worlds. */
interface LifecycleVocabulary {
  /** Condition type → what it stands for. */
  meanings: Readonly<Record<string, string>>;
  /** Every reason of the vocabulary: each must appear on a published condition. */
  reasons: readonly string[];
}

/** The events and conditions tables of one lifecycle; throws when a sample world is missing for a reason. */
async function lifecycleSections<T extends LifecycleTick, F extends LifecycleEffect>(
  machine: ExploredMachine<T, F>,
  ticks: readonly T[],
  vocabulary: LifecycleVocabulary,
): Promise<Record<'events' | 'conditions', string>> {
  const exploration = await explore(machine, ticks);
  const conditions = conditionDocs(exploration.conditions, vocabulary.meanings);
  const missing = unpublishedReasons(conditions, vocabulary.reasons);
  if (missing.length > 0) {
    throw new Error(`no sample world makes these reasons appear (add one to src/tools/generate/docs.ts): ${missing}`);
  }
  return { events: eventsTable(eventDocs(exploration.events)), conditions: conditionsTable(conditions) };
}

export async function renderSections(inputs: ReferenceInputs): Promise<Record<SectionName, string>> {
  const lifecycle = await lifecycleSections(CLUSTER_LIFECYCLE, inputs.ticks, {
    meanings: CONDITION_MEANING,
    reasons: CLUSTER_REASONS,
  });
  const lines = logLines(await captureLogLines());
  return {
    'run-options': optionsTable(),
    metrics: metricsTable(await operatorMetrics()),
    'log-lines': logLinesTable(lines),
    'log-keys': logKeysTable(lines),
    ...lifecycle,
  };
}

/** The PostgresDatabase's tables: the same functions, bound to its machine and vocabulary. */
export function renderDatabaseSections(inputs: DatabaseReferenceInputs): Promise<Record<DatabaseSectionName, string>> {
  return lifecycleSections(DATABASE_LIFECYCLE, inputs.ticks, {
    meanings: DATABASE_CONDITION_MEANING,
    reasons: DATABASE_REASONS,
  });
}

export { fillSections, sectionNames } from './markdown.ts';
