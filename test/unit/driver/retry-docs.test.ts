/**
 * docs/operations.md "Retries" is written by hand: it must state the delays the queue and the in-pass read
 * retry actually use, so a change of a policy fails here until the documentation says it too.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RETRY_AFTER_MAX_MS, RETRY_POLICIES, type RetryPolicy } from '../../../src/operator/driver/workqueue.ts';
import { READ_RETRY } from '../../../src/operator/kubernetes/errors.ts';

const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
const retries = doc.slice(doc.indexOf('## Retries'), doc.indexOf('\n## ', doc.indexOf('## Retries') + 1));

/** 5 → `5 ms`, 1000 → `1 s`, 60000 → `60 s`, 300000 → `5 min`, as the doc writes them. */
const duration = (ms: number) =>
  ms < 1_000 ? `${ms} ms` : ms <= 60_000 || ms % 60_000 !== 0 ? `${ms / 1_000} s` : `${ms / 60_000} min`;

/** The table row of a class, as the doc writes it. */
const row = (retryClass: string) => retries.split('\n').find((line) => line.includes(`| ${retryClass} |`)) ?? '';

const expectPolicy = (retryClass: string, { baseMs, maxMs, jitter }: RetryPolicy) => {
  const line = row(retryClass);
  expect(line).toContain(`${duration(baseMs)}, doubling`);
  expect(line).toContain(`at most ${duration(maxMs)}`);
  if (jitter > 0) expect(line).toContain(`±${jitter * 100} %`);
};

describe('docs/operations.md Retries', () => {
  it('states the backoff of every class as RETRY_POLICIES sets it', () => {
    expect(retries).toContain('## Retries');
    expectPolicy('conflict', RETRY_POLICIES.conflict);
    expectPolicy('transient', RETRY_POLICIES.transient);
    expectPolicy('persistent', RETRY_POLICIES.persistent);
    // Without a Retry-After a 429 backs off as a transient error does.
    expect(RETRY_POLICIES.throttled).toEqual(RETRY_POLICIES.transient);
    expect(row('throttled')).toContain(`at most ${duration(RETRY_AFTER_MAX_MS)}`);
    const { maxMs, jitter } = RETRY_POLICIES.transient;
    expect(row('transient')).toContain(`within ${duration(maxMs * (1 + jitter))}`);
  });

  it('states the in-pass read retry as READ_RETRY sets it', () => {
    expect(READ_RETRY.attempts).toBe(3);
    expect(retries).toContain('sent again up to twice');
    expect(retries).toContain(`about ${READ_RETRY.baseMs} ms and ${READ_RETRY.baseMs * 2} ms later`);
  });
});
