/**
 * What each image of the real node is made of. The text of a recipe (its packages, hook scripts and image
 * configuration) is part of its cache key: editing a recipe rebuilds that image, and only that one.
 *
 * Image references: the chosen CloudNativePG's defaults (pkg/versions/versions.go of its module:
 * DefaultOperatorImageName and DefaultPgbouncerImage; test/integration/cnpg-image-names.test.ts checks them
 * against the module), and the PostgreSQL image names pgfsm sets on Clusters. These names are served from the
 * node's own image store; kubelet never pulls a non-`latest` tag that is present.
 */
import { CNPG_VERSION, type CnpgVersion } from '../../control-plane/build.ts';
import type { ImageConfig } from '../image-archive.ts';

export const PAUSE_REF = 'registry.k8s.io/pause:3.10';

/**
 * The PostgreSQL majors the node carries, the default first: Debian forky's postgresql-18 (CloudNativePG's own
 * default major since 1.27.2) and trixie's postgresql-17, which pgfsm keeps supporting.
 */
export const POSTGRES_MAJORS = ['18', '17'] as const;
export type PostgresMajor = (typeof POSTGRES_MAJORS)[number];
export const DEFAULT_POSTGRES_MAJOR: PostgresMajor = '18';
/** Debian's newest PostgreSQL of each major: 18 only in forky (testing), 17 in trixie (stable). */
const POSTGRES_SUITE: Record<PostgresMajor, string> = { '18': 'forky', '17': 'trixie' };

/** pgfsm sets exactly `ghcr.io/cloudnative-pg/postgresql:<postgresVersion>` on CloudNativePG Clusters. */
export const postgresRef = (major: PostgresMajor) => `ghcr.io/cloudnative-pg/postgresql:${major}`;
/** The default major's image: the examples' class and the e2e classes ask for it. */
export const POSTGRES_REF = postgresRef(DEFAULT_POSTGRES_MAJOR);
export const POSTGRES_17_REF = postgresRef('17');

/**
 * CloudNativePG's DefaultPgbouncerImage of each version pgfsm is tested on. The name is CNPG's; the content is
 * Debian trixie's PgBouncer (1.24.x): CNPG needs ≥ 1.19 (`auth_dbname`), and 1.29/1.30 write no PgBouncer
 * setting 1.28 did not (their pgbouncer.ini template only escapes more), so forky's 1.26 is not needed.
 */
const PGBOUNCER_TAG: Record<CnpgVersion, string> = { 'v1.30.1': '1.25.2', 'v1.29.2': '1.25.1', 'v1.28.2': '1.25.1' };
export const pgbouncerRef = (cnpg: CnpgVersion) => `ghcr.io/cloudnative-pg/pgbouncer:${PGBOUNCER_TAG[cnpg]}`;
export const PGBOUNCER_REF = pgbouncerRef(CNPG_VERSION);
/** CloudNativePG's DefaultOperatorImageName: its own version as the tag (its release manifests use the same). */
export const cnpgOperatorRef = (cnpg: CnpgVersion) => `ghcr.io/cloudnative-pg/cloudnative-pg:${cnpg.slice(1)}`;
export const CNPG_OPERATOR_REF = cnpgOperatorRef(CNPG_VERSION);
/** The bases the project's Dockerfile is built on here (its BUILD_IMAGE and RUNTIME_IMAGE build arguments). */
export const NODE_BUILD_REF = 'localhost/pgfsm-base/node-build:20-trixie';
export const NODE_RUNTIME_REF = 'localhost/pgfsm-base/nodejs-runtime:20-trixie';

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** A root filesystem made by mmdebstrap from Debian packages. */
export interface DebianRecipe {
  kind: 'debian';
  /** The cache directory's name. */
  name: string;
  ref: string;
  suite: string;
  /**
   * mmdebstrap's variant: `essential` (Essential:yes packages, dpkg-configured, plus `include`) or `extract`
   * (only `include` and its dependencies, unpacked, no maintainer scripts: a distroless-like tree).
   */
  variant: 'essential' | 'extract';
  include: string[];
  /** The package whose version the image is labelled with. */
  mainPackage: string;
  /**
   * Shell scripts run on the finished tree, `$1` being the root filesystem (outside any chroot): as mmdebstrap's
   * customize hooks (with /dev, /proc mounted in the tree), or after it in the extract variant.
   */
  customize: string[];
  /** Paths (relative to the root) that must exist in the result. */
  expect: string[];
  config: ImageConfig;
  title: string;
}

