import { describe, expect, it } from 'vitest';
import { parseBinaryVersion, progressBar } from '../../src/tools/control-plane/build.ts';

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
