import { describe, expect, it } from 'vitest';
import { progressBar } from '../../src/tools/control-plane/build.ts';

describe('control plane build progress', () => {
  it('draws a bar of the packages compiled so far', () => {
    expect(progressBar(0, 100, 10)).toBe('[..........]   0%');
    expect(progressBar(37, 100, 10)).toBe('[####......]  37%');
    expect(progressBar(250, 200, 10)).toBe('[##########] 100%');
    expect(progressBar(5, 0, 4)).toBe('[....]   0%');
  });
});
