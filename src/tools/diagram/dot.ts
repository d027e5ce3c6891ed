/**
 * Graphviz DOT for the readable picture. Unlike the Mermaid text it simplifies where that loses nothing
 * (states.md lists every transition):
 * - the gates every live state checks first are drawn once each, as "any live state" notes (gates.ts);
 * - compound states are clusters, and a handler declared on a compound state, or declared alike by
 *   every child of one (Failed.* → Provisioning), is drawn once from the cluster border (`ltail`);
 * - a compound state's transition into its own initial child is folded into the initial arrow.
 * Layout: top to bottom, so the picture stays legible at README width; each failure state sits level
 * with the step that fails into it.
 */

import type { MachineDescription } from '../../../machines/chart.ts';
import type { GuardReader } from '../../../machines/guards.ts';
import { type Chart, type ChartState, index, type Transition } from '../../../machines/walk.ts';
import { classifier, downstreamOf, type EdgeKind } from './classify.ts';
import { summariseGates } from './gates.ts';
import { generatedNote, sourceOf } from './label.ts';

interface Edge {
  from: string;
  to: string;
  t: Transition;
  kind: EdgeKind;
}

/** DOT string literal; a newline in `s` becomes a centred line break. */
const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
const html = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const cluster = (path: string) => q(`cluster_${path}`);
/** Invisible point that edges into or out of a cluster attach to (clipped at its border). */
const top = (path: string) => q(`${path}:top`);
const start = (path: string) => q(`${path}:start`);

/** Event, guard and actions on separate lines: one long line per edge would widen every rank. */
const label = (t: Transition) =>
  [t.event, t.guard ? `[${t.guard.label}]` : '', t.actions.length ? `/ ${t.actions.join(', ')}` : '']
    .filter(Boolean)
    .join('\n');

const COLOR = { happy: '#1a7f37', failure: '#cf222e', gate: '#8c959f', normal: '#24292f' };
const EDGE_STYLE: Record<EdgeKind, string> = {
  happy: `penwidth=2.5 color="${COLOR.happy}" fontcolor="${COLOR.happy}"`,
  failure: `color="${COLOR.failure}" fontcolor="${COLOR.failure}"`,
  gate: `style=dashed color="${COLOR.gate}"`,
  'gate-failure': `style=dashed color="${COLOR.failure}"`,
  normal: `color="${COLOR.normal}"`,
};

/** Fill by `meta.phase`, so the picture reads like the `status.phase` a user sees. */
const FILL: Record<string, string> = {
  Pending: '#fff8c5',
  Provisioning: '#ddf4ff',
  Ready: '#dafbe1',
  Degraded: '#fff1e5',
  Failed: '#ffebe9',
  Suspended: '#eaeef2',
  Deleting: '#f6f8fa',
};

/** Every drawn transition target as an edge, with per-child duplicates folded onto the parent. */
function edgesOf(chart: Chart, guards: GuardReader, covered: Set<Transition>): Edge[] {
  const kindOf = classifier(chart, guards);
  const { isWithin } = index(chart);
  const edges: Edge[] = chart.states.flatMap((s) =>
    s.transitions
      .filter((t) => !covered.has(t))
      .flatMap((t) => t.targets.map((to) => ({ from: s.path, to, t, kind: kindOf(t, to) }))),
  );
  const key = (e: Edge) => `${e.to}\n${label(e.t)}`;
  for (const parent of chart.states.filter((s) => s.children.length > 0)) {
    const [first, ...rest] = parent.children.map((c) => edges.filter((e) => e.from === c));
    for (const edge of first ?? []) {
      if (isWithin(edge.to, parent.path) || !rest.every((es) => es.some((e) => key(e) === key(edge)))) continue;
      const folded = edges.filter((e) => parent.children.includes(e.from) && key(e) === key(edge));
      for (const e of folded) edges.splice(edges.indexOf(e), 1);
      edges.push({ ...edge, from: parent.path });
    }
  }
  return edges;
}