/** An image of a few files from the machine, no distribution. */
export interface FilesRecipe {
  kind: 'files';
  name: string;
  ref: string;
  files: Array<{ path: string; source: string; mode: number }>;
  symlinks: Array<{ path: string; target: string }>;
  config: ImageConfig;
  title: string;
}

/** Documentation and manual pages stay out of the Debian images; copyright files stay in. */
export const DPKG_OPTIONS = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
];

/**
 * PostgreSQL as CloudNativePG runs it: the `postgres` user and group are 26 (CNPG's pods run as 26:26; in
 * Debian 26 is the `tape` group, dropped), the server's binaries on PATH (CNPG calls initdb, postgres, pg_ctl,
 * pg_controldata, pg_basebackup by name), C.UTF-8, and no `main` cluster from the package's postinst.
 */
export const postgresRecipeFor = (major: PostgresMajor): DebianRecipe => ({
  kind: 'debian',
  name: `postgresql-${major}`,
  ref: postgresRef(major),
  suite: POSTGRES_SUITE[major],
  variant: 'essential',
  include: [`postgresql-${major}`],
  mainPackage: `postgresql-${major}`,
  customize: [
    `chroot "$1" sh -euc '
      pg_dropcluster ${major} main
      old_uid=$(id -u postgres); old_gid=$(id -g postgres)
      groupdel tape
      groupmod -g 26 postgres
      usermod -u 26 -g 26 postgres
      find / -xdev -uid "$old_uid" -exec chown -h 26 {} +
      find / -xdev -gid "$old_gid" -exec chgrp -h 26 {} +
      test "$(id -u postgres):$(id -g postgres)" = 26:26
    '`,
  ],
  expect: [
    `usr/lib/postgresql/${major}/bin/postgres`,
    `usr/lib/postgresql/${major}/bin/initdb`,
    `usr/lib/postgresql/${major}/bin/pg_ctl`,
  ],
  config: {
    env: [`PATH=/usr/lib/postgresql/${major}/bin:${PATH}`, 'LANG=C.UTF-8'],
    cmd: ['postgres'],
    user: '26',
    workingDir: '/',
    exposedPorts: ['5432/tcp'],
  },
  title: `PostgreSQL ${major} for CloudNativePG`,
});

/** The default major's image (forky's PostgreSQL 18). */
export const postgresRecipe = postgresRecipeFor(DEFAULT_POSTGRES_MAJOR);

/**
 * PgBouncer for CloudNativePG's Poolers: CNPG execs `/usr/bin/pgbouncer` (Debian installs /usr/sbin/pgbouncer)
 * and runs the Pod as 998:996, given a `pgbouncer` user here.
 */
export const pgbouncerRecipe: DebianRecipe = pgbouncerRecipeFor(CNPG_VERSION);

export function pgbouncerRecipeFor(cnpg: CnpgVersion): DebianRecipe {
  return {
    kind: 'debian',
    // One cache entry per tag: the cache keeps one key per name, and an upgrade test needs two releases' tags.
    name: `pgbouncer-${PGBOUNCER_TAG[cnpg]}`,
    ref: pgbouncerRef(cnpg),
    suite: 'trixie',
    variant: 'essential',
    include: ['pgbouncer'],
    mainPackage: 'pgbouncer',
    customize: [
      `chroot "$1" sh -euc '
      ln -sf /usr/sbin/pgbouncer /usr/bin/pgbouncer
      if getent group 996 || getent passwd 998; then echo "uid 998 or gid 996 already taken" >&2; exit 1; fi
      groupadd --gid 996 pgbouncer
      useradd --uid 998 --gid 996 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pgbouncer
    '`,
    ],
    expect: ['usr/sbin/pgbouncer', 'usr/bin/pgbouncer'],
    config: {
      env: [`PATH=${PATH}`, 'LANG=C.UTF-8'],
      entrypoint: ['/usr/bin/pgbouncer'],
      cmd: ['/etc/pgbouncer/pgbouncer.ini'],
      user: '998:996',
      workingDir: '/',
      exposedPorts: ['5432/tcp'],
    },
    title: 'PgBouncer for CloudNativePG Poolers',
  };
}

