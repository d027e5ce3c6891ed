/**
 * The line every generated health artefact starts with (as a comment in the file's own syntax), naming the
 * machine definitions it is generated from: one for a kind's own script, every one for a shared file.
 */
export const generatedNotice = (sources: readonly string[]) =>
  `Generated from ${listed(sources)} by src/tools/generate/gitops-health.ts — do not edit`;

/** `a`, `a and b`, `a, b and c` (or `or`). */
export const listed = (items: readonly string[], conjunction: 'and' | 'or' = 'and') =>
  items.length <= 2
    ? items.join(` ${conjunction} `)
    : `${items.slice(0, -1).join(', ')} ${conjunction} ${items.at(-1)}`;

export const REGENERATE = 'node --conditions=development --import tsx src/tools/generate/gitops-health.ts';

/** The summary conditions (machines/summary.ts, published by src/operator/core/status.ts): the contract every consumer reads. */
export const READY = 'Ready';
export const RECONCILING = 'Reconciling';
export const STALLED = 'Stalled';

/** Pads cells into aligned columns, for the verdict tables embedded in comments. */
export function columns(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

export const variantLabel = (state: string, variant: string) =>
  variant === 'deadlineExceeded' ? `${state} (past deadline)` : state;
