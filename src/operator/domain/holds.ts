/** A comparison the core and the domain share: what was sent, found in what is stored. */
import { isDeepStrictEqual } from 'node:util';

/**
 * Whether `actual` holds everything `expected` says: its fields, recursively, with the same values; list
 * items in order, each holding the one sent. What others added (defaults, status, other managers'
 * fields) does not matter; anything sent and not found does.
 */
export function holds(actual: unknown, expected: unknown): boolean {
  if (expected === undefined) return true;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => holds(actual[i], e));
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    const fields = actual as Record<string, unknown>;
    return Object.entries(expected).every(([k, v]) => holds(fields[k], v));
  }
  return isDeepStrictEqual(actual, expected);
}
