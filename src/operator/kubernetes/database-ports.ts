/**
 * The PostgresDatabase's ports over a real Kubernetes API: the cluster ports it shares (the PostgresCluster,
 * its CNPG Cluster and endpoints ConfigMap, the Events, the clock) and its own four, over one RestClient.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { type DatabasePorts, type PrivilegesPort, sharedWithClusters } from '../core/database/ports.ts';
import type { Ports } from '../core/ports.ts';
import { KubernetesCnpgDatabasePort, KubernetesConnectionSecretPort } from './database-children.ts';
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
  return {
    ...sharedWithClusters(clusterPorts),
    cnpgDatabases: new KubernetesCnpgDatabasePort(rest),
    connectionSecrets: new KubernetesConnectionSecretPort(rest),
    privileges:
      options.privileges ?? new KubernetesPrivilegesPort(rest, options.hostOf ? { hostOf: options.hostOf } : {}),
  };
}
