/**
 * The PostgresDatabase's ports over a real Kubernetes API: the cluster ports it shares (the PostgresCluster,
 * its CNPG Cluster and endpoints ConfigMap, the Events, the clock) and its own four, over one RestClient.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { DatabasePorts, PrivilegesPort } from '../core/database/ports.ts';
import type { Ports } from '../core/ports.ts';
import { KubernetesCnpgDatabasePort, KubernetesConnectionSecretPort } from './database-children.ts';
import { postgresDatabasePort } from './postgres-database.ts';
import { type HostOf, KubernetesPrivilegesPort } from './privileges.ts';
import { RestClient } from './rest.ts';

export interface KubernetesDatabasePortsOptions {
  /** Replaces the grants over SQL altogether (tests). */
  privileges?: PrivilegesPort;
  /** Where the grants connect; default the cluster's `-rw` Service (privileges.ts). */
  hostOf?: HostOf;
}

export function kubernetesDatabasePorts(
  kc: KubeConfig,
  clusterPorts: Ports,
  options: KubernetesDatabasePortsOptions = {},
): DatabasePorts {
  const rest = new RestClient(kc);
  const { clusters, cnpgClusters, configMaps, events, clock } = clusterPorts;
  return {
    clusters,
    cnpgClusters,
    configMaps,
    events,
    clock,
    databases: postgresDatabasePort(rest),
    cnpgDatabases: new KubernetesCnpgDatabasePort(rest),
    connectionSecrets: new KubernetesConnectionSecretPort(rest),
    privileges:
      options.privileges ?? new KubernetesPrivilegesPort(rest, options.hostOf ? { hostOf: options.hostOf } : {}),
  };
}
