/**
 * The backup and restore parts of the pgfsm API (issue 36): the class's backup policy, a cluster's overrides,
 * its restore, and what the status records. Kept apart from schema.ts, which composes them into the kinds.
 * docs/design/backups-api.md says why the fields are shaped so.
 */
import { type Static, Type } from '@sinclair/typebox';
import {
  DATA_COMPRESSIONS,
  DEFAULT_ACCESS_KEY_ID_KEY,
  DEFAULT_SECRET_ACCESS_KEY_KEY,
  DESTINATION_PATH_PATTERN,
  ENDPOINT_URL_PATTERN,
  RETENTION_PATTERN,
  SECRET_KEY_PATTERN,
  SERVER_NAME_PATTERN,
  TARGET_TIME_PATTERN,
  WAL_COMPRESSIONS,
} from './backup-rules.ts';
import { DNS_1035_LABEL, DNS_1123_SUBDOMAIN } from './cnpg-rules.ts';
import { CRON_HINT, CRON_PATTERN, MAX_CRON_LENGTH } from './cron.ts';
import { cel } from './schema-parts.ts';

const SecretName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: DNS_1123_SUBDOMAIN, description });
const SecretKey = (description: string, fallback?: string) =>
  Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: SECRET_KEY_PATTERN,
    description,
    ...(fallback ? { default: fallback } : {}),
  });

/** The schedule, judged by CEL rather than `pattern` so that the refusal says what a 5-field cron is. */
export const Schedule = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_CRON_LENGTH,
    description,
    'x-kubernetes-validations': [cel(`self.matches(r'${CRON_PATTERN}')`, `schedule must be ${CRON_HINT}`)],
  });

export const Retention = (description: string) =>
  Type.String({ maxLength: 16, pattern: RETENTION_PATTERN, description });

const SCHEDULE =
  'When base backups run (a CNPG ScheduledBackup), as a 5-field cron in UTC: minute hour day-of-month month ' +
  'day-of-week, e.g. "30 2 * * *". pgfsm adds the seconds field CloudNativePG wants';
const RETENTION =
  'How long backups and WAL are kept, as a recovery window: a number and d (days), w (weeks) or m (months), e.g. 7d. ' +
  "The plugin's sidecar prunes older backups while the cluster runs";

export const ObjectStorePolicy = Type.Object(
  {
    destinationPath: Type.String({
      maxLength: 1024,
      pattern: DESTINATION_PATH_PATTERN,
      description:
        'The bucket and an optional prefix, e.g. s3://pg-backups/prod. Each cluster archives under ' +
        '<destinationPath>/<namespace>/<cluster name>-<first 8 characters of its uid>, so that no two clusters ' +
        'ever write into one archive',
    }),
    endpointURL: Type.Optional(
      Type.String({
        maxLength: 1024,
        pattern: ENDPOINT_URL_PATTERN,
        description: 'The URL of an S3-compatible store (left out: AWS S3 itself), e.g. http://s3.storage:7070',
      }),
    ),
    endpointCA: Type.Optional(
      Type.Object(
        {
          secretName: SecretName("The Secret, in each cluster's namespace"),
          key: SecretKey('The key holding the PEM bundle'),
        },
        { description: "A Secret key holding the CA bundle that signs the endpoint's certificate" },
      ),
    ),
    credentials: Type.Object(
      {
        secretName: SecretName(
          "The Secret holding the store's credentials. It is read in each cluster's own namespace, never copied " +
            'across namespaces: every namespace whose clusters are backed up needs one of this name (and may hold ' +
            'credentials limited to its own prefix)',
        ),
        accessKeyIdKey: Type.Optional(SecretKey('The key holding the access key id', DEFAULT_ACCESS_KEY_ID_KEY)),
        secretAccessKeyKey: Type.Optional(
          SecretKey('The key holding the secret access key', DEFAULT_SECRET_ACCESS_KEY_KEY),
        ),
        regionKey: Type.Optional(SecretKey('The key holding the region, when the store needs one')),
      },
      { description: 'S3 credentials: a Secret and its keys (their values never reach the status, events or logs)' },
    ),
  },
  { description: 'The S3 object store every cluster of the class archives to (a Barman Cloud Plugin ObjectStore)' },
);

