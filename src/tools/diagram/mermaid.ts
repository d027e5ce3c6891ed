/**
 * Mermaid `stateDiagram-v2` text. Complete rather than pretty: one edge per transition target, so a
 * reviewer can check any transition against the machine; the SVG is the readable picture.
 */
import type { MachineDescription } from '../../../machines/chart.ts';
import type { ChartState } from '../../../machines/walk.ts';
import { generatedNote, transitionLabel } from './label.ts';

/** Mermaid ids cannot contain dots; the readable name is restored with `state "Key" as id`. */
export const mermaidId = (path: string) => path.replace(/\W/g, '_');

export function toMermaid(machine: MachineDescription): string {
  const { chart } = machine;
  const ids = new Map<string, string>();
  for (const s of chart.states) {
    const id = mermaidId(s.path);
    const clash = ids.get(id);
    if (clash) throw new Error(`states ${clash} and ${s.path} both sanitise to ${id}`);
    ids.set(id, s.path);
  }

  const lines = [
    'stateDiagram-v2',
    `  %% ${chart.id}: ${generatedNote([machine])}`,
    `  [*] --> ${mermaidId(chart.initial)}`,
  ];
  const declare = (s: ChartState, indent: string) => {
    if (s.children.length === 0) {
      lines.push(`${indent}state "${s.key}" as ${mermaidId(s.path)}`);
    } else {
      lines.push(`${indent}state "${s.key}" as ${mermaidId(s.path)} {`);
      if (s.initial) lines.push(`${indent}  [*] --> ${mermaidId(s.initial)}`);
      for (const child of chart.states.filter((c) => c.parent === s.path)) declare(child, `${indent}  `);
      lines.push(`${indent}}`);
    }
    if (s.type === 'final') lines.push(`${indent}${mermaidId(s.path)} --> [*]`);
  };
  for (const s of chart.states.filter((c) => c.parent === undefined)) declare(s, '  ');

  // Edges after all declarations, at top level: Mermaid then keeps each state in its own composite.
  lines.push('');
  for (const s of chart.states) {
    for (const t of s.transitions) {
      for (const target of t.targets) {
        lines.push(`  ${mermaidId(s.path)} --> ${mermaidId(target)} : ${transitionLabel(t)}`);
      }
    }
  }
  return `${lines.join('\n')}\n`;
}
