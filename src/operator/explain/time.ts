/** Durations as kubectl prints ages: `45s`, `3m12s`, `2h5m`, `3d4h`. */

const UNITS: Array<[string, number]> = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
];

/** Two most significant units are enough to read; a negative duration prints as its magnitude. */
export function formatSeconds(total: number): string {
  let rest = Math.abs(Math.round(total));
  if (rest === 0) return '0s';
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    } else if (parts.length > 0) break;
  }
  return parts.join('');
}

/** Whole seconds from `iso` to `now`; null when there is no (valid) time. */
export function ageSeconds(iso: string | null | undefined, now: number): number | null {
  if (!iso) return null;
  const at = Date.parse(iso);
  return Number.isNaN(at) ? null : Math.floor((now - at) / 1000);
}
