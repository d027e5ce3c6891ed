/** The explanation, of either resource, as text for people and as one JSON document for scripts. */
import { poolerFacts } from './facts.ts';
import { CLUSTER_MACHINE, DATABASE_MACHINE } from './machines.ts';
import { formatSeconds } from './time.ts';
import type {
  DatabaseExplanation,
  DatabaseObservedFacts,
  DatabaseRoleFact,
  Explanation,
  ExplanationBody,
  GuardCheck,
  ObservedFacts,
} from './types.ts';

/** Everything but the resource's own world, which each resource prints itself. */
type Body = ExplanationBody<unknown, string>;

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

function stateLines(x: Body): string[] {
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

function tickLines(x: Body): string[] {
  const t = x.tick;
  const where = t.moves ? `moves to ${display(t.next)}` : `stays in ${display(t.next)}`;
  return [
    ...field('Next tick', `${where}  (via ${t.via})`),
    ...field('Writes', t.writes.length ? t.writes.join(', ') : 'none'),
  ];
}

function blockerLines(x: Body): string[] {
  const b = x.blocker;
  if (!b) return field('Blocked by', 'nothing: every component is healthy');
  const condition = b.condition && b.reason ? [`${b.condition} ${b.reason}: ${b.message ?? ''}`] : [];
  const then = x.whenClear
    ? [...field('Then', `${display(x.whenClear.state)}${x.whenClear.when ? `, when ${x.whenClear.when}` : ''}`)]
    : [];
  return [...field('Blocked by', `${b.guard} ${b.holds ? 'holds' : 'is false'}`, b.summary, ...condition), ...then];
}

function deadlineLines(x: Body): string[] {
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

const DATABASE_ROLE_STATE: Record<DatabaseRoleFact['state'], string> = {
  reconciled: 'reconciled',
  pending: 'not reconciled by CNPG yet',
  notPushed: 'not pushed by the PostgresCluster yet',
  absent: 'pushed as absent (dropped)',
  failed: 'failed',
  claimed: 'held by someone else',
};

function databaseObservedLines(f: DatabaseObservedFacts): string[] {
  const c = f.cluster;
  const cluster = !c.exists
    ? `${c.name ?? '(none)'}: missing`
    : c.deleting
      ? `${c.name}: being deleted`
      : c.published
        ? `${c.name}: ${c.rw}:${c.port} (${c.pooled ? 'through the pooler' : 'direct'}), read-only ${c.ro}`
        : `${c.name}: phase '${c.phase ?? 'none'}', endpoints not published`;
  const secrets = f.secrets.map((s) => {
    if (!s.exists) return `${s.name} (${s.role}): missing`;
    const owner =
      s.ownership === 'ours' ? '' : `, controlled by ${s.controller ?? 'nobody'}${s.handedOver ? ', handed over' : ''}`;
    const drift = s.driftedKeys.length ? `, ${s.driftedKeys.join(', ')} differ` : '';
    return `${s.name} (${s.role}): keys ${s.keys.join(', ') || 'none'}${owner}${drift}`;
  });
  const roles = f.roles.map((r) => {
    const state = r.state === 'claimed' ? `held by ${r.heldBy}` : DATABASE_ROLE_STATE[r.state];
    return `${r.name} (${r.access}): ${state}${r.error ? `: ${r.error}` : ''}`;
  });
  const d = f.cnpgDatabase;
  const applied =
    d.applied === true ? 'applied' : d.applied === false ? `not applied: ${d.message ?? ''}` : 'not applied yet';
  const database = !d.exists
    ? `${d.name}: missing`
    : `${d.name}: ${applied}${d.ownership === 'ours' ? '' : `, controlled by ${d.controller ?? 'nobody'}`}${d.driftedFields.length ? `, ${d.driftedFields.join(', ')} differ` : ''}`;
  const p = f.privileges;
  const users = p.users.join(', ') || 'no users besides the owner';
  const privileges =
    p.digest === null
      ? 'not assessed: the spec cannot be acted on'
      : p.granted
        ? `granted (${p.digest}): ${users}`
        : `not granted yet: ${users}`;
  return table([
    ['cluster', cluster],
    ['secrets', secrets.length ? secrets.join('  · ') : 'none'],
    ['roles', roles.length ? roles.join('  · ') : 'none'],
    ['database', database],
    ['privileges', privileges],
    ['policy', f.deletionPolicy],
    ['owned', f.stillOwned.length ? f.stillOwned.join(', ') : 'no child carries our owner reference'],
  ]);
}

export function renderText(x: Explanation | DatabaseExplanation): string {
  const [title, c, observed] =
    'database' in x
      ? [DATABASE_MACHINE.description.title, x.database, databaseObservedLines(x.observed)]
      : [CLUSTER_MACHINE.description.title, x.cluster, observedLines(x.observed)];
  const generation = `generation ${c.generation ?? '?'}, status observed ${c.observedGeneration ?? 'never'}`;
  const conditions = x.conditions.map((k) => [k.type, k.status, k.reason, ago(k.ageSeconds), k.message]);
  const events = x.events.map((e) => [ago(e.ageSeconds), e.type, e.reason, String(e.count), e.message]);
  const lines = [
    `${title} ${c.namespace}/${c.name}  (${generation}${c.deleting ? ', being deleted' : ''})`,
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
    ...observed,
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
export const renderJson = (x: Explanation | DatabaseExplanation) => `${JSON.stringify(x, null, 2)}\n`;
