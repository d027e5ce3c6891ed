/**
 * Just enough of a Dockerfile reader for the cache key and the build arguments of pgfsm's image: the base image
 * of each stage (a build argument with its default) and the files taken from the build context.
 */

export interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions with continuation lines joined and comments dropped. */
export function dockerfileInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (pending === '' && line === '')) continue;
    pending += `${line.replace(/\\$/, '').trim()} `;
    if (line.endsWith('\\')) continue;
    const [keyword = '', ...rest] = pending.trim().split(/\s+/);
    instructions.push({ keyword: keyword.toUpperCase(), args: rest.join(' ') });
    pending = '';
  }
  return instructions;
}

export interface StageBase {
  /** The stage's name (`AS name`), if any. */
  name?: string;
  /** The build argument that chooses the base, if the FROM names one. */
  arg?: string;
  /** The image used when the argument is not given (or the literal FROM image). */
  image: string;
}

/** FROM of each stage: `FROM ${ARG:-default}`, `FROM ${ARG}` with a global `ARG ARG=default`, or `FROM image`. */
export function dockerfileBaseImages(text: string): StageBase[] {
  const globals = new Map<string, string>();
  const stages: StageBase[] = [];
  for (const { keyword, args } of dockerfileInstructions(text)) {
    if (keyword === 'ARG' && stages.length === 0) {
      const [name = '', value = ''] = args.split('=', 2);
      globals.set(name.trim(), value.trim().replace(/^"(.*)"$/, '$1'));
    }
    if (keyword !== 'FROM') continue;
    const words = args.split(/\s+/).filter((w) => !w.startsWith('--platform'));
    const from = words[0] ?? '';
    const name = words[1]?.toUpperCase() === 'AS' ? words[2] : undefined;
    const variable = /^\$\{(\w+)(?::-(.*))?\}$/.exec(from) ?? /^\$(\w+)$/.exec(from);
    const base: StageBase = variable
      ? { arg: variable[1] ?? '', image: variable[2] ?? globals.get(variable[1] ?? '') ?? '' }
      : { image: from };
    stages.push(name ? { name, ...base } : base);
  }
  return stages;
}

/** The sources of each COPY/ADD that reads the build context (not `--from=` another stage or image). */
export function dockerfileContextSources(text: string): string[] {
  const sources: string[] = [];
  for (const { keyword, args } of dockerfileInstructions(text)) {
    if (keyword !== 'COPY' && keyword !== 'ADD') continue;
    const words = args.split(/\s+/);
    if (words.some((w) => w.startsWith('--from='))) continue;
    const paths = words.filter((w) => !w.startsWith('--'));
    for (const source of paths.slice(0, -1)) {
      const clean = source.replace(/^\.\//, '').replace(/\/$/, '');
      if (!sources.includes(clean)) sources.push(clean);
    }
  }
  return sources;
}