export function toDot(machine: MachineDescription): string {
  const { chart, guards } = machine;
  const { get, isWithin } = index(chart);
  const compound = (path: string) => get(path).children.length > 0;
  const node = (path: string) => (compound(path) ? top(path) : q(path));
  const fill = (s: ChartState) => FILL[s.meta?.phase ?? (s.initial ? get(s.initial).meta?.phase : '') ?? ''];
  const gates = summariseGates(chart, guards);
  const edges = edgesOf(chart, guards, gates.covered);

  // An edge back into a cluster from a state after it (Ready → Provisioning) is attached to the child
  // it came from (ConfigMap) and clipped at the border: attached to the top, it would climb the whole
  // cluster and cut across the failure edges.
  const exitOf = (e: Edge) =>
    compound(e.to) && !compound(e.from) ? downstreamOf(chart, guards, e.to).get(e.from) : undefined;

  const lines = [
    `// ${generatedNote([machine])}`,
    'digraph statechart {',
    '  graph [compound=true newrank=true rankdir=TB nodesep=0.45 ranksep=0.45 fontname="Helvetica" labeljust=l];',
    '  node [shape=box style="rounded,filled" fillcolor=white fontname="Helvetica" fontsize=12 color="#57606a"];',
    '  edge [fontname="Helvetica" fontsize=9 arrowsize=0.7];',
    `  ${start('')} [shape=point width=0.15 color=black];`,
  ];
  const declare = (s: ChartState, indent: string) => {
    const fillcolor = `fillcolor=${q(fill(s) ?? 'white')}`;
    if (!compound(s.path)) {
      const final = s.type === 'final' ? ' peripheries=2' : '';
      lines.push(`${indent}${q(s.path)} [label=${q(s.key)} ${fillcolor}${final}];`);
      return;
    }
    const inner = `${indent}  `;
    lines.push(`${indent}subgraph ${cluster(s.path)} {`);
    lines.push(`${inner}label=${q(s.key)} fontsize=14 margin=14 style="rounded,filled" ${fillcolor} color="#57606a";`);
    lines.push(`${inner}${top(s.path)} [shape=point style=invis width=0.01];`);
    if (s.initial) {
      lines.push(`${inner}${start(s.path)} [shape=point width=0.1 color=black];`);
      lines.push(`${inner}${top(s.path)} -> ${start(s.path)} [style=invis];`);
    }
    for (const child of s.children) declare(get(child), inner);
    lines.push(`${indent}}`);
  };
  for (const s of chart.states.filter((c) => !c.parent)) declare(s, '  ');

  const lhead = (path: string) => (compound(path) ? [`lhead=${cluster(path)}`] : []);
  gates.stubs.forEach((stub, i) => {
    const id = q(`gate:${i + 1}`);
    const text = `${i + 1}. any live state\n${stub.label}`;
    lines.push(`  ${id} [label=${q(text)} shape=note style=dashed color="${COLOR.gate}" fontsize=9];`);
    const kind = get(stub.target).meta?.phase === 'Failed' ? 'gate-failure' : 'gate';
    lines.push(`  ${id} -> ${node(stub.target)} [${[EDGE_STYLE[kind], ...lhead(stub.target)].join(' ')}];`);
  });

  lines.push(`  ${start('')} -> ${node(chart.initial)} [${lhead(chart.initial).join(' ')}];`);
  const initialLabels = new Map<string, string>();
  const drawn: string[] = [];
  for (const e of edges) {
    const attrs = [`label=${q(label(e.t))}`, EDGE_STYLE[e.kind], ...lhead(e.to)];
    let from = node(e.from);
    if (compound(e.from) && isWithin(e.to, e.from)) {
      // A compound state's own handler re-entering its initial child: the label joins the initial arrow.
      if (get(e.from).initial === e.to) {
        initialLabels.set(e.from, `${label(e.t)}\n(re-enter)`);
        continue;
      }
      from = start(e.from);
    } else if (compound(e.from)) {
      attrs.push(`ltail=${cluster(e.from)}`);
    }
    const exit = exitOf(e);
    if (exit) {
      // Written reversed (dir=back) so that ranking keeps the source below the child it came from.
      const reversed = attrs.map((a) => a.replace(/^lhead=/, 'ltail='));
      drawn.push(`  ${node(exit)} -> ${from} [${[...reversed, 'dir=back'].join(' ')}];`);
    } else {
      drawn.push(`  ${from} -> ${node(e.to)} [${attrs.join(' ')}];`);
    }
    // Level with the step that fails into it, a failure state's edge is short and its label clear.
    if (e.kind === 'failure' && !compound(e.from) && !compound(e.to)) {
      drawn.push(`  { rank=same; ${q(e.from)}; ${q(e.to)}; }`);
    }
  }
  for (const s of chart.states.filter((c) => c.initial)) {
    const text = initialLabels.get(s.path);
    lines.push(`  ${start(s.path)} -> ${node(s.initial ?? '')}${text ? ` [label=${q(text)}]` : ''};`);
  }
  lines.push(...drawn);

  const legend: Array<[string, string]> = [
    [COLOR.happy, 'bold green: the happy path'],
    [COLOR.failure, 'red: into a failure state'],
    [COLOR.normal, 'a transition drawn from a cluster border is taken from every state inside it'],
    [COLOR.normal, `dashed notes: the gates every live state (all but ${gates.exempt.join(', ')}) checks first`],
    [COLOR.normal, 'on every tick, in the order numbered; a state already in the target stays'],
    [COLOR.normal, `${chart.id}, generated from ${sourceOf(machine)}; states.md lists every transition`],
  ];
  const rows = legend.map(([c, text]) => `<FONT COLOR="${c}">${html(text)}</FONT><BR ALIGN="LEFT"/>`);
  lines.push(`  label=<${rows.join('')}>;`, '  fontsize=11;', '}');
  return `${lines.join('\n')}\n`;
}
