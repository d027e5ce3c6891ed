/** `pgfsm explain`, the pure part: the explanation of one PostgresCluster and its renderings. */
export { describeEffect, type ExplainInput, explain } from './explain.ts';
export { display, renderJson, renderText } from './render.ts';
export { formatSeconds } from './time.ts';
export type { ExplainEvent, Explanation } from './types.ts';
