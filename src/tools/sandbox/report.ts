/** What the sandbox says at the end of the wait: the summary when everything is Ready, or what is not. */
import { readFileSync } from 'node:fs';
import { type Output, took } from './output.ts';
import { type ClusterProgress, reasonOf, summary } from './progress.ts';

export function printReady(out: Output, progress: ClusterProgress, clusters: string[], started: number): void {
  out.line();
  out.line(out.style.green(`All ${clusters.length} example clusters are Ready in ${took(Date.now() - started)}.`));
  out.line();
  for (const row of summary(
    clusters.map((k) => progress.get(k)),
    out,
  )) {
    out.line(`  ${row}`);
  }
}

/** Which clusters are not Ready and why, with the operator's last warnings: enough to start debugging. */
export function reportTimeout(
  out: Output,
  progress: ClusterProgress,
  keys: string[],
  timeoutMs: number,
  logFiles: string[],
) {
  out.line(out.style.red(`\nNot all examples were Ready after ${took(timeoutMs)}:`));
  for (const key of keys) {
    const c = progress.get(key);
    const ready = c?.status?.conditions?.find((x) => x.type === 'Ready');
    out.line(`  ${key}: ${c?.status?.state ?? '(no status)'} ${c ? `(${reasonOf(c)}: ${ready?.message ?? ''})` : ''}`);
  }
  for (const logFile of logFiles) {
    const problems = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => /"level":"(warn|error|fatal)"/.test(l))
      .slice(-10);
    if (problems.length > 0) out.line(`last warnings in ${logFile}:\n${problems.join('\n')}`);
  }
}
