/**
 * `states.md`: for each machine, what each state that can be current declares (meta, actions) and does
 * (every transition, inherited ones included, in the order XState tries them), then what each guard means.
 */
import type { MachineDescription } from '../../../machines/chart.ts';
import { type ChartState, index, leaves, type Transition } from '../../../machines/walk.ts';
import { generatedNote, sourceOf } from './label.ts';

const code = (s: string) => `\`${s}\``;
/** Table cells are one line and must not contain a bare pipe. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, '<br>');
const row = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
const yes = (b: boolean) => (b ? 'yes' : 'no');

function conditions(s: ChartState, conditionOf: MachineDescription['conditionOf']): string {
  const m = s.meta;
  if (!m) return '';
  if (m.conditions === 'observe') return 'observe: each from its own check';
  if (!m.step) return 'pipeline: each from its own check';
  const condition = conditionOf[m.step];
  if (!condition) throw new Error(`state ${s.path} steps on ${m.step}, which publishes no condition`);
  return `pipeline: ${code(condition)} carries the reason`;
}

function transition(t: Transition, owner: ChartState, self: ChartState): string {
  const actions = t.actions.length ? ` / ${t.actions.join(', ')}` : '';
  const inherited = owner === self ? '' : `(${owner.path}) `;
  if (t.targets.length === 0) {
    const when = t.guard ? `stays while ${code(`[${t.guard.label}]`)}` : `stays on ${code(t.event)}`;
    return `${inherited}${when}${actions}`;
  }
  const trigger = code(t.guard ? `${t.event} [${t.guard.label}]` : t.event);
  const reenter = t.reenter ? ` (re-entering ${owner.path})` : '';
  return `${inherited}${trigger} → ${t.targets.join(', ')}${actions}${reenter}`;
}

function stateRows({ chart, conditionOf }: MachineDescription): string[] {
  const { lineage } = index(chart);
  return leaves(chart).map((s) => {
    const m = s.meta;
    if (!m) throw new Error(`state ${s.path} declares no meta`);
    const actions = [...s.entry.map((a) => `entry: ${a}`), ...s.exit.map((a) => `exit: ${a}`)];
    const out = lineage(s.path).flatMap((owner) => owner.transitions.map((t) => transition(t, owner, s)));
    return row([
      code(s.path),
      m.description,
      m.phase,
      yes(m.ready),
      yes(m.reconciling),
      yes(m.stalled),
      conditions(s, conditionOf),
      actions.join('\n'),
      out.join('\n'),
      m.requeue,
      yes(m.deadline),
    ]);
  });
}

function guardRows({ chart, guards }: MachineDescription): string[] {
  return guards.usedGuards(chart).map((name) => {
    const users = chart.states.filter((s) => s.transitions.some((t) => t.guard?.names.includes(name)));
    return row([
      code(name),
      `${guards.isGate(name) ? '**gate** ' : ''}${guards.meaningOf(name) ?? ''}`,
      users.map((s) => s.path).join(', '),
    ]);
  });
}

/** The heading of a machine's section, which the README links to. */
export const sectionTitle = (machine: MachineDescription) => machine.title;

/** A machine's section: its state table, then its guard table. */
function section(machine: MachineDescription): string[] {
  return [
    `## ${sectionTitle(machine)}`,
    '',
    `The \`${machine.chart.id}\` machine, ${sourceOf(machine)}: one row per state it can be in.`,
    '',
    row([
      'State',
      'Description',
      'Phase',
      'Ready',
      'Reconciling',
      'Stalled',
      'Conditions',
      'Actions',
      'Transitions out',
      'Requeue',
      'Deadline',
    ]),
    row(Array(11).fill('---')),
    ...stateRows(machine),
    '',
    `### ${sectionTitle(machine)}: guards`,
    '',
    'Gates are checked first, in this order, by every live state on every tick.',
    '',
    row(['Guard', 'Meaning', 'Declared on']),
    row(['---', '---', '---']),
    ...guardRows(machine),
    '',
  ];
}

export function toStateTable(machines: readonly MachineDescription[]): string {
  return [
    '# Lifecycle states',
    '',
    generatedNote(machines),
    '',
    'A section per machine: one row per state the machine can be in, then its guards. Transitions out are',
    "listed in the order XState tries them, the state's own before those inherited from its parent (prefixed",
    "with the parent's name). Eventless (`always`) ones are taken as soon as their guard holds; on a `tick`",
    'the first listed whose guard holds is taken, and a targetless one (“stays while”) keeps the state as it is.',
    '',
    '- **Conditions**: `pipeline` publishes the components before the step True and the step with this',
    "  state's reason; later ones are True when their own check passes, otherwise False (blocked by the",
    '  step). `observe` publishes every component straight from its own check.',
    '- **Requeue**: `none` waits for watch events (and the periodic resync), `wait` looks again after the',
    '  requeue delay. A pass that meets an API error retries as the error class says, whatever the state.',
    '- **Deadline**: past the progress deadline, `Stalled` turns True.',
    '',
    ...machines.flatMap(section),
  ].join('\n');
}
