/** `pgfsm explain`, the pure part: the explanation of one PostgresCluster or PostgresDatabase and its renderings. */
export { type DatabaseExplainInput, type ExplainInput, explain, explainDatabase } from './explain.ts';
export { describeDatabaseEffect, describeEffect } from './machines.ts';
export { display, renderJson, renderText } from './render.ts';
export { formatSeconds } from './time.ts';
export type { DatabaseExplanation, ExplainEvent, Explanation } from './types.ts';
