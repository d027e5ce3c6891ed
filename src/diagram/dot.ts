/**
 * Graphviz DOT for the readable picture. Unlike the Mermaid text it simplifies where that loses nothing
 * (states.md lists every transition):
 * - the gates every live state checks first are drawn once each, as "any live state" stubs (gates.ts);
 * - compound states are clusters, and a handler declared on a compound state, or declared alike by
 *   every child of one (Failed.* → Provisioning), is drawn once from the cluster border (`ltail`);
 * - a compound state's transition into its own initial child is folded into the initial arrow;
 * - each failure state sits in the same column as the step that fails into it.
 */
import { classifier, type EdgeKind } from './classify.ts';
import { summariseGates } from './gates.ts';
import { type Chart, type ChartState, index, type Transition } from './walk.ts';

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
const anchor = (path: string) => q(`${path}:anchor`);
const start = (path: string) => q(`${path}:start`);

/** Event, guard and actions on separate lines: long guards would otherwise stretch every rank. */
const label = (t: Transition) =>
  [t.event, t.guard ? `[${t.guard.label}]` : '', t.actions.length ? `/ ${t.actions.join(', ')}` : '']
    .filter(Boolean)
    .join('\n');

const COLOR = { happy: '#1a7f37', failure: '#cf222e', gate: '#8c959f', normal: '#24292f' };
const EDGE_STYLE: Record<EdgeKind, string> = {
  happy: `penwidth=2.5 color="${COLOR.happy}" fontcolor="${COLOR.happy}"`,
  failure: `color="${COLOR.failure}" fontcolor="${COLOR.failure}"`,
  gate: `style=dashed color="${COLOR.gate}" fontcolor="#57606a"`,
  'gate-failure': `style=dashed color="${COLOR.failure}" fontcolor="${COLOR.failure}"`,
  normal: `color="${COLOR.normal}"`,
};

/** Node fill by `meta.phase`, so the picture reads like the `status.phase` a user sees. */
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
function edgesOf(chart: Chart, covered: Set<Transition>): Edge[] {
  const kindOf = classifier(chart);
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

export function toDot(chart: Chart): string {
  const { get, isWithin } = index(chart);
  const compound = (path: string) => get(path).children.length > 0;
  const fill = (s: ChartState) => FILL[s.meta?.phase ?? (s.initial ? get(s.initial).meta?.phase : '') ?? ''];
  const gates = summariseGates(chart);
  const edges = edgesOf(chart, gates.covered);
  // Edges must end at a node: a cluster is entered or left through its invisible anchor, clipped at
  // the border by lhead/ltail.
  const end = (path: string) => (compound(path) ? anchor(path) : q(path));
  const head = (path: string) => (compound(path) ? [`lhead=${cluster(path)}`] : []);

  const lines = [
    'digraph statechart {',
    '  graph [compound=true newrank=true rankdir=TB nodesep=0.3 ranksep=0.55 fontname="Helvetica" labeljust=l];',
    '  node [shape=box style="rounded,filled" fillcolor=white fontname="Helvetica" fontsize=12 color="#57606a"];',
    '  edge [fontname="Helvetica" fontsize=9 arrowsize=0.7];',
    `  ${start('')} [shape=point width=0.15 color=black];`,
  ];
  const declare = (s: ChartState, indent: string) => {
    const attrs = `fillcolor=${q(fill(s) ?? 'white')}`;
    if (!compound(s.path)) {
      lines.push(`${indent}${q(s.path)} [label=${q(s.key)} ${attrs}${s.type === 'final' ? ' peripheries=2' : ''}];`);
      return;
    }
    lines.push(`${indent}subgraph ${cluster(s.path)} {`);
    lines.push(`${indent}  label=${q(s.key)} fontsize=14 style="rounded,filled" ${attrs} color="#57606a";`);
    lines.push(`${indent}  ${anchor(s.path)} [shape=point style=invis width=0.01];`);
    if (s.initial) {
      // Ranked ahead of the start marker, so edges into the cluster arrive at its beginning.
      lines.push(`${indent}  ${start(s.path)} [shape=point width=0.1 color=black];`);
      lines.push(`${indent}  ${anchor(s.path)} -> ${start(s.path)} [style=invis];`);
    }
    for (const child of s.children) declare(get(child), `${indent}  `);
    lines.push(`${indent}}`);
  };
  for (const s of chart.states.filter((c) => !c.parent)) declare(s, '  ');

  gates.stubs.forEach((stub, i) => {
    const id = q(`gate:${i + 1}`);
    const text = `${i + 1}. any live state\n${stub.label}`;
    lines.push(`  ${id} [label=${q(text)} shape=note style=dashed color="${COLOR.gate}" fontsize=9];`);
    const failing = get(stub.target).meta?.phase === 'Failed';
    const style = EDGE_STYLE[failing ? 'gate-failure' : 'gate'];
    lines.push(`  ${id} -> ${end(stub.target)} [${[style, ...head(stub.target)].join(' ')}];`);
  });

  lines.push(`  ${start('')} -> ${end(chart.initial)} [${head(chart.initial).join(' ')}];`);
  const initialLabels = new Map<string, string>();
  const drawn: string[] = [];
  for (const e of edges) {
    const attrs = [EDGE_STYLE[e.kind], ...head(e.to)];
    let from = end(e.from);
    if (compound(e.from) && isWithin(e.to, e.from)) {
      // A compound state's own handler re-entering a child: drawn from the cluster's start marker.
      if (get(e.from).initial === e.to) {
        initialLabels.set(e.from, `${label(e.t)}\n(re-enter)`);
        continue;
      }
      from = start(e.from);
    } else if (compound(e.from)) {
      attrs.push(`ltail=${cluster(e.from)}`);
    }
    drawn.push(`  ${from} -> ${end(e.to)} [label=${q(label(e.t))} ${attrs.join(' ')}];`);
  }
  for (const s of chart.states.filter((c) => c.initial)) {
    const text = initialLabels.get(s.path);
    lines.push(`  ${start(s.path)} -> ${end(s.initial ?? '')}${text ? ` [label=${q(text)}]` : ''};`);
  }
  lines.push(...drawn);

  // A failure state in the same column as the step that fails into it keeps the red edges short.
  for (const e of edges) {
    if (e.kind === 'failure' && !compound(e.from) && !compound(e.to)) {
      lines.push(`  { rank=same; ${q(e.from)}; ${q(e.to)}; }`);
    }
  }

  const legend = [
    `<B>${html(chart.id)}</B>: generated from machines/postgres-cluster.ts`,
    `<FONT COLOR="${COLOR.happy}">bold green</FONT>: the happy path; <FONT COLOR="${COLOR.failure}">red</FONT>: into a failure state; black: everything else`,
    `dashed notes: the gates every live state checks first on each tick, in this order (live: all but ${gates.exempt.map(html).join(', ')}); a state already in the target stays`,
    'a transition on a cluster border applies to every state inside it; full list: states.md',
  ];
  lines.push(`  label=<${legend.map((l) => `${l}<BR ALIGN="LEFT"/>`).join('')}>;`, '  fontsize=11;', '}');
  return `${lines.join('\n')}\n`;
}