export const ClassBackup = Type.Object(
  {
    objectStore: ObjectStorePolicy,
    schedule: Schedule(SCHEDULE),
    retention: Retention(RETENTION),
    walCompression: Type.Optional(
      Type.Union(
        WAL_COMPRESSIONS.map((c) => Type.Literal(c)),
        { description: 'How archived WAL is compressed; left out: not compressed' },
      ),
    ),
    dataCompression: Type.Optional(
      Type.Union(
        DATA_COMPRESSIONS.map((c) => Type.Literal(c)),
        {
          description: 'How base backups are compressed (barman 3.13 takes no lz4 for them); left out: not compressed',
        },
      ),
    ),
  },
  {
    description:
      'The backup policy of every cluster of the class: continuous WAL archiving to the object store and ' +
      "scheduled base backups, with no line in the clusters' own specs. A cluster may change the schedule or the " +
      'retention, or switch backups off (its spec.backup)',
  },
);

export const ClusterBackup = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        description:
          'false: no archiving and no backups for this cluster. Left out: on when the class has a backup policy. true needs one',
      }),
    ),
    schedule: Type.Optional(Schedule(`${SCHEDULE}. Left out: the class's`)),
    retention: Type.Optional(Retention(`${RETENTION}. Left out: the class's`)),
  },
  {
    description: "This cluster's backups, over its class's backup policy",
    'x-kubernetes-validations': [
      cel(
        '!has(self.enabled) || self.enabled || (!has(self.schedule) && !has(self.retention))',
        'backup.schedule and backup.retention have no effect when backup.enabled is false: remove them',
      ),
    ],
  },
);

export const Restore = Type.Object(
  {
    source: Type.Object(
      {
        cluster: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 63,
            pattern: DNS_1035_LABEL,
            description: 'A PostgresCluster of this namespace whose archive is read (it must have a completed backup)',
          }),
        ),
        serverName: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 63,
            pattern: SERVER_NAME_PATTERN,
            description:
              'The archive of a cluster that no longer exists: the status.backup.serverName it had, in this ' +
              "namespace's folder of the class's store",
          }),
        ),
      },
      {
        description: 'Whose archive the cluster starts from: exactly one of cluster and serverName',
        'x-kubernetes-validations': [
          cel(
            'has(self.cluster) != has(self.serverName)',
            'restore.source must name exactly one of cluster and serverName',
          ),
        ],
      },
    ),
    targetTime: Type.Optional(
      Type.String({
        maxLength: 40,
        description:
          'Recover to this point in time, RFC 3339 with a zone (e.g. 2026-11-20T10:15:30.123456+01:00); left out: ' +
          'to the end of the archive. It must be after the end of a completed base backup',
        'x-kubernetes-validations': [
          cel(
            `self.matches(r'${TARGET_TIME_PATTERN}')`,
            'restore.targetTime must be an RFC 3339 time with a zone, e.g. 2026-11-20T10:15:30Z or ' +
              '2026-11-20T11:15:30+01:00 (a time without a zone would be read as UTC)',
          ),
        ],
      }),
    ),
  },
  {
    description:
      "Start this new cluster from another cluster's backups (its archive in the class's object store) instead of " +
      'an empty database. Set when the cluster is created; it cannot be added, changed nor removed afterwards. ' +
      'The cluster then archives under a name of its own, never into the source',
  },
);

const Time = (description: string) => Type.String({ format: 'date-time', description });

export const BackupStatus = Type.Object(
  {
    serverName: Type.String({
      description:
        "The archive's name (barman's server name): what a restore names (restore.source.serverName) once this " +
        'cluster is gone',
    }),
    destinationPath: Type.String({ description: "Where the archive's folder is, without credentials" }),
    objectStore: Type.String({ description: 'The Barman Cloud Plugin ObjectStore of the archive' }),
    firstRecoverabilityPoint: Type.Optional(Time('The earliest time a restore can reach, as the plugin reports it')),
    lastSuccessfulBackupTime: Type.Optional(Time('When the last base backup completed')),
    lastFailedBackupTime: Type.Optional(Time('When the last base backup failed')),
    lastRequest: Type.Optional(
      Type.String({ description: 'The last pgfsm.io/backup-now token pgfsm acted on (a new token asks again)' }),
    ),
    lastRequestBackup: Type.Optional(Type.String({ description: 'The CNPG Backup that token asked for' })),
  },
  { description: "This cluster's archive and backups" },
);

export const RestoreStatus = Type.Object(
  {
    serverName: Type.String({ description: 'The archive the cluster was restored from' }),
    targetTime: Type.Optional(Type.String({ description: 'The point in time it was restored to' })),
  },
  { description: 'Where this cluster came from, when it was restored from backups' },
);

export type ObjectStorePolicy = Static<typeof ObjectStorePolicy>;
export type ClassBackup = Static<typeof ClassBackup>;
export type ClusterBackup = Static<typeof ClusterBackup>;
export type Restore = Static<typeof Restore>;
export type BackupStatus = Static<typeof BackupStatus>;
export type RestoreStatus = Static<typeof RestoreStatus>;
