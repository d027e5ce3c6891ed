/**
 * Where applications connect, and the connection Secret of each role. The endpoints are the ones the cluster
 * has published in its endpoints ConfigMap (components/configmap.ts): the pooler's while both Poolers serve,
 * the CNPG Services otherwise. So a Secret follows the cluster: turning the pooler on or off changes what is
 * published, and each Secret follows in the database's next pass. A failover or switchover changes nothing
 * here: the Services follow the primary themselves.
 */
import type { PostgresDatabase } from '../../api/schema.ts';
import { EndpointKey } from '../components/configmap.ts';
import type { ConfigMap, ObjectRef } from '../objects.ts';
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
