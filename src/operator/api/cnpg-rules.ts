/**
 * What CloudNativePG refuses at admission in the fields pgfsm writes, kept as data: the CRDs' CEL rules (schema.ts)
 * and the merge check (domain/config.ts) both read these lists, so the early refusal and the late one can never
 * disagree. docs/cnpg-admission.md lists every rule of CNPG's webhooks and where pgfsm handles it.
 *
 * pgfsm supports CloudNativePG 1.28.2, 1.29.2 and 1.30.1 (docs/compatibility.md), and a list here holds what every
 * one of them accepts: a name one version refuses is refused for all. The lists are facts about CNPG (the names it
 * reserves), read from its sources: reserved roles in pkg/postgres/roles.go, fixed parameters in
 * pkg/postgres/configuration.go, PgBouncer parameters in internal/webhook/v1/pooler_webhook.go. Where the versions
 * differ, the comment on the list says how. When CNPG is upgraded, re-read them there.
 *
 * Beside them, a few inputs CNPG's webhook lets through that fail only on a node (a volume too small for
 * PostgreSQL, a resource no Pod can have, a role name PostgreSQL refuses or cuts short), refused just as early.
 */

/** CNPG supports PostgreSQL 13 and later. */
export const MIN_POSTGRES_MAJOR = 13;

/** CNPG refuses a major upgrade whose target is older than 16 (collation data it does not carry over). */
export const MIN_MAJOR_UPGRADE_TARGET = 16;

/** Role names CNPG keeps for itself: two exact names and two prefixes (the second is PostgreSQL's own). */
export const RESERVED_ROLE_NAMES = ['postgres', 'streaming_replica'] as const;
export const RESERVED_ROLE_PREFIXES = ['cnpg_', 'pg_'] as const;

export const isReservedRole = (name: string): boolean =>
  (RESERVED_ROLE_NAMES as readonly string[]).includes(name) ||
  RESERVED_ROLE_PREFIXES.some((prefix) => name.startsWith(prefix));

/**
 * Role names PostgreSQL itself refuses to create (`role name "public" is reserved`), which CNPG's webhook lets
 * through: CNPG then fails to create the role on every reconciliation of the running instance. PostgreSQL compares
 * the name as CNPG sends it, quoted, so only these exact spellings are refused: `"Public"` is a role like any other.
 */
export const POSTGRES_RESERVED_ROLE_NAMES = ['public', 'none'] as const;

/**
 * PostgreSQL cuts an identifier to NAMEDATALEN - 1 = 63 bytes (not characters): a longer role name creates a role
 * of the cut name, which CNPG never finds under the name it was given, so it tries to create it again and again.
 * Within this bound no two distinct names can be cut to the same role.
 */
export const MAX_ROLE_NAME_BYTES = 63;

export const isPostgresReservedRole = (name: string): boolean =>
  (POSTGRES_RESERVED_ROLE_NAMES as readonly string[]).includes(name);

/**
 * PostgreSQL parameters CNPG sets itself or blocks. CNPG lets one through only when its value equals the one CNPG
 * would write anyway, so setting it can never change anything: pgfsm refuses the key outright.
 * The same list in 1.28.2 and 1.29.2; 1.30 no longer fixes `ssl_ecdh_curve`, which stays refused here while 1.28
 * and 1.29 are supported.
 */
