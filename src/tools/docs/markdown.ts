/**
 * Markdown helpers for the reference pages, and the markers that delimit their generated parts:
 * `<!-- generated:NAME -->` … `<!-- /generated:NAME -->`. Everything between a pair belongs to the
 * generator; everything outside it is written by hand and kept as it is.
 */

/** A table cell: pipes escaped, line breaks folded, so one value never breaks the table. */
export const cell = (text: string) =>
  text
    .replaceAll('\\', '\\\\')
    .replaceAll('|', '\\|')
    .replace(/\s*\n\s*/g, ' ');

/** Inline code, safe for values that contain backticks. */
export const code = (text: string) => (text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``);

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export const openMarker = (name: string) => `<!-- generated:${name} -->`;
export const closeMarker = (name: string) => `<!-- /generated:${name} -->`;

const MARKER = /<!-- (\/?)generated:([a-z0-9-]+) -->/g;

/** The names of the generated sections of a document, in order; throws on unbalanced markers. */
export function sectionNames(doc: string): string[] {
  const names: string[] = [];
  let open: string | undefined;
  for (const match of doc.matchAll(MARKER)) {
    const [, closing, name = ''] = match;
    if (!closing) {
      if (open) throw new Error(`generated:${name} opens inside generated:${open}`);
      if (names.includes(name)) throw new Error(`generated:${name} appears twice`);
      open = name;
    } else {
      if (open !== name) throw new Error(`/generated:${name} closes ${open ? `generated:${open}` : 'nothing'}`);
      names.push(name);
      open = undefined;
    }
  }
  if (open) throw new Error(`generated:${open} is never closed`);
  return names;
}

/**
 * The document with every generated section replaced by its new body. Every section of the document
 * must have a body and every body a section, so that neither a stale marker nor a forgotten table can
 * go unnoticed.
 */
export function fillSections(doc: string, bodies: Readonly<Record<string, string>>): string {
  const names = sectionNames(doc);
  const missing = Object.keys(bodies).filter((name) => !names.includes(name));
  if (missing.length > 0) throw new Error(`no markers for generated section(s): ${missing.join(', ')}`);
  let result = doc;
  for (const name of names) {
    const body = bodies[name];
    if (body === undefined) throw new Error(`nothing generates the section generated:${name}`);
    const start = result.indexOf(openMarker(name)) + openMarker(name).length;
    const end = result.indexOf(closeMarker(name));
    result = `${result.slice(0, start)}\n${body.trim()}\n${result.slice(end)}`;
  }
  return result;
}
