/** `diagrams/README.md`: the picture first, then the table link, then the complete Mermaid text. */
import { GENERATED_NOTE } from './table.ts';

export function toReadme(title: string, mermaid: string): string {
  return [
    `# ${title}: lifecycle statechart`,
    '',
    GENERATED_NOTE,
    '',
    '![statechart](postgres-cluster.svg)',
    '',
    '- [states.md](states.md): every state with its phase, conditions, actions and transitions, and every guard.',
    '- [postgres-cluster.dot](postgres-cluster.dot): the Graphviz source of the picture above.',
    '- [postgres-cluster.mmd](postgres-cluster.mmd): the Mermaid text below.',
    '',
    'The picture folds repeated transitions (see its legend); the Mermaid chart below draws every',
    'transition target as its own edge.',
    '',
    '```mermaid',
    mermaid.trimEnd(),
    '```',
    '',
  ].join('\n');
}
