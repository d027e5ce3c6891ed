import { cpus } from 'node:os';
import { describe, expect, it } from 'vitest';
import { OPERATOR, type RunFigures, table } from '../../../bench/api-report.ts';

describe('the table: how soon the rest of the machine lets a fleet be Ready', () => {
  it("divides every other process's CPU by the cores, leaving pgfsm's out", () => {
    const run = {
      size: 1000,
      reactions: [],
      cpuByProcessMs: { [OPERATOR]: 17_000, 'kube-apiserver': 110_000, etcd: 18_000 },
    } as unknown as RunFigures;
    const row = table([run], [1000])
      .split('\n')
      .find((l) => l.startsWith('| … soonest if pgfsm cost nothing |'));
    expect(row).toContain(`| ${(128 / cpus().length).toFixed(1)} s |`);
  });
});
