/** The JSON log: stable keys, and no secret value ever printed. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { clusterFields, createLogger, describeError, transitionOf } from '../../../src/operator/driver/logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug', destination }) };
}

describe('logger', () => {
  it('writes JSON with the stable cluster keys and a named level', () => {
    const { lines, log } = capture();
    log.info(
      {
        ...clusterFields({ namespace: 'team-a', name: 'inventory' }),
        state: 'Ready',
        transition: transitionOf('A', 'Ready'),
      },
      'transition',
    );
    expect(lines[0]).toMatchObject({
      level: 'info',
      msg: 'transition',
      namespace: 'team-a',
      name: 'inventory',
      state: 'Ready',
      transition: 'A→Ready',
    });
    expect(typeof lines[0]?.time).toBe('string');
    expect(transitionOf(undefined, 'Pending')).toBe('∅→Pending');
  });

  it('censors data, stringData and password at any of the first levels', () => {
    const { lines, log } = capture();
    log.warn(
      {
        password: 'p0',
        data: { password: 'cDE=' },
        secret: { stringData: { password: 'p2' }, metadata: { name: 'app-password' } },
        deep: { object: { data: { key: 'c2VjcmV0' }, password: 'p3' } },
        deeper: { a: { b: { password: 'p4' } } },
      },
      'oops',
    );
    const text = JSON.stringify(lines[0]);
    for (const secret of ['p0', 'cDE=', 'p2', 'c2VjcmV0', 'p3', 'p4']) expect(text).not.toContain(secret);
    expect(text).toContain('app-password');
    expect(lines[0]).toMatchObject({ password: '[REDACTED]', data: '[REDACTED]' });
  });

  it('bounds error messages', () => {
    expect(describeError(new Error('short'))).toBe('short');
    expect(describeError('x'.repeat(2000))).toHaveLength(1025);
  });
});
