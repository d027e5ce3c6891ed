/**
 * Objects read as untrusted JSON (a cached object stored before the CRD rules, or with validation off, may hold
 * any type anywhere): whether a value is a plain object whose fields may be read.
 */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
