import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CNPG_FILES,
  COMPAT_ROWS,
  formatDuration,
  rowEnvironment,
  rowVitestArgs,
  testSummary,
} from '../../src/tools/compat/rows.ts';
import {
  chosenVersion,
  parseBinaryVersion,
  progressBar,
  SUPPORTED_CNPG,
  SUPPORTED_KUBERNETES,
} from '../../src/tools/control-plane/build.ts';
import { packageFile } from '../../src/tools/package-files.ts';

describe('control plane build progress', () => {
  it('draws a bar of the packages compiled so far', () => {
    expect(progressBar(0, 100, 10)).toBe('[..........]   0%');
    expect(progressBar(37, 100, 10)).toBe('[####......]  37%');
    expect(progressBar(250, 200, 10)).toBe('[##########] 100%');
    expect(progressBar(5, 0, 4)).toBe('[....]   0%');
  });
});

describe('control plane binary versions', () => {
  it('reads what each binary prints for its version', () => {
    // kube-apiserver, kube-controller-manager, kubelet, kube-scheduler, kube-proxy: `--version`.
    expect(parseBinaryVersion('Kubernetes v1.34.4\n')).toBe('v1.34.4');
    // kubectl: `version --client`.
    expect(parseBinaryVersion('Client Version: v1.34.4\nKustomize Version: v5.7.1\n')).toBe('v1.34.4');
    expect(
      parseBinaryVersion(
        'etcd Version: 3.6.16\nGit SHA: Not provided (use ./build instead of go build)\nGo Version: go1.26.8\n',
      ),
    ).toBe('v3.6.16');
    // CoreDNS: `-version`.
    expect(parseBinaryVersion('CoreDNS-1.12.1\nlinux/amd64, go1.26.8, \n')).toBe('v1.12.1');
    expect(parseBinaryVersion('Kubernetes v1.35.0-alpha.1\n')).toBe('v1.35.0-alpha.1');
  });

  it('finds no version in other output', () => {
    expect(parseBinaryVersion('error: unknown flag: --version\n')).toBeUndefined();
    expect(parseBinaryVersion('Kustomize Version: v5.7.1\n')).toBeUndefined();
  });
});

describe('the versions the control plane runs', () => {
  it('defaults to the first supported version and takes another by environment variable', () => {
    const variable = 'PGFSM_CNPG_VERSION';
    expect(chosenVersion(variable, SUPPORTED_CNPG, {})).toBe('v1.30.1');
    expect(chosenVersion(variable, SUPPORTED_CNPG, { [variable]: '' })).toBe('v1.30.1');
    expect(chosenVersion(variable, SUPPORTED_CNPG, { [variable]: 'v1.28.2' })).toBe('v1.28.2');
    expect(chosenVersion(variable, SUPPORTED_CNPG, { [variable]: '1.29.2' })).toBe('v1.29.2');
    expect(chosenVersion('PGFSM_KUBERNETES_VERSION', SUPPORTED_KUBERNETES, {})).toBe('v1.36.3');
  });

  it('refuses a version pgfsm is not tested on, naming the ones it is', () => {
    expect(() => chosenVersion('PGFSM_CNPG_VERSION', SUPPORTED_CNPG, { PGFSM_CNPG_VERSION: 'v1.28.0' })).toThrow(
      'PGFSM_CNPG_VERSION=v1.28.0 is not one pgfsm is tested on; choose one of v1.30.1, v1.29.2, v1.28.2',
    );
  });

  it('has a wrapper module for every supported version, requiring exactly that version', () => {
    for (const [version, dir] of Object.entries(SUPPORTED_CNPG)) {
      const goMod = readFileSync(packageFile('src/tools/control-plane/modules', dir, 'go.mod'), 'utf8');
      expect(goMod).toMatch(new RegExp(`^require github\\.com/cloudnative-pg/cloudnative-pg ${version}$`, 'm'));
    }
    for (const [version, dir] of Object.entries(SUPPORTED_KUBERNETES)) {
      const goMod = readFileSync(packageFile('src/tools/control-plane/modules', dir, 'go.mod'), 'utf8');
      expect(goMod).toMatch(new RegExp(`^\\s*k8s\\.io/kubernetes ${version.replace(/\./g, '\\.')}( |$)`, 'm'));
      expect(goMod).toContain(`k8s.io/api => k8s.io/api v0.${version.slice('v1.'.length)}`);
    }
  });
});

describe('npm run test:compat', () => {
  it('runs each supported version that npm test does not, on the default of the other', () => {
    const [defaultKubernetes] = Object.keys(SUPPORTED_KUBERNETES);
    const [defaultCnpg] = Object.keys(SUPPORTED_CNPG);
    const covered = new Set(COMPAT_ROWS.map((row) => `${row.kubernetes}/${row.cnpg}`));
    for (const cnpg of Object.keys(SUPPORTED_CNPG).slice(1)) expect(covered).toContain(`${defaultKubernetes}/${cnpg}`);
    for (const kubernetes of Object.keys(SUPPORTED_KUBERNETES).slice(1)) {
      expect(covered).toContain(`${kubernetes}/${defaultCnpg}`);
    }
    expect(new Set(COMPAT_ROWS.map((row) => row.id)).size).toBe(COMPAT_ROWS.length);
  });

  it('names integration files that exist', () => {
    const files = new Set(readdirSync(packageFile('test/integration')));
    for (const file of CNPG_FILES) expect(files, file).toContain(file);
  });

  it('picks the versions through the environment and runs vitest on the integration project', () => {
    const row = COMPAT_ROWS.find((r) => r.id === 'cnpg-1.28');
    expect(row).toBeDefined();
    if (!row) return;
    expect(rowEnvironment(row, { PATH: '/bin', PGFSM_CNPG_VERSION: 'v1.30.1' })).toEqual({
      PATH: '/bin',
      PGFSM_KUBERNETES_VERSION: 'v1.36.3',
      PGFSM_CNPG_VERSION: 'v1.28.2',
    });
    expect(rowVitestArgs(row)).toEqual([
      'run',
      '--project',
      'integration',
      ...CNPG_FILES.map((file) => `test/integration/${file}`),
    ]);
    expect(rowVitestArgs({ ...row, files: [] })).toEqual(['run', '--project', 'integration']);
    expect(rowVitestArgs({ ...row, project: 'e2e-compat', files: [] })).toEqual(['run', '--project', 'e2e-compat']);
  });

  it('reads vitest summary and prints durations', () => {
    expect(
      testSummary(
        '\n \u001b[2m Test Files \u001b[22m 7 passed (7)\n \u001b[2m     Tests \u001b[22m 1 failed | 211 passed (212)\n',
      ),
    ).toBe('Tests 1 failed | 211 passed (212)');
    expect(testSummary('Error: no tests\n')).toBeUndefined();
    expect(formatDuration(42_400)).toBe('42s');
    expect(formatDuration(725_000)).toBe('12m 05s');
  });
});
