/** What the sandbox says at the end of the wait: the summaries when everything is Ready, or what is not. */
import { readFileSync } from 'node:fs';
import { type Output, took } from './output.ts';
import { databaseSummary, type ExampleKeys, messageOf, type Progress, reasonOf, summary } from './progress.ts';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export function printReady(out: Output, progress: Progress, awaited: ExampleKeys, started: number): void {
  const { clusters, databases } = awaited;
  const what =
    databases.length > 0
      ? `All ${clusters.length} example clusters and their ${plural(databases.length, 'database', 'databases')}`
      : `All ${clusters.length} example clusters`;
  out.line();
  out.line(out.style.green(`${what} are Ready in ${took(Date.now() - started)}.`));
  out.line();
  for (const row of summary(
    clusters.map((k) => progress.cluster(k)),
    out,
  )) {
    out.line(`  ${row}`);
  }
  if (databases.length === 0) return;
  out.line();
  for (const row of databaseSummary(
    databases.map((k) => progress.database(k)),
    out,
  )) {
    out.line(`  ${row}`);
  }
}

/** Which clusters and databases are not Ready and why, with the operator's last warnings: enough to start debugging. */
export function reportTimeout(
  out: Output,
  progress: Progress,
  awaited: ExampleKeys,
  timeoutMs: number,
  logFiles: string[],
) {
  out.line(out.style.red(`\nNot all examples were Ready after ${took(timeoutMs)}:`));
  const say = (key: string, o: Parameters<typeof reasonOf>[0] | undefined) =>
    out.line(`  ${key}: ${o?.status?.state ?? '(no status)'} ${o ? `(${reasonOf(o)}: ${messageOf(o)})` : ''}`);
  for (const key of awaited.clusters) say(key, progress.cluster(key));
  for (const key of awaited.databases) say(key, progress.database(key));
  for (const logFile of logFiles) {
    const problems = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => /"level":"(warn|error|fatal)"/.test(l))
      .slice(-10);
    if (problems.length > 0) out.line(`last warnings in ${logFile}:\n${problems.join('\n')}`);
  }
}
