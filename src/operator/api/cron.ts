/**
 * The backup schedule as people write it: a 5-field cron (minute hour day-of-month month day-of-week), the form
 * crontab, Kubernetes CronJobs and most operators use. CloudNativePG's ScheduledBackup wants 6 fields with the
 * seconds first (robfig/cron v1's parser), and only warns when it gets 5, which it then reads shifted by one field
 * ("30 2 * * *" would fire at second 30 of every minute of 02:xx). pgfsm takes the 5 fields and prefixes `0`.
 *
 * The pattern is shared by the CRD's CEL rule (RE2) and the merge check (JavaScript): it accepts the subset of
 * robfig's syntax both read alike (numbers, month and weekday names, `*`, `?` in the day fields, ranges, steps,
 * lists) and keeps each number within its field's bounds. What a pattern cannot judge, a range whose start is
 * after its end, the merge check does (`cronProblem`).
 */

/** Any capitalisation of a name, as robfig reads names (it lowers them first). */
const anyCase = (name: string) => [...name].map((c) => `[${c.toUpperCase()}${c.toLowerCase()}]`).join('');

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'] as const;
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

interface Field {
  name: string;
  min: number;
  max: number;
  /** A value of the field: a number within the bounds, or a name. */
  value: string;
  names?: readonly string[];
  /** `?` stands for `*` (robfig accepts it in the day fields). */
  question?: boolean;
}

export const CRON_FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59, value: '[0-5]?[0-9]' },
  { name: 'hour', min: 0, max: 23, value: '[01]?[0-9]|2[0-3]' },
  { name: 'day of month', min: 1, max: 31, value: '0?[1-9]|[12][0-9]|3[01]', question: true },
  { name: 'month', min: 1, max: 12, value: '0?[1-9]|1[0-2]', names: MONTH_NAMES },
  { name: 'day of week', min: 0, max: 6, value: '[0-6]', names: DAY_NAMES, question: true },
];

const STEP = '/[1-9][0-9]?';

function fieldPattern(field: Field): string {
  const value = `(${[field.value, ...(field.names ?? []).map(anyCase)].join('|')})`;
  const element = `((\\*|${value}(-${value})?)(${STEP})?${field.question ? '|\\?' : ''})`;
  return `${element}(,${element})*`;
}

/** A 5-field cron pgfsm accepts, fields separated by spaces. */
export const CRON_PATTERN = `^ *${CRON_FIELDS.map(fieldPattern).join(' +')} *$`;
const CRON = new RegExp(CRON_PATTERN);

export const CRON_HINT =
  'a 5-field cron: minute hour day-of-month month day-of-week, e.g. "30 2 * * *" for 02:30 every day ' +
  '(pgfsm adds the seconds field CloudNativePG wants)';

/** The longest schedule accepted: bounds the CEL rule's cost. */
export const MAX_CRON_LENGTH = 100;

/** The number a value of a field stands for (a name's position). */
function numberOf(field: Field, text: string): number {
  const named = field.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (field.min === 1 ? 1 : 0);
  return Number(text);
}

/** Why a schedule is not one pgfsm accepts, or undefined when it is. */
export function cronProblem(schedule: string): string | undefined {
  if (schedule.length > MAX_CRON_LENGTH) return `at most ${MAX_CRON_LENGTH} characters`;
  if (!CRON.test(schedule)) return `"${schedule}" is not ${CRON_HINT}`;
  const fields = schedule.trim().split(/ +/);
  for (const [i, text] of fields.entries()) {
    const field = CRON_FIELDS[i];
    if (!field) continue;
    for (const element of text.split(',')) {
      const range = element.split('/')[0] ?? '';
      const [start, end] = range.split('-');
      if (start === undefined || end === undefined) continue;
      if (numberOf(field, start) > numberOf(field, end)) {
        return `"${schedule}": the ${field.name} range ${range} starts after it ends`;
      }
    }
  }
  return undefined;
}

/** CloudNativePG's 6-field form of a 5-field schedule pgfsm accepts: at second 0. */
export const cnpgSchedule = (schedule: string): string => `0 ${schedule.trim().split(/ +/).join(' ')}`;
