/** Progress output for the control-plane harness. */

export type Log = (line: string) => void;

/**
 * Progress goes to stderr so that it shows up live in vitest (which buffers stdout per test) and so that a
 * CLI caller can still capture stdout (paths, versions) on its own.
 */
export const stderrLog: Log = (line) => {
  process.stderr.write(`[control-plane] ${line}\n`);
};

export const silentLog: Log = () => {};
