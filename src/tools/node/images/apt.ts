/**
 * The Debian archive the images are made from: the machine's own apt sources (its Debian entries), with the
 * suite swapped when an image wants another release (trixie on a bookworm machine). A private apt state under
 * the cache (lists, package cache, an empty dpkg status) resolves, without installing anything, which package
 * versions an image would get; those versions are part of the image's cache key, and mmdebstrap is handed the
 * very same lists so that it installs what was resolved.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { acquireLock } from '../../control-plane/lock.ts';
import type { Log } from '../../control-plane/log.ts';
import { sha256 } from '../image-archive.ts';
import { run } from './process.ts';

export interface AptSource {
  types: string[];
  uris: string[];
  suites: string[];
  components: string[];
  signedBy?: string;
}

const DEBIAN_KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';
/** Lists older than this are refreshed (apt-get update) before a resolution; a failed refresh falls back on them. */
export const APT_LISTS_MAX_AGE_MS = 60 * 60 * 1000;

/** deb822 `.sources` stanzas (fields are case-insensitive; `Enabled: no` stanzas are dropped). */
export function parseDeb822(text: string): AptSource[] {
  const stanzas = text
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .split(/\n\s*\n/);
  const sources: AptSource[] = [];
  for (const stanza of stanzas) {
    const fields = new Map<string, string>();
    let last = '';
    for (const line of stanza.split('\n')) {
      if (/^\s/.test(line) && last) fields.set(last, `${fields.get(last)} ${line.trim()}`);
      else {
        const match = /^([\w-]+):\s*(.*)$/.exec(line);
        if (!match) continue;
        last = (match[1] ?? '').toLowerCase();
        fields.set(last, match[2] ?? '');
      }
    }
    const words = (name: string) => (fields.get(name) ?? '').split(/\s+/).filter(Boolean);
    if (words('types').length === 0 || (fields.get('enabled') ?? 'yes').trim() === 'no') continue;
    const signedBy = fields.get('signed-by')?.trim();
    sources.push({
      types: words('types'),
      uris: words('uris'),
      suites: words('suites'),
      components: words('components'),
      ...(signedBy ? { signedBy } : {}),
    });
  }
  return sources;
}

/** One-line `sources.list` entries: `deb [signed-by=…] URI SUITE COMPONENT…`. */
export function parseOneLine(text: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const match = /^(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (!match) continue;
    const signedBy = /(?:^|\s)signed-by=(\S+)/.exec(match[2] ?? '')?.[1];
    sources.push({
      types: [match[1] ?? 'deb'],
      uris: [match[3] ?? ''],
      suites: [match[4] ?? ''],
      components: (match[5] ?? '').split(/\s+/).filter(Boolean),
      ...(signedBy ? { signedBy } : {}),
    });
  }
  return sources;
}

export function renderDeb822(sources: readonly AptSource[]): string {
  return sources
    .map((s) =>
      [
        `Types: ${s.types.join(' ')}`,
        `URIs: ${s.uris.join(' ')}`,
        `Suites: ${s.suites.join(' ')}`,
        `Components: ${s.components.join(' ')}`,
        ...(s.signedBy ? [`Signed-By: ${s.signedBy}`] : []),
      ].join('\n'),
    )
    .join('\n\n')
    .concat('\n');
}

/**
 * The host's Debian binary entries for `suite`: those whose suites are the host's release (`bookworm`,
 * `bookworm-updates`, `bookworm-security`, …), with the release swapped. Other archives (vendors' repositories)
 * are left out. Without any, deb.debian.org.
 */
