/**
 * Where each kind lives in the API: one table for the informers that watch them and the ports that read and
 * write them, and the one function that turns a kind and a name into a request path. No client-node here:
 * the in-memory tools reuse the informers' shapes without loading the library.
 */
import { BARMAN_API_VERSION } from '../api/backup-rules.ts';
import { API_VERSION } from '../api/schema.ts';
import { CNPG_API_VERSION } from '../domain/objects.ts';
import type { WatchSources } from '../driver/sources.ts';

export interface ResourceType {
  /** `v1`, `apps/v1`, `pgfsm.io/v1alpha1`, … */
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** The kinds the operator watches, which are also the kinds its ports read and write. */
export const RESOURCES = {
  clusters: { apiVersion: API_VERSION, kind: 'PostgresCluster', plural: 'postgresclusters', namespaced: true },
  classes: {
    apiVersion: API_VERSION,
    kind: 'PostgresClusterClass',
    plural: 'postgresclusterclasses',
    namespaced: false,
  },
  cnpgClusters: { apiVersion: CNPG_API_VERSION, kind: 'Cluster', plural: 'clusters', namespaced: true },
  poolers: { apiVersion: CNPG_API_VERSION, kind: 'Pooler', plural: 'poolers', namespaced: true },
  secrets: { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  configMaps: { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
  deployments: { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
  databases: { apiVersion: API_VERSION, kind: 'PostgresDatabase', plural: 'postgresdatabases', namespaced: true },
  cnpgDatabases: { apiVersion: CNPG_API_VERSION, kind: 'Database', plural: 'databases', namespaced: true },
} satisfies Record<keyof WatchSources, ResourceType>;

/**
 * The backup kinds (issue 36), read and written by the ports but not watched yet: a pass reads them from the API.
 * Apart from RESOURCES because the plugin's ObjectStore CRD may not be installed, and an informer on a kind the
 * API server does not serve would never sync (the operator's readiness waits on every informer).
 */
export const BACKUP_RESOURCES = {
  objectStores: { apiVersion: BARMAN_API_VERSION, kind: 'ObjectStore', plural: 'objectstores', namespaced: true },
  scheduledBackups: {
    apiVersion: CNPG_API_VERSION,
    kind: 'ScheduledBackup',
    plural: 'scheduledbackups',
    namespaced: true,
  },
  backups: { apiVersion: CNPG_API_VERSION, kind: 'Backup', plural: 'backups', namespaced: true },
} satisfies Record<string, ResourceType>;

/**
 * `/api/v1` or `/apis/<group>/<version>`, then `[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]`, names
 * escaped. Without a name: the collection (a list, a watch, a create).
 */
export function resourcePath(
  type: Pick<ResourceType, 'apiVersion' | 'plural'>,
  at: { namespace?: string | undefined; name?: string | undefined } = {},
  subresource?: string,
): string {
  const root = type.apiVersion.includes('/') ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  const namespace = at.namespace ? `/namespaces/${encodeURIComponent(at.namespace)}` : '';
  const name = at.name ? `/${encodeURIComponent(at.name)}` : '';
  return `${root}${namespace}/${type.plural}${name}${name && subresource ? `/${subresource}` : ''}`;
}
