/**
 * `diagrams/README.md`: the table link, then per machine its picture, its sources and its complete
 * Mermaid text.
 */
import type { MachineDescription } from '../../../machines/chart.ts';
import { generatedNote } from './label.ts';

/** One machine's rendering, as the README shows it. */
export interface Rendered {
  machine: MachineDescription;
  mermaid: string;
}

const section = ({ machine, mermaid }: Rendered) => [
  `## ${machine.title}`,
  '',
  `![the ${machine.title} lifecycle statechart](${machine.file}.svg)`,
  '',
  `- [${machine.file}.dot](${machine.file}.dot): the Graphviz source of the picture above.`,
  `- [${machine.file}.mmd](${machine.file}.mmd): the Mermaid text below.`,
  '',
  '```mermaid',
  mermaid.trimEnd(),
  '```',
  '',
];

export function toReadme(rendered: readonly Rendered[]): string {
  return [
    '# Lifecycle statecharts',
    '',
    generatedNote(rendered.map((r) => r.machine)),
    '',
    `One statechart per resource: ${rendered.map((r) => `[${r.machine.title}](#${r.machine.title.toLowerCase()})`).join(', ')}.`,
    '',
    '- [states.md](states.md): every state of each machine with its phase, conditions, actions and transitions,',
    '  and every guard.',
    '',
    'Each picture folds repeated transitions (see its legend); each Mermaid chart draws every transition',
    'target as its own edge.',
    '',
    ...rendered.flatMap(section),
  ].join('\n');
}