/** The Dockerfile's build stage base: Node.js 20 and npm (trixie; bookworm's Node is 18), root, a shell. */
export const nodeBuildRecipe: DebianRecipe = {
  kind: 'debian',
  name: 'node-build',
  ref: NODE_BUILD_REF,
  suite: 'trixie',
  variant: 'essential',
  include: ['nodejs', 'npm', 'ca-certificates'],
  mainPackage: 'nodejs',
  customize: [],
  expect: ['usr/bin/node', 'usr/bin/npm', 'etc/ssl/certs/ca-certificates.crt'],
  config: { env: [`PATH=${PATH}`, 'LANG=C.UTF-8'], cmd: ['node'], workingDir: '/' },
  title: 'Node.js 20 build base',
};

/**
 * The Dockerfile's runtime base, in the manner of gcr.io/distroless/nodejs20-debian12:nonroot: Node.js and
 * the libraries it links, unpacked without a shell or package manager; node at /nodejs/bin/node (the
 * distroless path the ENTRYPOINT names); users root, nobody and nonroot (65532); the Mozilla CA bundle.
 */
export const nodeRuntimeRecipe: DebianRecipe = {
  kind: 'debian',
  name: 'nodejs-runtime',
  ref: NODE_RUNTIME_REF,
  suite: 'trixie',
  variant: 'extract',
  include: ['nodejs', 'base-files', 'netbase', 'tzdata', 'ca-certificates'],
  mainPackage: 'nodejs',
  customize: [
    `set -eu
    r="$1"
    mkdir -p "$r/nodejs/bin" && ln -sf /usr/bin/node "$r/nodejs/bin/node"
    printf '%s\\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \\
      'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$r/etc/passwd"
    printf '%s\\n' 'root:x:0:' 'nobody:x:65534:' 'tty:x:5:' 'staff:x:50:' 'nonroot:x:65532:' > "$r/etc/group"
    install -d -m 0700 -o 65532 -g 65532 "$r/home/nonroot"
    install -d -m 0700 "$r/root"
    install -d -m 1777 "$r/tmp"
    mkdir -p "$r/etc/ssl/certs"
    cat "$r"/usr/share/ca-certificates/mozilla/*.crt > "$r/etc/ssl/certs/ca-certificates.crt"
    ldconfig -r "$r"`,
  ],
  expect: ['usr/bin/node', 'nodejs/bin/node', 'etc/ssl/certs/ca-certificates.crt'],
  config: {
    env: [`PATH=${PATH}`, 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'],
    entrypoint: ['/nodejs/bin/node'],
    user: '65532',
    workingDir: '/home/nonroot',
  },
  title: 'Node.js 20 runtime base (distroless-like)',
};

/** catatonit, a static init, in pause mode (`-P`): the Pod sandbox's process. */
export const pauseRecipe = (catatonit: string): FilesRecipe => ({
  kind: 'files',
  name: 'pause',
  ref: PAUSE_REF,
  files: [{ path: 'usr/bin/catatonit', source: catatonit, mode: 0o755 }],
  symlinks: [{ path: 'pause', target: 'usr/bin/catatonit' }],
  config: { env: [`PATH=${PATH}`], entrypoint: ['/usr/bin/catatonit', '-P'], user: '65535:65535', workingDir: '/' },
  title: 'Pod sandbox (catatonit -P)',
});

/** CloudNativePG's operator image as upstream lays it out: /operator/manager_amd64 and /manager → it. */
export const cnpgOperatorRecipe = (manager: string, cnpg: CnpgVersion = CNPG_VERSION): FilesRecipe => ({
  kind: 'files',
  // One cache entry per version (the cache keeps one key per name): an upgrade test installs two.
  name: `cnpg-operator-${cnpg.slice(1)}`,
  ref: cnpgOperatorRef(cnpg),
  files: [{ path: 'operator/manager_amd64', source: manager, mode: 0o755 }],
  symlinks: [{ path: 'manager', target: 'operator/manager_amd64' }],
  config: { env: [`PATH=${PATH}`], entrypoint: ['/manager'], user: '65532:65532', workingDir: '/' },
  title: `CloudNativePG operator ${cnpg.slice(1)}`,
});
