/**
 * ensureDebianPackages against a fake machine: what it asks dpkg, what it runs (or tells a non-root user to
 * run), and that no service may start while it installs.
 */
import { describe, expect, it } from 'vitest';
import {
  type DebianHost,
  ensureDebianPackages,
  installCommand,
  missingDebianPackages,
} from '../../../src/tools/node/debian.ts';
import { CommandError, type RunOptions, type RunResult } from '../../../src/tools/node/images/process.ts';

interface Call {
  command: string;
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
}

function fakeHost(options: {
  root: boolean;
  installed: string[];
  policyExists?: boolean;
  /** apt-get install fails once with "Unable to locate package" (no lists yet). */
  noLists?: boolean;
}): DebianHost & { calls: Call[]; files: Map<string, string>; policyDuringInstall: boolean[] } {
  const installed = new Set(options.installed);
  const files = new Map<string, string>();
  if (options.policyExists) files.set('/usr/sbin/policy-rc.d', '#!/bin/sh\nexit 101\n');
  let lists = !options.noLists;
  const calls: Call[] = [];
  const policyDuringInstall: boolean[] = [];
  const ok = (stdout = ''): RunResult => ({ code: 0, stdout, stderr: '' });
  return {
    calls,
    files,
    policyDuringInstall,
    isRoot: () => options.root,
    exists: (path) => files.has(path),
    writeExecutable: (path, text) => files.set(path, text),
    remove: (path) => files.delete(path),
    run: async (command: string, args: readonly string[], runOptions?: RunOptions) => {
      calls.push({ command, args, ...(runOptions?.env ? { env: runOptions.env } : {}) });
      if (command === 'dpkg-query') {
        const names = args.slice(2);
        return ok(
          names
            .filter((n) => installed.has(n))
            .map((n) => `${n}\tinstall ok installed\n`)
            .join(''),
        );
      }
      if (command === 'pgrep') return { code: 1, stdout: '', stderr: '' };
      if (command === 'apt-get' && args[0] === 'update') {
        lists = true;
        return ok();
      }
      if (command === 'apt-get' && args[0] === 'install') {
        policyDuringInstall.push(files.has('/usr/sbin/policy-rc.d'));
        const names = args.filter((a) => !a.startsWith('-') && a !== 'install' && !a.startsWith('Dpkg::'));
        if (!lists) throw new CommandError('apt-get install', 100, [`E: Unable to locate package ${names[0]}`]);
        for (const name of names) {
          installed.add(name);
          runOptions?.onLine?.(`Setting up ${name} (1.0-1) ...`);
        }
        runOptions?.onLine?.('Setting up libsomething1:amd64 (2.0-1) ...');
        return ok();
      }
      throw new Error(`unexpected command ${command} ${args.join(' ')}`);
    },
  };
}

describe('ensureDebianPackages', () => {
  it('asks dpkg only, and does nothing more, when everything is installed', async () => {
    const host = fakeHost({ root: false, installed: ['containerd', 'runc'] });
    const lines: string[] = [];
    await ensureDebianPackages(['containerd', 'runc'], (l) => lines.push(l), host);
    expect(host.calls.map((c) => c.command)).toEqual(['dpkg-query']);
    expect(host.calls[0]?.args).toContain('-W');
    expect(lines).toEqual([]);
  });

  it('tells a non-root user the exact apt-get command for what is missing', async () => {
    const host = fakeHost({ root: false, installed: ['containerd'] });
    const failure = ensureDebianPackages(['containerd', 'runc', 'buildah'], () => {}, host);
    await expect(failure).rejects.toThrow('sudo apt-get install -y --no-install-recommends runc buildah');
    expect(host.calls.map((c) => c.command)).toEqual(['dpkg-query']);
    expect(installCommand(['a', 'b'])).toBe('sudo apt-get install -y --no-install-recommends a b');
  });

  it('installs what is missing as root, noninteractively, with service starts forbidden, one line per package', async () => {
    const host = fakeHost({ root: true, installed: ['runc'] });
    const lines: string[] = [];
    await ensureDebianPackages(['runc', 'containerd', 'catatonit'], (l) => lines.push(l), host);
    const install = host.calls.find((c) => c.command === 'apt-get');
    expect(install?.args.slice(0, 3)).toEqual(['install', '-y', '--no-install-recommends']);
    expect(install?.args.slice(-2)).toEqual(['containerd', 'catatonit']);
    expect(install?.env?.DEBIAN_FRONTEND).toBe('noninteractive');
    expect(host.calls.some((c) => c.command === 'apt-get' && c.args[0] === 'update')).toBe(false);
    expect(host.policyDuringInstall).toEqual([true]);
    expect(host.files.has('/usr/sbin/policy-rc.d')).toBe(false);
    expect(lines).toEqual([
      'installing Debian packages: containerd catatonit',
      '  containerd 1.0-1',
      '  catatonit 1.0-1',
      '  (+1 dependencies)',
    ]);
  });

  it("leaves the machine's own policy-rc.d in place", async () => {
    const host = fakeHost({ root: true, installed: [], policyExists: true });
    await ensureDebianPackages(['containerd'], () => {}, host);
    expect(host.files.get('/usr/sbin/policy-rc.d')).toBe('#!/bin/sh\nexit 101\n');
  });

  it('runs apt-get update only when apt has no lists for the packages', async () => {
    const host = fakeHost({ root: true, installed: [], noLists: true });
    await ensureDebianPackages(['mmdebstrap'], () => {}, host);
    const apt = host.calls.filter((c) => c.command === 'apt-get').map((c) => c.args[0]);
    expect(apt).toEqual(['install', 'update', 'install']);
    expect(await missingDebianPackages(['mmdebstrap'], host)).toEqual([]);
  });
});