export const FIXED_PARAMETERS = [
  'allow_system_table_mods',
  'archive_cleanup_command',
  'archive_command',
  'archive_mode',
  'bonjour',
  'bonjour_name',
  'cluster_name',
  'config_file',
  'data_directory',
  'data_sync_retry',
  'event_source',
  'external_pid_file',
  'hba_file',
  'hot_standby',
  'ident_file',
  'jit_provider',
  'listen_addresses',
  'log_destination',
  'log_directory',
  'log_file_mode',
  'log_filename',
  'log_rotation_age',
  'log_rotation_size',
  'log_truncate_on_rotation',
  'logging_collector',
  'pg_failover_slots.primary_dsn',
  'pg_failover_slots.standby_slot_names',
  'port',
  'primary_conninfo',
  'primary_slot_name',
  'promote_trigger_file',
  'recovery_end_command',
  'recovery_min_apply_delay',
  'recovery_target',
  'recovery_target_action',
  'recovery_target_inclusive',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_timeline',
  'recovery_target_xid',
  'restart_after_crash',
  'restore_command',
  'shared_preload_libraries',
  'ssl',
  'ssl_ca_file',
  'ssl_cert_file',
  'ssl_crl_file',
  'ssl_dh_params_file',
  'ssl_ecdh_curve',
  'ssl_key_file',
  'ssl_passphrase_command',
  'ssl_passphrase_command_supports_reload',
  'ssl_prefer_server_ciphers',
  'stats_temp_directory',
  'synchronized_standby_slots',
  'synchronous_standby_names',
  'syslog_facility',
  'syslog_ident',
  'syslog_sequence_numbers',
  'syslog_split_messages',
  'temp_tablespaces',
  'unix_socket_directories',
  'unix_socket_group',
  'unix_socket_permissions',
] as const;

/**
 * `wal_level` values CNPG accepts for the clusters pgfsm writes. `minimal` needs WAL archiving off and a single
 * instance; pgfsm never turns archiving off (CNPG's default `archive_mode` is `on`), so `minimal` is always refused.
 */
export const WAL_LEVELS = ['replica', 'logical'] as const;

/** Parameters CNPG parses as PostgreSQL booleans, refusing anything else. */
export const BOOLEAN_PARAMETERS = ['hot_standby_feedback', 'sync_replication_slots', 'wal_log_hints'] as const;

/** PostgreSQL's boolean spellings (any unambiguous prefix of on/off/true/false/yes/no, and 1/0), lower case. */
export const TRUE_SPELLINGS = ['on', 'true', 'tru', 'tr', 't', 'yes', 'ye', 'y', '1'] as const;
export const FALSE_SPELLINGS = ['off', 'of', 'false', 'fals', 'fal', 'fa', 'f', 'no', 'n', '0'] as const;

/** Memory parameters CNPG reads as sizes, refusing a value it cannot parse. */
export const MEMORY_PARAMETERS = ['shared_buffers', 'min_wal_size', 'max_wal_size'] as const;

/**
 * A PostgreSQL size as CNPG parses it: digits and an optional unit B, kB, MB, GB or TB (a bare number means MB to
 * CNPG), optionally a fraction before a unit larger than bytes, spaces allowed before the unit.
 */
export const MEMORY_VALUE_PATTERN = '^[0-9]+ *(B|kB|MB|GB|TB)?$|^[0-9]+\\.[0-9]+ *(kB|MB|GB|TB)$';

/** What CNPG assumes for the WAL sizes when they are not set. */
export const WAL_SIZE_DEFAULTS = { min_wal_size: '80MB', max_wal_size: '1GB' } as const;

/** Parameter namespace of the pg_failover_slots extension: using it requires `hot_standby_feedback` on. */
export const FAILOVER_SLOTS_PREFIX = 'pg_failover_slots.';

/**
 * The only PgBouncer parameters CNPG lets a Pooler set; every other one is reserved or unknown to it. This is
 * 1.28.0's list, which every supported version accepts: 1.28.2 and 1.29.2 also allow `client_tls_ciphers`,
 * `client_tls13_ciphers` and `server_tls13_ciphers`, and 1.30 `auth_user` besides; pgfsm does not offer them yet.
 */
