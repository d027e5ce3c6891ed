/**
 * Which cluster the sandbox may touch. By default only its own local control plane: the user's kubeconfig
 * is never read, so `npm start` cannot change a real cluster by accident. `--use-current-context` opts in,
 * and even then a person must confirm on a terminal, or say `--yes` up front (scripts, CI).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface TargetChoice {
  useCurrentContext: boolean;
  yes: boolean;
  /** stdin is a terminal a person can answer on. */
  interactive: boolean;
}

/**
 * - `local`: the sandbox's own control plane (the default);
 * - `proceed`: the current context, already confirmed by `--yes`;
 * - `ask`: the current context, after a y/N answer on the terminal;
 * - `refuse`: the current context was asked for, but nobody can confirm it.
 */
export type TargetDecision = 'local' | 'proceed' | 'ask' | 'refuse';

export function decideTarget({ useCurrentContext, yes, interactive }: TargetChoice): TargetDecision {
  if (!useCurrentContext) return 'local';
  if (yes) return 'proceed';
  return interactive ? 'ask' : 'refuse';
}

/** Only an explicit yes counts; an empty answer is the default, No. */
export const isYes = (answer: string) => /^\s*y(es)?\s*$/i.test(answer);

/** Where a kubeconfig would come from if anything read one; only used to say that it is being ignored. */
export function userKubeconfig(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.KUBECONFIG) return `KUBECONFIG=${env.KUBECONFIG}`;
  const home = join(homedir(), '.kube', 'config');
  return existsSync(home) ? home : undefined;
}
