/**
 * Debian packages the real node and its image builders need (containerd, runc, the CNI plugins, iptables,
 * conntrack, catatonit, mmdebstrap, buildah): what is missing is installed with apt-get when we are root, and
 * named in an exact `sudo apt-get install …` command otherwise.
 *
 * Installing containerd on a systemd machine would start Debian's containerd.service in the machine's own
 * network namespace; the node runs its own containerd inside its namespace instead, so the install runs under a
 * policy-rc.d that forbids starting services (unless the machine already has one), and a containerd daemon that
 * appeared during the install anyway is reported.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import type { Log } from '../control-plane/log.ts';
import { CommandError, type RunOptions, type RunResult, run } from './images/process.ts';

const POLICY_RC_D = '/usr/sbin/policy-rc.d';

/** What ensureDebianPackages touches in the world; tests replace it. */
export interface DebianHost {
  isRoot(): boolean;
  run(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  exists(path: string): boolean;
  writeExecutable(path: string, text: string): void;
  remove(path: string): void;
}

export const realDebianHost: DebianHost = {
  isRoot: () => process.getuid?.() === 0,
  run,
  exists: existsSync,
  writeExecutable: (path, text) => writeFileSync(path, text, { mode: 0o755 }),
  remove: (path) => rmSync(path, { force: true }),
};

/** The command a non-root user is told to run. */
export const installCommand = (packages: readonly string[]): string =>
  `sudo apt-get install -y --no-install-recommends ${packages.join(' ')}`;

/** Which of `packages` dpkg does not list as "install ok installed". */
export async function missingDebianPackages(
  packages: readonly string[],
  host: Pick<DebianHost, 'run'> = realDebianHost,
): Promise<string[]> {
  if (packages.length === 0) return [];
  // Exit 1 when some package is unknown to dpkg: those simply do not appear in the output.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not JavaScript's
  const { stdout } = await host.run('dpkg-query', ['-W', '-f=${Package}\t${Status}\n', ...packages], {
    okCodes: [0, 1],
  });
  const installed = new Set(
    stdout
      .split('\n')
      .map((line) => line.split('\t'))
      .filter(([, status]) => status?.trim().endsWith(' installed') && !status.includes('not-installed'))
      .map(([name]) => (name ?? '').split(':')[0]),
  );
  return packages.filter((p) => !installed.has(p));
}

const lacksLists = (error: unknown) =>
  error instanceof CommandError &&
  error.tail.some((line) => /Unable to locate package|has no installation candidate|404\s+Not Found/.test(line));

async function containerdPids(host: DebianHost): Promise<Set<string>> {
  const { stdout } = await host.run('pgrep', ['-x', 'containerd'], { okCodes: [0, 1] });
  return new Set(stdout.split('\n').filter(Boolean));
}

/**
 * Makes sure every package in `packages` is installed. Already installed: no output, one dpkg-query. Missing and
 * root: apt-get install (apt-get update first only if apt has no lists for them), one line per package set up.
 * Missing and not root: an Error naming the exact command to run.
 */
export async function ensureDebianPackages(
  packages: string[],
  log: Log,
  host: DebianHost = realDebianHost,
): Promise<void> {
  const missing = await missingDebianPackages(packages, host);
  if (missing.length === 0) return;
  if (!host.isRoot()) {
    throw new Error(`Debian packages missing: ${missing.join(', ')}. Install them with:\n  ${installCommand(missing)}`);
  }
  log(`installing Debian packages: ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const wanted = new Set(missing);
  let dependencies = 0;
  const onLine = (line: string) => {
    const setUp = /^Setting up (\S+?)(?::\w+)? \(([^)]+)\)/.exec(line);
    if (!setUp) return;
    if (wanted.has(setUp[1] ?? '')) log(`  ${setUp[1]} ${setUp[2]}`);
    else dependencies++;
  };
  const install = () =>
    host.run(
      'apt-get',
      [
        'install',
        '-y',
        '--no-install-recommends',
        '-o',
        'Dpkg::Options::=--force-confdef',
        '-o',
        'Dpkg::Options::=--force-confold',
        ...missing,
      ],
      { env, onLine },
    );

  const ownPolicy = !host.exists(POLICY_RC_D);
  const before = await containerdPids(host);
  if (ownPolicy) {
    // invoke-rc.d and deb-systemd-invoke ask this script; 101 = "action forbidden by policy".
    host.writeExecutable(POLICY_RC_D, '#!/bin/sh\n# pgfsm: no service starts while it installs packages\nexit 101\n');
  }
  try {
    try {
      await install();
    } catch (error) {
      if (!lacksLists(error)) throw error;
      log('  apt has no lists for them: apt-get update');
      await host.run('apt-get', ['update'], { env });
      await install();
    }
  } finally {
    if (ownPolicy) host.remove(POLICY_RC_D);
  }
  if (dependencies > 0) log(`  (+${dependencies} dependencies)`);

  const still = await missingDebianPackages(missing, host);
  if (still.length > 0)
    throw new Error(`apt-get install finished but dpkg does not list ${still.join(', ')} as installed`);
  const started = [...(await containerdPids(host))].filter((pid) => !before.has(pid));
  if (started.length > 0) {
    log(
      `  warning: a containerd daemon (pid ${started.join(', ')}) started during the install, in the machine's own ` +
        'network namespace; the node runs its own. Stop it with `systemctl disable --now containerd`.',
    );
  }
}
