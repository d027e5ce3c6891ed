/** The Kubernetes Events table, from what the exploration of the lifecycle emitted. */
import type { EventSource, ObservedEvent } from './lifecycle.ts';
import { code, table } from './markdown.ts';

export interface EventDoc {
  reason: string;
  type: 'Normal' | 'Warning';
  actions: string[];
  /** When it is emitted, one phrase per source. */
  when: string[];
  example: string;
}

const SOURCE_ORDER: EventSource[] = ['write', 'transition', 'writeFailure'];

/** Plain code-unit order: the same on every machine, whatever its locale. */
export const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const list = (items: Iterable<string>) => [...items].map(code).join(', ');

function whenTransition(observed: ObservedEvent[]): string {
  const froms = new Set(observed.map((e) => e.from));
  const tos = new Set(observed.map((e) => e.to));
  const [from] = froms;
  const [to] = tos;
  if (froms.size === 1 && tos.size === 1 && from && to) return `transition ${code(from)} → ${code(to)}`;
  if (tos.size === 1 && to) return `entering ${code(to)}`;
  if (froms.size === 1 && from && !tos.has(from)) return `leaving ${code(from)}`;
  return `transitions to ${list(tos)}`;
}

function when(source: EventSource, observed: ObservedEvent[]): string {
  const writes = new Set(observed.flatMap((e) => (e.write ? [e.write] : [])));
  switch (source) {
    case 'write':
      return `after ${list(writes)} succeeded`;
    case 'writeFailure':
      return `${list(writes)} failed (once per new failure, not per retry)`;
    case 'transition':
      return whenTransition(observed);
  }
}

/** One row per reason and type, grouped by where the event first comes from, then by reason. */
export function eventDocs(observed: readonly ObservedEvent[]): EventDoc[] {
  const rows = new Map<string, { first: EventSource; doc: EventDoc; bySource: Map<EventSource, ObservedEvent[]> }>();
  for (const source of SOURCE_ORDER) {
    for (const e of observed.filter((o) => o.source === source)) {
      const key = `${e.event.reason}/${e.event.type}`;
      let row = rows.get(key);
      if (!row) {
        row = {
          first: source,
          doc: { reason: e.event.reason, type: e.event.type, actions: [], when: [], example: e.event.message },
          bySource: new Map(),
        };
        rows.set(key, row);
      }
      if (!row.doc.actions.includes(e.event.action)) row.doc.actions.push(e.event.action);
      row.bySource.set(source, [...(row.bySource.get(source) ?? []), e]);
    }
  }
  const sorted = [...rows.values()].sort(
    (a, b) =>
      SOURCE_ORDER.indexOf(a.first) - SOURCE_ORDER.indexOf(b.first) ||
      byCodeUnits(a.doc.reason, b.doc.reason) ||
      byCodeUnits(a.doc.type, b.doc.type),
  );
  return sorted.map(({ doc, bySource }) => ({
    ...doc,
    when: SOURCE_ORDER.filter((s) => bySource.has(s)).map((s) => when(s, bySource.get(s) ?? [])),
  }));
}

export function eventsTable(docs: readonly EventDoc[]): string {
  return table(
    ['Reason', 'Type', 'Action', 'When', 'Example message'],
    docs.map((d) => [code(d.reason), d.type, list(d.actions), d.when.join('; '), d.example]),
  );
}
