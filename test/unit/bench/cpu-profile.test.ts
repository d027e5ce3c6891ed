import { describe, expect, it } from 'vitest';
import { type CpuProfile, fractionOf, splitProfile } from '../../../bench/cpu-profile.ts';

const OPERATOR = 'file:///work/main/node_modules/.cache/pgfsm/bench-operator';

/** A profile whose samples land, 1 ms apart from t = 1000 µs on, in the frames named (children of the root). */
function profileOf(frames: Array<[functionName: string, url: string]>, samples: number[]): CpuProfile {
  return {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '' }, children: frames.map((_, i) => i + 2) },
      ...frames.map(([functionName, url], i) => ({ id: i + 2, callFrame: { functionName, url } })),
    ],
    startTime: 0,
    samples: samples.map((frame) => frame + 2),
    timeDeltas: samples.map(() => 1000),
  };
}

describe('where a profiled process spent its main thread', () => {
  const frames: Array<[string, string]> = [
    ['(idle)', ''],
    ['writev', ''],
    ['socketOnData', 'node:_http_client'],
    ['(garbage collector)', ''],
    ['safeParse', `${OPERATOR}/src/operator/kubernetes/informer.js`],
    ['reconcile', `${OPERATOR}/src/operator/core/reconcile.js`],
    ['tick', `${OPERATOR}/machines/tick.js`],
    ['transition', 'file:///work/main/node_modules/xstate/dist/raise.js'],
  ];

  it('charges each sample to what its code is, and leaves idle out', () => {
    const split = splitProfile(profileOf(frames, [0, 0, 1, 2, 2, 3, 4, 5, 6, 7]));
    expect(split.busyMs).toBe(8);
    const ms = Object.fromEntries(split.groups.map((g) => [g.name, g.ms]));
    expect(ms).toEqual({
      'node: HTTP, TLS and sockets': 3,
      'V8: garbage collection': 1,
      'pgfsm: kubernetes': 1,
      'pgfsm: core': 1,
      'pgfsm: machines (the statechart and its tick)': 1,
      'library: xstate': 1,
    });
    expect(fractionOf(split, 'transport')).toBeCloseTo(3 / 8);
    expect(fractionOf(split, 'pgfsm')).toBeCloseTo(3 / 8);
    expect(fractionOf(split, 'library')).toBeCloseTo(1 / 8);
  });

  it('counts only the samples inside the window', () => {
    // Samples at 1, 2, 3, 4 ms: the window [2 ms, 3 ms] keeps the second and the third.
    const split = splitProfile(profileOf(frames, [1, 4, 5, 1]), 2000, 3000);
    expect(split.groups.map((g) => g.name).sort()).toEqual(['pgfsm: core', 'pgfsm: kubernetes']);
    expect(split.busyMs).toBe(2);
  });

  it('puts whatever runs under the module loader in start-up', () => {
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '' }, children: [2] },
        { id: 2, callFrame: { functionName: 'import', url: 'node:internal/modules/esm/loader' }, children: [3] },
        { id: 3, callFrame: { functionName: 'top', url: `${OPERATOR}/src/operator/cli/main.js` } },
      ],
      startTime: 0,
      samples: [3, 3],
      timeDeltas: [1000, 1000],
    };
    expect(fractionOf(splitProfile(profile), 'start-up')).toBe(1);
  });
});
