/**
 * The state-path codec now lives in the machine package (machines/state-path.ts). This re-export is
 * kept only until bench/reconcile.bench.ts imports it from there; it is not a second codec.
 */
export { encodeState, restoreState, type Snapshot } from '../../../machines/state-path.ts';
