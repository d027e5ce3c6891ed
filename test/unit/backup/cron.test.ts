/** api/cron.ts: the 5-field schedule people write, judged alike by the CRD's CEL rule and the merge check. */
import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { cnpgSchedule, cronProblem } from '../../../src/operator/api/cron.ts';
import { postgresClusterCrd } from '../../../src/tools/generate/crd-manifests.ts';

const scheduleRule = () => {
  const spec = postgresClusterCrd().spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;
  const rule = spec?.properties?.backup?.properties?.schedule?.['x-kubernetes-validations']?.[0]?.rule;
  if (!rule) throw new Error('no schedule rule in the CRD');
  return rule;
};
const celAccepts = (schedule: string) => evaluate(scheduleRule(), { self: schedule }) === true;

const ACCEPTED = [
  '30 2 * * *',
  '0 0 * * 0',
  '*/15 * * * *',
  '0 1-5/2 * * MON-FRI',
  '0 3 1,15 * ?',
  '5 4 * jan,Jul sun',
  '  0   4 * * *  ',
  '59 23 31 12 6',
];
const REFUSED = [
  ['0 30 2 * * *', 'six fields: CNPG’s own form, read shifted by pgfsm'],
  ['30 2 * *', 'four fields'],
  ['60 2 * * *', 'minute 60'],
  ['0 24 * * *', 'hour 24'],
  ['0 0 0 * *', 'day of month 0'],
  ['0 0 * 13 *', 'month 13'],
  ['0 0 * * 7', 'day of week 7 (robfig reads 0 to 6)'],
  ['*/0 * * * *', 'a step of 0'],
  ['@daily', 'a descriptor'],
  ['0 0 * * MONDAY', 'a long name'],
  ['0 ? * * *', '? in the hour field'],
] as const;

describe('the backup schedule (api/cron.ts)', () => {
  it.each(ACCEPTED)('accepts %j in the CRD rule and the merge check alike', (schedule) => {
    expect(cronProblem(schedule)).toBeUndefined();
    expect(celAccepts(schedule)).toBe(true);
  });

  it.each(REFUSED)('refuses %j (%s) in the CRD rule and the merge check alike', (schedule) => {
    expect(cronProblem(schedule)).toContain('5-field cron');
    expect(celAccepts(schedule)).toBe(false);
  });

  it('refuses a range that starts after it ends, which only the merge check can judge', () => {
    expect(cronProblem('0 5-1 * * *')).toBe('"0 5-1 * * *": the hour range 5-1 starts after it ends');
    expect(cronProblem('0 0 * DEC-JAN *')).toContain('the month range DEC-JAN starts after it ends');
    expect(cronProblem('0 0 * * sat-sun')).toContain('the day of week range sat-sun starts after it ends');
    expect(cronProblem('0 0 * jan-dec mon-sun/2')).toContain('day of week range mon-sun');
    expect(cronProblem('0 0 * jan-dec sun-sat')).toBeUndefined();
  });

  it('refuses a schedule longer than the CRD allows', () => {
    expect(cronProblem(`0 0 * * ${'1,'.repeat(60)}1`)).toBe('at most 100 characters');
  });

  it("converts to CloudNativePG's six fields by prefixing second 0, spaces normalised", () => {
    expect(cnpgSchedule('30 2 * * *')).toBe('0 30 2 * * *');
    expect(cnpgSchedule('  */15   *  * * MON-FRI ')).toBe('0 */15 * * * MON-FRI');
  });
});
