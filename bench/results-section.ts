/**
 * bench/results.md is written by more than one part of the bench: each writes only its own section, between
 * `<!-- name:start -->` and `<!-- name:end -->`, and leaves the rest of the file as it found it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export function writeSection(path: string, name: string, body: string): void {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const block = `${start}\n${body.trim()}\n${end}`;
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  const next =
    from >= 0 && to > from
      ? `${text.slice(0, from)}${block}${text.slice(to + end.length)}`
      : `${text.trimEnd()}${text.trim() ? '\n\n' : ''}${block}\n`;
  writeFileSync(path, next);
}