export const PGBOUNCER_PARAMETERS = [
  'application_name_add_host',
  'auth_type',
  'autodb_idle_timeout',
  'cancel_wait_timeout',
  'client_idle_timeout',
  'client_login_timeout',
  'client_tls_sslmode',
  'default_pool_size',
  'disable_pqexec',
  'dns_max_ttl',
  'dns_nxdomain_ttl',
  'idle_transaction_timeout',
  'ignore_startup_parameters',
  'listen_backlog',
  'log_connections',
  'log_disconnections',
  'log_pooler_errors',
  'log_stats',
  'max_client_conn',
  'max_db_connections',
  'max_packet_size',
  'max_prepared_statements',
  'max_user_connections',
  'min_pool_size',
  'pkt_buf',
  'query_timeout',
  'query_wait_timeout',
  'reserve_pool_size',
  'reserve_pool_timeout',
  'sbuf_loopcnt',
  'server_check_delay',
  'server_check_query',
  'server_connect_timeout',
  'server_fast_close',
  'server_idle_timeout',
  'server_lifetime',
  'server_login_retry',
  'server_reset_query',
  'server_reset_query_always',
  'server_round_robin',
  'server_tls_ciphers',
  'server_tls_protocols',
  'server_tls_sslmode',
  'stats_period',
  'suspend_timeout',
  'tcp_defer_accept',
  'tcp_keepalive',
  'tcp_keepcnt',
  'tcp_keepidle',
  'tcp_keepintvl',
  'tcp_socket_buffer',
  'tcp_user_timeout',
  'track_extra_parameters',
  'verbose',
] as const;

/**
 * A PostgreSQL parameter name as PostgreSQL's configuration file reads one: an identifier, or two joined by a dot
 * (an extension's parameter, such as pg_stat_statements.max). CloudNativePG writes each key unquoted into
 * postgresql.conf and checks none of this: a key such as "work_mem = '1MB'\nport" would set a parameter it fixes.
 */
export const PARAMETER_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)?$';
export const isParameterName = (key: string): boolean => new RegExp(PARAMETER_NAME_PATTERN).test(key);

/**
 * One line of a configuration file: no line break and no NUL. CloudNativePG copies parameter values into
 * postgresql.conf and pgbouncer.ini and pg_hba lines into pg_hba.conf without checking, so a line break would add a
 * line of the writer's choosing (a PgBouncer "auth_type = trust", a fixed PostgreSQL parameter) and a NUL cannot be
 * written at all. Tabs stay allowed: pg_hba.conf separates its fields with them.
 */
export const SINGLE_LINE_PATTERN = '^[^\\r\\n\\x00]*$';

/**
 * A reference such as `${podselector:name}` in a pg_hba line: CloudNativePG 1.29 and later expand it to the addresses
 * of the Pods a selector of the Cluster's `podSelectorRefs` picks, and refuse a line whose reference names no such
 * selector, names another kind, or is not the only one (`pkg/postgres/hba`, `ValidateLine`). pgfsm writes no
 * `podSelectorRefs`, so any such reference is refused by 1.29 and 1.30; 1.28 copies the line into pg_hba.conf as it
 * is, where PostgreSQL refuses the address at start-up.
 */
export const PG_HBA_REFERENCE_PATTERN = '[$][{][^:]+:[^}]+[}]';
const PG_HBA_REFERENCE = new RegExp(PG_HBA_REFERENCE_PATTERN);
export const hasPgHbaReference = (line: string): boolean => PG_HBA_REFERENCE.test(line);
export const PG_HBA_REFERENCE_MESSAGE =
  'a pg_hba line must not hold a \u0024{kind:name} reference: CloudNativePG 1.29 and later expand it only from the ' +
  "Cluster's podSelectorRefs, which pgfsm does not set (and 1.28 writes it into pg_hba.conf as it is); write the " +
  'addresses instead';

/** A role name without control characters, which no client can type and which break the files CNPG writes. */
export const ROLE_NAME_PATTERN = '^[^\\x00-\\x1f\\x7f]*$';

/**
 * The smallest volume a cluster may ask for. CNPG checks only that the size parses, so `0`, `1m` (a thousandth of a
 * byte) or `100k` reach the volume claim and PostgreSQL fails on the node. A fresh data directory takes about 40 MiB,
 * and the same volume holds the WAL (pgfsm writes no separate WAL volume), of which CNPG keeps 512 MB by default
 * (`wal_keep_size`) beside PostgreSQL's own `min_wal_size` of 80 MB. 1Gi is the round size above that, and the
 * smallest CNPG's own examples use.
 */
