/**
 * The Barman Cloud Plugin's image (issue 36): one image for both of its parts, so that they can never be of two
 * versions (a v0.5.0 sidecar under a v0.6.0 plugin broke restores upstream). The plugin's Deployment runs
 * `/manager operator`; CloudNativePG's instance Pods get the same image as the sidecar that runs `/manager instance`
 * and `/manager restore`, which call barman-cloud's commands. Upstream builds barman 3.20 into a virtualenv on a
 * distroless base; here Debian trixie's `barman-cli-cloud` (barman 3.13.3, boto3 from Debian) stands in, made like
 * the node's other images (mmdebstrap, no registry).
 *
 * barman 3.13 can compress base backups with gzip, bzip2 and snappy only if their Python modules are present; the
 * image carries none of the optional ones (lz4, snappy, zstandard), so stores must ask for gzip or bzip2.
 */
import { BARMAN_CLOUD_VERSION } from '../../control-plane/build.ts';
import type { DebianRecipe } from './recipes.ts';

/** A name of our own: the content is not upstream's image, only its binary. */
export const BARMAN_CLOUD_REF = `localhost/pgfsm/plugin-barman-cloud:${BARMAN_CLOUD_VERSION}`;

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The barman-cloud commands the sidecar runs by name (barman-cloud v0.6.0, the Go library the plugin uses). */
export const BARMAN_CLOUD_COMMANDS = [
  'barman-cloud-wal-archive',
  'barman-cloud-wal-restore',
  'barman-cloud-backup',
  'barman-cloud-backup-list',
  'barman-cloud-backup-show',
  'barman-cloud-backup-delete',
  'barman-cloud-restore',
  'barman-cloud-check-wal-archive',
];

/**
 * `manager` is the plugin's binary (control-plane/build.ts builds it) and `sha256` its hash: written into the hook
 * so that the recipe's text, and with it the cache key, changes with the binary's content, and checked there.
 */
export const barmanCloudRecipe = (manager: string, sha256: string): DebianRecipe => ({
  kind: 'debian',
  name: 'plugin-barman-cloud',
  ref: BARMAN_CLOUD_REF,
  suite: 'trixie',
  variant: 'essential',
  include: ['barman-cli-cloud', 'ca-certificates'],
  mainPackage: 'barman-cli-cloud',
  customize: [
    `set -eu
    install -m 0755 '${manager}' "$1/manager"
    echo '${sha256}  '"$1/manager" | sha256sum --check --quiet -`,
  ],
  expect: ['manager', 'etc/ssl/certs/ca-certificates.crt', ...BARMAN_CLOUD_COMMANDS.map((c) => `usr/bin/${c}`)],
  config: {
    env: [`PATH=${PATH}`, 'LANG=C.UTF-8'],
    entrypoint: ['/manager'],
    // The sidecar's user (PostgreSQL's, as CloudNativePG runs it); the Deployment sets its own.
    user: '26:26',
    workingDir: '/',
  },
  title: `CloudNativePG Barman Cloud Plugin ${BARMAN_CLOUD_VERSION} and barman-cloud (Debian)`,
});