export function sourcesForSuite(host: readonly AptSource[], hostCodename: string, suite: string): AptSource[] {
  const ours = (s: string) => s === hostCodename || s.startsWith(`${hostCodename}-`);
  const found = host
    .filter((s) => s.types.includes('deb') && s.suites.length > 0 && s.suites.every(ours))
    .map((s) => ({
      ...s,
      types: ['deb'],
      suites: s.suites.map((x) => suite + x.slice(hostCodename.length)),
    }));
  if (found.length > 0) return found;
  return [
    {
      types: ['deb'],
      uris: ['http://deb.debian.org/debian'],
      suites: [suite, `${suite}-updates`],
      components: ['main'],
      signedBy: DEBIAN_KEYRING,
    },
    {
      types: ['deb'],
      uris: ['http://deb.debian.org/debian-security'],
      suites: [`${suite}-security`],
      components: ['main'],
      signedBy: DEBIAN_KEYRING,
    },
  ];
}

export function hostCodename(osRelease = readFileSync('/etc/os-release', 'utf8')): string {
  return /^VERSION_CODENAME=["']?([\w-]+)/m.exec(osRelease)?.[1] ?? 'bookworm';
}

export function hostAptSources(etc = '/etc/apt'): AptSource[] {
  const sources: AptSource[] = [];
  const list = join(etc, 'sources.list');
  if (existsSync(list)) sources.push(...parseOneLine(readFileSync(list, 'utf8')));
  const parts = join(etc, 'sources.list.d');
  if (existsSync(parts)) {
    for (const name of readdirSync(parts).sort()) {
      const text = () => readFileSync(join(parts, name), 'utf8');
      if (name.endsWith('.sources')) sources.push(...parseDeb822(text()));
      else if (name.endsWith('.list')) sources.push(...parseOneLine(text()));
    }
  }
  return sources;
}

/** `Inst name (version …)` lines of `apt-get install --simulate`. */
export function parseSimulatedInstall(output: string): Map<string, string> {
  const versions = new Map<string, string>();
  for (const match of output.matchAll(/^Inst (\S+?)(?::\w+)? (?:\[[^\]]*\] )?\((\S+) /gm)) {
    versions.set(match[1] ?? '', match[2] ?? '');
  }
  return new Map([...versions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A private apt state for one suite under the cache. */
export class AptSuite {
  readonly dir: string;
  readonly sourcesFile: string;
  readonly listsDir: string;

  constructor(
    cacheDir: string,
    readonly suite: string,
    sources: readonly AptSource[] = sourcesForSuite(hostAptSources(), hostCodename(), suite),
  ) {
    this.dir = join(cacheDir, 'apt', suite);
    this.sourcesFile = join(this.dir, `${suite}.sources`);
    this.listsDir = join(this.dir, 'lists');
    mkdirSync(join(this.listsDir, 'partial'), { recursive: true });
    mkdirSync(join(this.dir, 'cache', 'archives', 'partial'), { recursive: true });
    mkdirSync(join(this.dir, 'resolved'), { recursive: true });
    if (!existsSync(join(this.dir, 'status'))) writeFileSync(join(this.dir, 'status'), '');
    const text = renderDeb822(sources);
    if (!existsSync(this.sourcesFile) || readFileSync(this.sourcesFile, 'utf8') !== text) {
      writeFileSync(this.sourcesFile, text);
      // Other sources, other lists: refresh before the next resolution.
      writeFileSync(join(this.dir, 'updated'), '0');
    }
  }

  /** Options that point apt at this state only (the host's lists, preferences and dpkg status stay out). */
  private aptOptions(): string[] {
    const o = (setting: string) => ['-o', setting];
    return [
      ...o(`Dir::Etc::SourceList=${this.sourcesFile}`),
      ...o('Dir::Etc::SourceParts=/dev/null/none'),
      ...o('Dir::Etc::Preferences=/dev/null/none'),
      ...o('Dir::Etc::PreferencesParts=/dev/null/none'),
      ...o(`Dir::State=${this.dir}`),
      ...o(`Dir::State::Lists=${this.listsDir}`),
      ...o(`Dir::State::status=${join(this.dir, 'status')}`),
      ...o(`Dir::Cache=${join(this.dir, 'cache')}`),
      ...o('Dir::Cache::pkgcache=pkgcache.bin'),
      ...o('Dir::Cache::srcpkgcache=srcpkgcache.bin'),
      ...o('Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false'),
      ...o('Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false'),
      ...o('Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false'),
      ...o('Acquire::Languages=none'),
      ...o('APT::Install-Recommends=false'),
      ...o('Debug::NoLocking=true'),
      // As mmdebstrap does: apt must not count itself as Essential:yes (the `essential` variant has no apt).
      ...o('pkgCacheGen::ForceEssential=,'),
    ];
  }

  private lastUpdate(): number {
    try {
      return Number(readFileSync(join(this.dir, 'updated'), 'utf8')) || 0;
    } catch {
      return 0;
    }
  }

  private hasLists(): boolean {
    return readdirSync(this.listsDir).some((f) => f.endsWith('_InRelease') || f.endsWith('_Release'));
  }

  /** apt-get update when the lists are missing or older than APT_LISTS_MAX_AGE_MS. */
  async refresh(log: Log): Promise<void> {
    if (this.hasLists() && Date.now() - this.lastUpdate() < APT_LISTS_MAX_AGE_MS) return;
    try {
      await run('apt-get', [...this.aptOptions(), 'update'], { env: aptEnv() });
      writeFileSync(join(this.dir, 'updated'), String(Date.now()));
    } catch (error) {
      if (!this.hasLists()) throw error;
      log(`apt-get update for ${this.suite} failed; resolving with the lists of an earlier update (${error})`);
    }
  }

  /** Identifies the lists' content: the Release files name the hash of every index. */
  listsStamp(): string {
    const releases = readdirSync(this.listsDir)
      .filter((f) => f.endsWith('_InRelease') || f.endsWith('_Release'))
      .sort();
    return sha256(releases.map((f) => `${f}\n${readFileSync(join(this.listsDir, f), 'utf8')}`).join('\n'));
  }

  /**
   * Every package and version `apt-get install --no-install-recommends` would install into an empty system, with
   * the Essential:yes set when `essential` (mmdebstrap's `essential` variant). Memoised per lists and request.
   * `copyListsTo` receives a copy of the very lists resolved with (taken under the same lock).
   */
  async resolve(
    packages: readonly string[],
    essential: boolean,
    log: Log,
    options: { copyListsTo?: string } = {},
  ): Promise<Map<string, string>> {
    const lock = await acquireLock(join(this.dir, '..', `${this.suite}.lock`), `apt lists of ${this.suite}`, log);
    try {
      await this.refresh(log);
      if (options.copyListsTo) {
        mkdirSync(options.copyListsTo, { recursive: true });
        for (const name of readdirSync(this.listsDir)) {
          if (/_(InRelease|Release|Release\.gpg|Packages(\.\w+)?)$/.test(name)) {
            copyFileSync(join(this.listsDir, name), join(options.copyListsTo, name));
          }
        }
      }
      // mmdebstrap's own selection of the essential set.
      const essentialSet = `?narrow(?or(?archive(^${this.suite}$),?codename(^${this.suite}$)),?architecture(amd64),?essential)`;
      const request = [...(essential ? [essentialSet] : []), ...packages];
      const memo = join(this.dir, 'resolved', `${sha256(`${this.listsStamp()}\n${request.join(' ')}`)}.json`);
      if (existsSync(memo)) {
        return new Map(Object.entries(JSON.parse(readFileSync(memo, 'utf8')) as Record<string, string>));
      }
      const { stdout } = await run('apt-get', [...this.aptOptions(), 'install', '--simulate', ...request], {
        env: aptEnv(),
      });
      const versions = parseSimulatedInstall(stdout);
      const unresolved = packages.filter((p) => !versions.has(p.replace(/=.*/, '')));
      if (unresolved.length > 0)
        throw new Error(`apt resolved no version of ${unresolved.join(', ')} in ${this.suite}`);
      writeFileSync(memo, JSON.stringify(Object.fromEntries(versions)));
      return versions;
    } finally {
      await lock.release();
    }
  }
}

/** The host's apt.conf.d stays in force (proxies); APT_CONFIG is not inherited from a caller. */
function aptEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' };
  delete env.APT_CONFIG;
  return env;
}
