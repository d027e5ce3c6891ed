/**
 * What the Barman Cloud Plugin (v0.15.0) and the barman-cloud tools its sidecar runs accept in the backup fields
 * pgfsm writes, kept as data: the CRD's rules (backup-schema.ts) and the merge check (domain/backup/policy.ts)
 * read the same values, as cnpg-rules.ts does for CloudNativePG's Cluster.
 */

/** The plugin's name, as CloudNativePG knows it in `spec.plugins`, `externalClusters[].plugin` and Backups. */
export const BARMAN_PLUGIN = 'barman-cloud.cloudnative-pg.io';

/** The plugin's API group and version, of its ObjectStore. */
export const BARMAN_API_VERSION = 'barmancloud.cnpg.io/v1';

/**
 * An S3 destination: `s3://<bucket>` and an optional prefix. Only S3 (and S3-compatible stores through
 * endpointURL): Azure and Google have other credentials, which pgfsm does not offer yet. The prefix keeps to
 * characters S3 keys take without escaping.
 */
export const DESTINATION_PATH_PATTERN = '^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9._~+=@%-]+)*/?$';

/** An http or https URL of an S3-compatible endpoint (barman passes it to boto3 as `--endpoint-url`). */
export const ENDPOINT_URL_PATTERN = '^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~+=@%/-]*)?$';

/** A recovery window as the plugin's `retentionPolicy` takes it: days, weeks or months. */
export const RETENTION_PATTERN = '^[1-9][0-9]*[dwm]$';

/** A key of a Secret, as Kubernetes allows it. */
export const SECRET_KEY_PATTERN = '^[-._a-zA-Z0-9]+$';

/** The credentials keys the plugin's documentation uses; a class may name others. */
export const DEFAULT_ACCESS_KEY_ID_KEY = 'ACCESS_KEY_ID';
export const DEFAULT_SECRET_ACCESS_KEY_KEY = 'ACCESS_SECRET_KEY';

/**
 * WAL compressions barman-cloud-wal-archive 3.13 takes (Debian trixie's barman-cli-cloud), which the plugin's
 * enum allows too.
 */
export const WAL_COMPRESSIONS = ['bzip2', 'gzip', 'lz4', 'snappy', 'xz', 'zstd'] as const;

/**
 * Base-backup compressions of barman-cloud-backup 3.13: the plugin's enum also has lz4, which the plugin passes
 * since v0.13.0 but barman 3.13 refuses for base backups (only 3.19 and later take it), so a backup would fail.
 */
export const DATA_COMPRESSIONS = ['bzip2', 'gzip', 'snappy'] as const;

/**
 * A point in time PostgreSQL can recover to, in RFC 3339 with an explicit zone. CloudNativePG takes a bare
 * `YYYY-MM-DDTHH:MM:SS` as UTC, which is not what a person in another zone meant, so pgfsm refuses it.
 */
export const TARGET_TIME_PATTERN =
  '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$';

/** Whether a time matching TARGET_TIME_PATTERN is also a day of the calendar (no 30 February). */
export function isCalendarTime(time: string): boolean {
  if (!new RegExp(TARGET_TIME_PATTERN).test(time)) return false;
  const [year, month, day] = time.slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * The archive name (barman's server name) of a cluster that no longer exists: what pgfsm recorded in its
 * `status.backup.serverName`, or the name another tool archived under. A DNS label, as pgfsm's own are.
 */
export const SERVER_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/**
 * The annotation that asks for a backup now; its value is a token (e.g. `$(date +%s)`), and a token the status does
 * not record yet asks for one backup.
 */
export const BACKUP_NOW_ANNOTATION = 'pgfsm.io/backup-now';

/** A token: short and plain, as it is echoed in the status and hashed into a Backup's name. */
export const BACKUP_NOW_TOKEN_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:+-]{0,62}$';
