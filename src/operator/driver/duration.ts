/** Durations as operators write them on command lines and in env vars: `500ms`, `15s`, `15m`, `1h30m`. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Milliseconds of a duration such as `15s`, `15m` or `1h30m` (Go's time.ParseDuration subset). */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(trimmed)) {
    throw new Error(`invalid duration "${text}": use a number with a unit, e.g. 500ms, 15s, 15m, 1h30m`);
  }
  let ms = 0;
  for (const [, value, unit] of trimmed.matchAll(PART)) ms += Number(value) * (UNIT_MS[unit ?? ''] ?? 0);
  return Math.round(ms);
}
