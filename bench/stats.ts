/** Small statistics for the bench's tables. */

/** The q-quantile (0..1) of `values` by the nearest-rank method; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] as number;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
  n: number;
}

/** min/median/max over repetitions (NaNs, i.e. figures a repetition did not produce, left out). */
export function spread(values: readonly number[]): Spread {
  const known = values.filter((v) => Number.isFinite(v));
  if (known.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN, n: 0 };
  const sorted = [...known].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { min: sorted[0] as number, median, max: sorted[sorted.length - 1] as number, n: sorted.length };
}

/** `median (min–max)`, or just the value for one repetition. */
export function formatSpread(s: Spread, format: (v: number) => string): string {
  if (s.n === 0) return '—';
  if (s.n === 1 || s.min === s.max) return format(s.median);
  return `${format(s.median)} (${format(s.min)}–${format(s.max)})`;
}
