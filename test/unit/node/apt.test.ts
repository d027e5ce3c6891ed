/**
 * Where the images' packages come from: the machine's own Debian sources with the suite swapped, and the
 * versions `apt-get install --simulate` resolves (part of every Debian image's cache key). CloudNativePG's default
 * image names are checked against its module in test/integration/cnpg-image-names.test.ts, where the module is
 * sure to be there.
 */
import { describe, expect, it } from 'vitest';
import {
  hostCodename,
  parseDeb822,
  parseOneLine,
  parseSimulatedInstall,
  renderDeb822,
  sourcesForSuite,
} from '../../../src/tools/node/images/apt.ts';

const HOST_SOURCES = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
Signed-By: /usr/share/keyrings/nodesource.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Enabled: no
`;

describe('apt sources', () => {
  it('parses deb822 stanzas, skipping comments and disabled ones', () => {
    const sources = parseDeb822(HOST_SOURCES);
    expect(sources).toHaveLength(3);
    expect(sources[0]).toEqual({
      types: ['deb'],
      uris: ['http://deb.debian.org/debian'],
      suites: ['bookworm', 'bookworm-updates'],
      components: ['main'],
      signedBy: '/usr/share/keyrings/debian-archive-keyring.gpg',
    });
  });

  it('parses one-line entries with options', () => {
    expect(
      parseOneLine('# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror/debian bookworm main contrib\n'),
    ).toEqual([
      {
        types: ['deb'],
        uris: ['http://mirror/debian'],
        suites: ['bookworm'],
        components: ['main', 'contrib'],
        signedBy: '/k.gpg',
      },
    ]);
  });

  it("keeps the machine's Debian archive and mirror, swaps the suite, drops other vendors", () => {
    const trixie = sourcesForSuite(parseDeb822(HOST_SOURCES), 'bookworm', 'trixie');
    expect(trixie.map((s) => [s.uris[0], s.suites])).toEqual([
      ['http://deb.debian.org/debian', ['trixie', 'trixie-updates']],
      ['http://deb.debian.org/debian-security', ['trixie-security']],
    ]);
    expect(renderDeb822(trixie)).toContain('Suites: trixie trixie-updates\nComponents: main\nSigned-By: ');
    expect(parseDeb822(renderDeb822(trixie))).toEqual(trixie);
  });

  it('falls back on deb.debian.org when the machine has no Debian entries', () => {
    const sources = sourcesForSuite(parseOneLine('deb http://vendor/apt stable main'), 'bookworm', 'trixie');
    expect(sources.flatMap((s) => s.suites)).toEqual(['trixie', 'trixie-updates', 'trixie-security']);
    expect(sources[0]?.uris).toEqual(['http://deb.debian.org/debian']);
  });

  it("reads the machine's codename", () => {
    expect(hostCodename('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\n')).toBe('bookworm');
  });
});

describe('parseSimulatedInstall', () => {
  it('takes name and version from each Inst line, sorted by name', () => {
    const output = [
      'NOTE: This is only a simulation!',
      'Inst postgresql-17 (17.12-0+deb13u1 Debian:13.8/stable, Debian-Security:13/stable-security [amd64])',
      'Inst libc6 (2.41-12+deb13u5 Debian:13.8/stable [amd64]) []',
      'Inst libpq5:amd64 (17.12-0+deb13u1 Debian:13.8/stable [amd64])',
      'Conf libc6 (2.41-12+deb13u5 Debian:13.8/stable [amd64])',
    ].join('\n');
    expect([...parseSimulatedInstall(output)]).toEqual([
      ['libc6', '2.41-12+deb13u5'],
      ['libpq5', '17.12-0+deb13u1'],
      ['postgresql-17', '17.12-0+deb13u1'],
    ]);
  });
});
