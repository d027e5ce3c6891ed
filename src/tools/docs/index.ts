/**
 * The reference tables of docs/operations.md, generated from the code: the `pgfsm run` options, the
 * metrics of the OperatorMetrics registry, the log lines of the controller, and the events and
 * conditions the lifecycle produces when it is explored from every state with sample worlds.
 *
 * Pure apart from running the code it documents in memory: no file, network or clock. The sample worlds
 * come from the caller (src/tools/generate/docs.ts builds them from the test fixtures).
 */

import type { TickEvent } from '../../operator/domain/observation.ts';
import { READY_EVENT_OF } from '../../operator/domain/vocabulary.ts';
import { conditionDocs, conditionsTable, unpublishedReasons } from './conditions.ts';
import { eventDocs, eventsTable } from './events.ts';
import { explore } from './lifecycle.ts';
import { captureLogLines, logKeysTable, logLines, logLinesTable } from './logs.ts';
import { metricsTable, operatorMetrics } from './metrics.ts';
import { optionsTable } from './options.ts';

export const REGENERATE = 'node --conditions=development --import tsx src/tools/generate/docs.ts';

export const SECTIONS = ['run-options', 'metrics', 'log-lines', 'log-keys', 'events', 'conditions'] as const;
export type SectionName = (typeof SECTIONS)[number];

export interface ReferenceInputs {
  /** Sample worlds; together they must make every reason of the vocabulary appear. */
  ticks: readonly TickEvent[];
}

export async function renderSections(inputs: ReferenceInputs): Promise<Record<SectionName, string>> {
  const readiness = Object.values(READY_EVENT_OF);
  const exploration = await explore(inputs.ticks, new Set(readiness));
  const conditions = conditionDocs(exploration.conditions);
  const emitted = new Set(exploration.events.map((e) => e.event.reason));
  const missing = [...unpublishedReasons(conditions), ...readiness.filter((r) => !emitted.has(r))];
  if (missing.length > 0) {
    throw new Error(`no sample world makes these reasons appear (add one to src/tools/generate/docs.ts): ${missing}`);
  }
  const lines = logLines(await captureLogLines());
  return {
    'run-options': optionsTable(),
    metrics: metricsTable(await operatorMetrics()),
    'log-lines': logLinesTable(lines),
    'log-keys': logKeysTable(lines),
    events: eventsTable(eventDocs(exploration.events)),
    conditions: conditionsTable(conditions),
  };
}

export { fillSections, sectionNames } from './markdown.ts';
