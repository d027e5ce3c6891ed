/**
 * The ports over a real Kubernetes API (client-node 1.4.0), with the semantics of the in-memory adapter:
 * children are written by server-side apply, the PostgresCluster by conditional merge patches, and a
 * Secret is only ever seen as its key names.
 */
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { Clock, Ports } from '../core/ports.ts';
import { CNPG_API_VERSION } from '../domain/objects.ts';
import {
  KubernetesCnpgClusterPort,
  KubernetesConfigMapPort,
  KubernetesPoolerPort,
  KubernetesSecretPort,
} from './children.ts';
import { KubernetesEventSink } from './events.ts';
import { configMapClient, customObjectClient } from './objects.ts';
import { classPort, postgresClusterPort } from './postgres-cluster.ts';

export interface KubernetesPortsOptions {
  clock?: Clock;
  /** `reportingController` of the Events; default `pgfsm`. */
  reportingController?: string;
  /** `reportingInstance` of the Events; default `<controller>-<hostname>`. */
  reportingInstance?: string;
}

const [CNPG_GROUP = 'postgresql.cnpg.io', CNPG_VERSION = 'v1'] = CNPG_API_VERSION.split('/');
const cnpgKind = (kind: string, plural: string) => ({ group: CNPG_GROUP, version: CNPG_VERSION, plural, kind });

const systemClock: Clock = { now: () => Date.now() };

export function kubernetesPorts(kc: KubeConfig, options: KubernetesPortsOptions = {}): Ports {
  const clock = options.clock ?? systemClock;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  return {
    clusters: postgresClusterPort(custom),
    classes: classPort(custom),
    secrets: new KubernetesSecretPort(core),
    cnpgClusters: new KubernetesCnpgClusterPort(customObjectClient(custom, cnpgKind('Cluster', 'clusters'))),
    poolers: new KubernetesPoolerPort(customObjectClient(custom, cnpgKind('Pooler', 'poolers')), apps),
    configMaps: new KubernetesConfigMapPort(configMapClient(core)),
    events: new KubernetesEventSink(kc, {
      clock,
      ...(options.reportingController ? { reportingController: options.reportingController } : {}),
      ...(options.reportingInstance ? { reportingInstance: options.reportingInstance } : {}),
    }),
    clock,
  };
}
