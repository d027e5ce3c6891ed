/**
 * How the sandbox talks to the person running it: plain lines on stdout, a little colour on a terminal
 * (none when piped, or with NO_COLOR), and times relative to a start so a run reads like a log.
 */

export interface Output {
  line(text?: string): void;
  /** A step of the bring-up or teardown: `▸ text`. */
  step(text: string): void;
  /** Detail under a step (control plane progress, paths). */
  detail(text: string): void;
  warn(text: string): void;
  readonly style: Style;
}

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  red(s: string): string;
  cyan(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`;

const colours: Style = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  red: sgr(31, 39),
  cyan: sgr(36, 39),
};

const plain: Style = {
  bold: (s) => s,
  dim: (s) => s,
  green: (s) => s,
  yellow: (s) => s,
  red: (s) => s,
  cyan: (s) => s,
};

export function useColour(stream: NodeJS.WriteStream = process.stdout, env = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true;
}

export function createOutput(write: (text: string) => void = (t) => process.stdout.write(t), colour = useColour()) {
  const style = colour ? colours : plain;
  const output: Output = {
    style,
    line: (text = '') => write(`${text}\n`),
    step: (text) => write(`${style.bold(`▸ ${text}`)}\n`),
    detail: (text) => write(`  ${style.dim(text)}\n`),
    warn: (text) => write(`${style.yellow(`! ${text}`)}\n`),
  };
  return output;
}

/** `+mm:ss` since `start`. */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  return `+${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** `23 s`, `1 min 05 s`: a duration for a sentence. */
export function took(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** Left-aligned columns, two spaces apart; `widthOf` ignores colour codes. */
export function table(rows: string[][], style: (cell: string, row: number, column: number) => string = (c) => c) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping ANSI colour codes
  const widthOf = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '').length;
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => widthOf(r[c] ?? '')))) ?? [];
  return rows.map((row, r) =>
    row
      .map((cell, c) => {
        const styled = style(cell, r, c);
        return c === row.length - 1 ? styled : styled + ' '.repeat((widths[c] ?? 0) - widthOf(cell));
      })
      .join('  '),
  );
}
