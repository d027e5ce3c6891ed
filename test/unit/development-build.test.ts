/**
 * The tests must run XState's development build: only it rejects v4-style `cond` (the production
 * build silently takes such a transition always). This proves the vitest config resolves it.
 */
import { describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';

describe('XState build under test', () => {
  it('is the development build, which rejects a v4 `cond`', () => {
    const legacy = { initial: 'a', states: { a: { on: { GO: { cond: () => false, target: 'b' } } }, b: {} } };
    expect(() => createMachine(legacy as never)).toThrow(/renamed to `guard`/);
  });
});
