import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/operator/driver/duration.ts';

describe('parseDuration', () => {
  it('reads Go-style durations', () => {
    expect(parseDuration('15s')).toBe(15_000);
    expect(parseDuration('15m')).toBe(900_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration(' 2m ')).toBe(120_000);
  });

  it('rejects numbers without units and anything else', () => {
    for (const bad of ['15', '', 's', '15 s', '-5s', '1d', 'fast']) {
      expect(() => parseDuration(bad), bad).toThrow(/invalid duration/);
    }
  });
});
