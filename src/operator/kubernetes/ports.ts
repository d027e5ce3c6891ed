/**
 * The ports over a real Kubernetes API (requests by rest.ts, authenticated by client-node 1.4.0's
 * KubeConfig), with the semantics of the in-memory adapter: children are written by server-side apply, the
 * PostgresCluster by conditional merge patches, and a Secret is only ever seen as its key names.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock, Ports } from '../core/ports.ts';
import {
  KubernetesCnpgClusterPort,
  KubernetesConfigMapPort,
  KubernetesPoolerPort,
  KubernetesSecretPort,
  kubernetesBackupPorts,
} from './children.ts';
import { KubernetesEventSink } from './events.ts';
import { objectClient } from './objects.ts';
import { classPort, postgresClusterPort } from './postgres-cluster.ts';
import { postgresDatabasePort } from './postgres-database.ts';
import { RESOURCES } from './resources.ts';
import { RestClient } from './rest.ts';

export interface KubernetesPortsOptions {
  clock?: Clock;
  /** `reportingController` of the Events; default `pgfsm`. */
  reportingController?: string;
  /** `reportingInstance` of the Events; default `<controller>-<hostname>`. */
  reportingInstance?: string;
  /**
   * The namespaces the operator watches (`--namespace`), where the class port's re-check lists PostgresClusters;
   * all namespaces when absent.
   */
  namespaces?: readonly string[];
}

const systemClock: Clock = { now: () => Date.now() };

export function kubernetesPorts(kc: KubeConfig, options: KubernetesPortsOptions = {}): Ports {
  const clock = options.clock ?? systemClock;
  const rest = new RestClient(kc);
  return {
    clusters: postgresClusterPort(rest),
    classes: classPort(rest, options.namespaces),
    secrets: new KubernetesSecretPort(rest),
    cnpgClusters: new KubernetesCnpgClusterPort(objectClient(rest, RESOURCES.cnpgClusters)),
    poolers: new KubernetesPoolerPort(objectClient(rest, RESOURCES.poolers), rest),
    configMaps: new KubernetesConfigMapPort(objectClient(rest, RESOURCES.configMaps)),
    databases: postgresDatabasePort(rest),
    backupObjects: kubernetesBackupPorts(rest),
    events: new KubernetesEventSink(kc, {
      clock,
      ...(options.reportingController ? { reportingController: options.reportingController } : {}),
      ...(options.reportingInstance ? { reportingInstance: options.reportingInstance } : {}),
    }),
    clock,
  };
}
