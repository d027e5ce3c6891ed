/** The explanation as text for people and as one JSON document for scripts. */
import { poolerFacts } from './facts.ts';
import { formatSeconds } from './time.ts';
import type { Explanation, GuardCheck, ObservedFacts } from './types.ts';

/** `Provisioning.Cluster` -> `Provisioning › Cluster`. */
export const display = (path: string) => path.split('.').join(' › ');

const ago = (seconds: number | null) => (seconds === null ? '' : formatSeconds(seconds));

/** Label column, then value; continuation lines indent under the value. */
const LABEL = 12;
const field = (label: string, ...lines: string[]) =>
  lines.map((line, i) => `${(i === 0 ? label : '').padEnd(LABEL)}${line}`);

/** Columns padded to their widest cell; the last one runs free (messages are long). */
export function table(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map(
    (r) =>
      indent +
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
  );
}

function stateLines(x: Explanation): string[] {
  const s = x.state;
  const step = s.step ? `  step ${s.step.index} of ${s.step.of} of ${s.step.sequence}` : '';
  const stored = s.stored === null ? ' (no status yet: the machine starts here)' : '';
  const unknown = s.stored !== null && s.stored !== s.state ? ` (stored: ${s.stored})` : '';
  const since = s.since ? `${s.since} (${ago(s.ageSeconds)} ago)` : 'unknown';
  return [
    ...field('State', `${display(s.state)}${step}  · phase ${s.phase}${stored}${unknown}`, s.description),
    ...field('Since', since),
  ];
}

function tickLines(x: Explanation): string[] {
  const t = x.tick;
  const where = t.moves ? `moves to ${display(t.next)}` : `stays in ${display(t.next)}`;
  return [
    ...field('Next tick', `${where}  (via ${t.via})`),
    ...field('Writes', t.writes.length ? t.writes.join(', ') : 'none'),
  ];
}

function blockerLines(x: Explanation): string[] {
  const b = x.blocker;
  if (!b) return field('Blocked by', 'nothing: every component is healthy');
  const condition = b.condition && b.reason ? [`${b.condition} ${b.reason}: ${b.message ?? ''}`] : [];
  const then = x.whenClear
    ? [...field('Then', `${display(x.whenClear.state)}${x.whenClear.when ? `, when ${x.whenClear.when}` : ''}`)]
    : [];
  return [...field('Blocked by', `${b.guard} ${b.holds ? 'holds' : 'is false'}`, b.summary, ...condition), ...then];
}

function deadlineLines(x: Explanation): string[] {
  const d = x.deadline;
  const total = formatSeconds(d.progressDeadlineSeconds);
  const stalled = `Stalled: ${x.stalled.computed ? 'yes' : 'no'}${x.stalled.reason ? ` (condition Stalled=${x.stalled.condition}, reason ${x.stalled.reason})` : ''}`;
  if (!d.applies) return field('Deadline', `none in this state  · ${stalled}`);
  if (d.leftSeconds === null) return field('Deadline', `${total}, from when the state was entered  · ${stalled}`);
  const left = d.exceeded ? `exceeded ${ago(-d.leftSeconds)} ago` : `${ago(d.leftSeconds)} left`;
  return field('Deadline', `${total}: ${left} (${d.at})  · ${stalled}`);
}

const guardRows = (guards: GuardCheck[]) =>
  table(
    guards.map((g) => [g.on, g.guard ?? '(no guard)', g.holds ? 'yes' : 'no', g.target ? `→ ${g.target}` : 'stays']),
  );

const ROLE_STATE: Record<ObservedFacts['roles'][number]['state'], string> = {
  reconciled: 'reconciled',
  pending: 'not reconciled by CNPG yet',
  failed: 'failed',
  waitingForSecret: 'waiting for its Secret',
  absent: 'to be absent',
};

function observedLines(f: ObservedFacts): string[] {
  const cnpg = f.cnpg.exists
    ? `${f.cnpg.name}: phase '${f.cnpg.phase ?? 'none'}', readyInstances ${f.cnpg.readyInstances}/${f.cnpg.instances ?? '?'}${f.cnpg.currentPrimary ? `, primary ${f.cnpg.currentPrimary}` : ''}`
    : `${f.cnpg.name}: missing`;
  const roles = f.roles.map(
    (r) =>
      `${r.name}: ${ROLE_STATE[r.state]}${r.secret ? ` (Secret ${r.secret}${r.secretExists ? '' : ', missing'})` : ''}`,
  );
  const poolers =
    f.poolers.enabled === false
      ? 'disabled'
      : poolerFacts(f)
          .map((p) => `${p.type} ${p.name} ${p.exists ? `ready ${p.readyReplicas}/${p.instances ?? '?'}` : 'missing'}`)
          .join('  · ');
  const drift = f.configMap.driftedKeys.length ? `drifted keys ${f.configMap.driftedKeys.join(', ')}` : 'up to date';
  const rows = [
    ['class', `${f.class.name ?? '(none)'} ${f.class.found ? '(found)' : '(not found)'}`],
    ['secret', `${f.secret.name}: ${f.secret.exists ? `keys ${f.secret.keys.join(', ') || 'none'}` : 'missing'}`],
    ['cnpg', cnpg],
    ['roles', roles.length ? roles.join('  · ') : 'none'],
    ['poolers', poolers],
    ['configMap', `${f.configMap.name}: ${f.configMap.exists ? drift : 'missing'}`],
    ['owned', f.stillOwned.length ? f.stillOwned.join(', ') : 'no child carries our owner reference'],
  ];
  return table(rows);
}

export function renderText(x: Explanation): string {
  const c = x.cluster;
  const generation = `generation ${c.generation ?? '?'}, status observed ${c.observedGeneration ?? 'never'}`;
  const conditions = x.conditions.map((k) => [k.type, k.status, k.reason, ago(k.ageSeconds), k.message]);
  const events = x.events.map((e) => [ago(e.ageSeconds), e.type, e.reason, String(e.count), e.message]);
  const lines = [
    `PostgresCluster ${c.namespace}/${c.name}  (${generation}${c.deleting ? ', being deleted' : ''})`,
    ...stateLines(x),
    ...tickLines(x),
    ...blockerLines(x),
    ...deadlineLines(x),
    ...x.hints.flatMap((h) => field('Hint', h)),
    '',
    `Guards at ${display(x.tick.next)}, in the order a tick checks them`,
    ...guardRows(x.tick.guards),
    '',
    'Observed',
    ...observedLines(x.observed),
    '',
    'Conditions',
    ...(conditions.length ? table([['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'], ...conditions]) : ['  none yet']),
    '',
    `Events (newest first)`,
    ...(x.eventsError ? [`  cannot list events: ${x.eventsError}`] : []),
    ...(events.length
      ? table([['AGE', 'TYPE', 'REASON', 'COUNT', 'MESSAGE'], ...events])
      : x.eventsError
        ? []
        : ['  none']),
  ];
  return `${lines.join('\n')}\n`;
}

/** One JSON document; its keys keep the order and presence of the Explanation type. */
export const renderJson = (x: Explanation) => `${JSON.stringify(x, null, 2)}\n`;
