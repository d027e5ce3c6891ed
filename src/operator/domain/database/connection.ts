/**
 * Where applications connect, and the connection Secret of each role. The endpoints are the ones the cluster
 * has published in its endpoints ConfigMap (components/configmap.ts): the pooler's while both Poolers serve,
 * the CNPG Services otherwise. So a Secret follows the cluster: turning the pooler on or off changes what is
 * published, and each Secret follows in the database's next pass. A failover or switchover changes nothing
 * here: the Services follow the primary themselves.
 */
import type { PostgresCluster, PostgresDatabase } from '../../api/schema.ts';
import { EndpointKey } from '../components/configmap.ts';
import type { ConfigMap, ObjectRef } from '../objects.ts';
import { childNames, ownershipOf } from '../vocabulary.ts';
import type { ConnectionSecretTemplate } from './effects.ts';
import type { ConnectionSecretView } from './observation.ts';
import type { DatabaseRole } from './roles.ts';
import { databaseLabels, ownerReferenceToDatabase } from './vocabulary.ts';

export interface Endpoints {
  /** Read-write host: the rw pooler's Service, or the cluster's `-rw` Service. */
  rw: string;
  /** Read-only host: the ro pooler's Service, or the cluster's `-ro` Service. */
  ro: string;
  port: string;
  pooled: boolean;
}

/** What the cluster has published, or undefined while it has not (yet) published its endpoints. */
export function publishedEndpoints(configMap: ConfigMap | undefined): Endpoints | undefined {
  const data = configMap?.data ?? {};
  const rw = data[EndpointKey.rw];
  const ro = data[EndpointKey.ro];
  const port = data[EndpointKey.port];
  if (!rw || !ro || !port) return undefined;
  const poolerRw = data[EndpointKey.poolerRw];
  const poolerRo = data[EndpointKey.poolerRo];
  if (poolerRw && poolerRo) return { rw: poolerRw, ro: poolerRo, port, pooled: true };
  return { rw, ro, port, pooled: false };
}

/**
 * The endpoints a database's Secrets may point at: those published in an endpoints ConfigMap its PostgresCluster
 * controls, naming only that cluster's own Services in its namespace. Anyone who may write ConfigMaps in the
 * namespace could otherwise plant or edit one and have every connection Secret — and so every application's
 * password — sent to a host of their choosing. `refused` says why one is not followed.
 */
export function followedEndpoints(
  configMap: ConfigMap | undefined,
  cluster: PostgresCluster | undefined,
): { endpoints?: Endpoints; refused?: string } {
  const endpoints = publishedEndpoints(configMap);
  if (!configMap || !cluster || !endpoints) return {};
  const name = `ConfigMap ${configMap.metadata.name}`;
  if (ownershipOf(configMap.metadata.ownerReferences, cluster) !== 'ours') {
    return { refused: `${name} is not controlled by PostgresCluster ${cluster.metadata.name}: not followed` };
  }
  const services = ownServices(cluster);
  const stray = [endpoints.rw, endpoints.ro].filter((host) => !services.test(host));
  if (stray.length > 0 || !/^[0-9]{1,5}$/.test(endpoints.port)) {
    const what = stray.length ? `host(s) ${stray.join(', ')}` : `port ${endpoints.port}`;
    return {
      refused: `${name} names ${what}, not PostgresCluster ${cluster.metadata.name}'s own Services: not followed`,
    };
  }
  return { endpoints };
}

/** `<cluster>-rw`, `-ro`, `-pooler-rw`, `-pooler-ro` in the cluster's namespace, with or without the cluster domain. */
function ownServices(cluster: PostgresCluster): RegExp {
  const names = childNames(cluster.metadata.name);
  const services = [`${names.cnpgCluster}-rw`, `${names.cnpgCluster}-ro`, names.poolerRw, names.poolerRo];
  const namespace = cluster.metadata.namespace ?? '';
  return new RegExp(
    `^(${services.map(escapeRegExp).join('|')})\\.${escapeRegExp(namespace)}\\.svc(\\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?)?$`,
  );
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export const secretRefOf = (database: PostgresDatabase, role: DatabaseRole): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'Secret',
  namespace: database.metadata.namespace,
  name: role.secretName,
});

/** A read-only user connects to the read endpoint; everyone else to the read-write one. */
export function desiredSecret(
  database: PostgresDatabase,
  role: DatabaseRole,
  endpoints: Endpoints,
): ConnectionSecretTemplate {
  return {
    ref: secretRefOf(database, role),
    username: role.name,
    host: role.access === 'readOnly' ? endpoints.ro : endpoints.rw,
    port: endpoints.port,
    dbname: database.spec.name,
    labels: databaseLabels(database),
    owner: ownerReferenceToDatabase(database),
  };
}

/** The values that differ from the template, by key name (never a value: the username is no secret either). */
export function secretDrift(view: ConnectionSecretView, template: ConnectionSecretTemplate): string[] {
  const wanted = { username: template.username, host: template.host, port: template.port, dbname: template.dbname };
  return Object.entries(wanted)
    .filter(([key, value]) => view.values[key as keyof typeof wanted] !== value)
    .map(([key]) => key);
}