export const MIN_STORAGE = '1Gi';

/**
 * The resources a PostgreSQL pod can be given: cpu, memory, ephemeral-storage, and huge pages of one page size,
 * named as the kubelet names them (`hugepages-2Mi`, `hugepages-1Gi`: a power of two below 1024 of Ki, Mi or Gi).
 * Any other standard-looking name (`storage`, `gpu`) is refused by the API server only when CNPG creates the Pod;
 * an extended resource (`vendor.example/device`) is of no use to PostgreSQL and leaves every instance Pending on
 * nodes that do not offer it; `hugepages-2048Ki` names a resource no node offers.
 */
export const RESOURCE_NAME_PATTERN =
  '^(cpu|memory|ephemeral-storage|hugepages-(1|2|4|8|16|32|64|128|256|512)(Ki|Mi|Gi))$';
const RESOURCE_NAME = new RegExp(RESOURCE_NAME_PATTERN);
export const isPodResourceName = (name: string): boolean => RESOURCE_NAME.test(name);
/** What a refusal of another resource name says, at admission and in the Stalled condition alike. */
export const POD_RESOURCES_HINT =
  'only cpu, memory, ephemeral-storage and hugepages-<page size> (e.g. hugepages-2Mi) can be set';

/** Resources whose request CNPG refuses above the limit (a zero on either side is not compared). */
export const COMPARED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;
export const HUGEPAGES_PREFIX = 'hugepages-';

/** CNPG derives Service names from the Cluster's name, so it must be a DNS-1035 label. */
export const DNS_1035_LABEL = '^[a-z]([-a-z0-9]*[a-z0-9])?$';

/**
 * Kubernetes names Secrets (and most objects) by DNS-1123 subdomains: dot-separated labels of lower-case letters,
 * digits and '-', each starting and ending with a letter or digit, at most 253 characters in all. A role's
 * passwordSecretRef that is none can name no Secret; one with '/' would even turn the GET into a subresource request.
 */
export const DNS_1123_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const isDns1123Subdomain = (name: string): boolean =>
  name.length <= 253 && new RegExp(DNS_1123_SUBDOMAIN).test(name);

/**
 * Size bounds, so that no object pgfsm writes can outgrow the API server's limits (about 1.5 MiB per object in
 * etcd, 256 KiB for all annotations together). Worst case, the CNPG Cluster carries the class's and the cluster's
 * parameters merged (2 × 256 × (128 + 1024) bytes ≈ 576 KiB), one pg_hba list (256 × 1024 = 256 KiB) and the
 * roles, and the scheduling fields at their largest (about 40 KiB); the owned-keys annotation lists at most 512 names
 * of 128 characters (≈ 65 KiB).
 * test/unit/crds.test.ts builds that worst case and measures it.
 */
export const LIMITS = {
  parameters: 256,
  parameterName: 128,
  parameterValue: 1024,
  poolerParameters: PGBOUNCER_PARAMETERS.length,
  pgHbaLines: 256,
  pgHbaLine: 1024,
  managedRoles: 128,
  resources: 16,
  // Scheduling (affinity, topologySpreadConstraints): generous for real use, small beside the parameters.
  tolerations: 16,
  nodeSelector: 16,
  topologySpreadConstraints: 4,
  matchLabels: 8,
  matchExpressions: 4,
  matchValues: 8,
  imageName: 512,
} as const;

/** The etcd object limit, and the API server's limit on all annotations of one object together. */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
export const MAX_ANNOTATION_BYTES = 256 * 1024;

const MEMORY_UNITS: Record<string, number> = { '': 2 ** 20, B: 1, kB: 2 ** 10, MB: 2 ** 20, GB: 2 ** 30, TB: 2 ** 40 };

