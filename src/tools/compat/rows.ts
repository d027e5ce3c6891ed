/**
 * The rows of docs/compatibility.md that `npm test` does not run: each names the versions it picks (through
 * PGFSM_KUBERNETES_VERSION / PGFSM_CNPG_VERSION, read by src/tools/control-plane/build.ts) and the integration
 * files it runs on them. `npm test` itself is the row of the defaults (the first version of each list in build.ts).
 */
import {
  type CnpgVersion,
  type KubernetesVersion,
  SUPPORTED_CNPG,
  SUPPORTED_KUBERNETES,
} from '../control-plane/build.ts';

export interface CompatRow {
  /** Short name, for `--row`. */
  id: string;
  kubernetes: KubernetesVersion;
  cnpg: CnpgVersion;
  /** The vitest project (default `integration`). */
  project?: 'integration' | 'e2e-compat';
  /** Files under the project's directory (test/integration/ or test/e2e/compat/), or all of them when empty. */
  files: readonly string[];
  /** What the row checks, for its line of output and the table. */
  scope: string;
}

/**
 * The integration files in which CloudNativePG's own code judges what pgfsm does: its real CRDs (every status field
 * pgfsm reads survives them), its admission webhooks against every object pgfsm builds (Cluster, Poolers, managed
 * roles, Database) and pgfsm's merge check, the refusals reported as Stalled, the staged roll-out its webhook
 * demands, and its real controller reconciling pgfsm's objects with the status mapping pgfsm reads from it (and
 * every phase its module names mapped, cnpg-phases.test.ts).
 *
 * Left out: cnpg-image-names.test.ts, which checks the real node's image tags against the default CloudNativePG only
 * (the node builds the images of that one), and the files that do not depend on CloudNativePG's version.
 */
export const CNPG_FILES = [
  'cnpg.test.ts',
  'cnpg-phases.test.ts',
  'cnpg-refusal.test.ts',
  'cnpg-rollout.test.ts',
  'crds.test.ts',
  'database.test.ts',
  'database-adapters.test.ts',
  'bad-inputs.test.ts',
] as const;

const [DEFAULT_KUBERNETES] = Object.keys(SUPPORTED_KUBERNETES) as KubernetesVersion[];
const [DEFAULT_CNPG] = Object.keys(SUPPORTED_CNPG) as CnpgVersion[];

export const COMPAT_ROWS: readonly CompatRow[] = [
  {
    id: 'cnpg-1.29',
    kubernetes: DEFAULT_KUBERNETES as KubernetesVersion,
    cnpg: 'v1.29.2',
    files: CNPG_FILES,
    scope: 'CRDs, webhooks and controller against every object pgfsm builds, status mapping, refusals',
  },
  {
    id: 'cnpg-1.28',
    kubernetes: DEFAULT_KUBERNETES as KubernetesVersion,
    cnpg: 'v1.28.2',
    files: CNPG_FILES,
    scope: 'CRDs, webhooks and controller against every object pgfsm builds, status mapping, refusals',
  },
  {
    id: 'kubernetes-1.34',
    kubernetes: 'v1.34.4',
    cnpg: DEFAULT_CNPG as CnpgVersion,
    files: [],
    scope: 'the whole integration suite',
  },
  {
    // The real node's tests that npm test's budget has no room for (vitest.config.ts): upgrading CloudNativePG
    // 1.28.2 → 1.30.1 under a running pgfsm, and the DatabaseRole evidence. Root only, like npm run test:e2e.
    id: 'e2e-compat',
    kubernetes: DEFAULT_KUBERNETES as KubernetesVersion,
    cnpg: DEFAULT_CNPG as CnpgVersion,
    project: 'e2e-compat',
    files: [],
    scope:
      'the real node: CloudNativePG upgrade 1.28.2 → 1.30.1 under pgfsm, DatabaseRole evidence, backups and a point-in-time restore by hand (root)',
  },
];

/** The environment a row's child processes run with: its versions chosen, nothing else changed. */
export function rowEnvironment(row: CompatRow, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, PGFSM_KUBERNETES_VERSION: row.kubernetes, PGFSM_CNPG_VERSION: row.cnpg };
}

/** The vitest arguments of a row. */
export function rowVitestArgs(row: CompatRow): string[] {
  const project = row.project ?? 'integration';
  const dir = project === 'integration' ? 'test/integration' : 'test/e2e/compat';
  return ['run', '--project', project, ...row.files.map((file) => `${dir}/${file}`)];
}

/** The command that reproduces a row by hand, as docs/compatibility.md prints it. */
export function rowCommand(row: CompatRow): string {
  return `npm run test:compat -- --row ${row.id}`;
}

/** `12m 05s`. */
export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m ${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}

/** vitest's closing `Tests  12 passed (12)` / `Tests  1 failed | 11 passed (12)`, without colours. */
export function testSummary(output: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest colours its summary with ANSI escapes
  const plain = output.replace(/\u001b\[[0-9;]*m/g, '');
  const lines = plain.split('\n').filter((line) => /^\s*Tests\s+\d/.test(line));
  return lines.at(-1)?.trim().replace(/\s+/g, ' ');
}