/** A PostgreSQL size in bytes as CNPG reads it (a bare number is MB), or undefined when CNPG would refuse it. */
export function pgMemoryBytes(value: string): number | undefined {
  if (!new RegExp(MEMORY_VALUE_PATTERN).test(value)) return undefined;
  const match = /^([0-9.]+) *([A-Za-z]*)$/.exec(value);
  const unit = MEMORY_UNITS[match?.[2] ?? 'x'];
  return match && unit !== undefined ? Number(match[1]) * unit : undefined;
}

/** A PostgreSQL boolean, or undefined when the spelling is not one. */
export function pgBoolean(value: string): boolean | undefined {
  const lower = value.toLowerCase();
  if ((TRUE_SPELLINGS as readonly string[]).includes(lower)) return true;
  if ((FALSE_SPELLINGS as readonly string[]).includes(lower)) return false;
  return undefined;
}

/**
 * A pinned PostgreSQL image (`imageName`) as CNPG reads it (`GetPostgresqlMajorVersion`: the major version is the
 * number the tag starts with, `version.FromTag`). CNPG refuses the tag `latest`, a digest alone and a tag that does
 * not start with a version; this pattern accepts only `[registry[:port]/]path:<major>[<. _ or -><rest>][@sha256:<digest>]`,
 * e.g. `ghcr.io/cloudnative-pg/postgresql:17.2-standard-bookworm` (stricter than CNPG: a major of at most four digits,
 * followed by a separator, so that `17beta` or a date-like tag cannot pass for a version).
 */
export const IMAGE_NAME_PATTERN =
  '^([a-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*:[0-9]{1,4}([._-][A-Za-z0-9._-]*)?(@sha256:[a-f0-9]{64})?$';
/** What a refused imageName is told, at admission and in the Stalled condition alike. */
export const IMAGE_NAME_HINT =
  'imageName must be an image with a tag that starts with the PostgreSQL version, e.g. ghcr.io/cloudnative-pg/postgresql:17.2 (CloudNativePG reads the major version from the tag; latest and a digest alone are refused)';
/** The part of an image name CNPG reads the version from: the tag, up to a digest. */
const IMAGE_TAG = /:([0-9]+)(\.([0-9]+))?[A-Za-z0-9._-]*(@sha256:[a-f0-9]{64})?$/;
export const isImageName = (image: string): boolean =>
  image.length <= LIMITS.imageName && new RegExp(IMAGE_NAME_PATTERN).test(image);

/** The version an image's tag names, `major` or `major.minor` (e.g. `17.2` of `…:17.2-standard-bookworm`). */
export function imageVersion(image: string): string | undefined {
  const tag = IMAGE_TAG.exec(image.slice(image.lastIndexOf('/') + 1));
  if (!tag) return undefined;
  return tag[3] === undefined ? tag[1] : `${tag[1]}.${tag[3]}`;
}

/**
 * Kubernetes label names (a toleration's key, a nodeSelector's or a labelSelector's key, a topologyKey): an optional
 * DNS-1123 subdomain prefix and '/', then a name of at most 63 letters, digits, '-', '_' and '.', starting and ending
 * with a letter or digit. CNPG checks a toleration's key this way (`validateTolerations`); the others fail only when
 * CNPG creates the Pod, which the API server refuses.
 */
export const LABEL_NAME_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
export const isLabelName = (name: string): boolean => name.length <= 317 && new RegExp(LABEL_NAME_PATTERN).test(name);
/** Kubernetes label values: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric. */
export const LABEL_VALUE_PATTERN = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';

/** The taint effects a toleration may name (CNPG's `validateTaintEffect`, Kubernetes' own list). */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
/** A toleration's operators; an empty one means Equal. */
export const TOLERATION_OPERATORS = ['Equal', 'Exists'] as const;
/** CNPG's pod anti-affinity types (`validateAntiAffinity`); empty means preferred. */
export const POD_ANTI_AFFINITY_TYPES = ['preferred', 'required'] as const;
/** The label CNPG puts on every instance Pod, naming its Cluster: what a topology spread selects by default. */
export const CNPG_CLUSTER_LABEL = 'cnpg.io/cluster';
