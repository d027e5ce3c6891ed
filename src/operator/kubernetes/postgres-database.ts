/**
 * The PostgresDatabase port: read, finalizer and status with exactly the PostgresCluster's semantics
 * (postgres-cluster.ts, writes conditional on the resourceVersion the pass read), and the list of a namespace.
 */
import type { PostgresDatabase, PostgresDatabaseStatus } from '../api/schema.ts';
import type { PostgresDatabasePort } from '../core/database/ports.ts';
import { PortError } from '../core/errors.ts';
import { getOrUndefined } from './errors.ts';
import { customObjectOf, type RawObject } from './objects.ts';
import { reconciledObjectPort } from './postgres-cluster.ts';
import { RESOURCES, resourcePath } from './resources.ts';
import type { RestClient } from './rest.ts';

const TYPE = RESOURCES.databases;

export function postgresDatabasePort(rest: RestClient): PostgresDatabasePort {
  return {
    ...reconciledObjectPort<PostgresDatabase, PostgresDatabaseStatus>(rest, TYPE),
    /**
     * One GET of the namespace's collection (no `limit`: the API server answers it whole). A 404 means the
     * CRD is not served, which is an error, not an empty namespace: an empty list would read as "nobody
     * claims a role" to the cluster that pushes the roles.
     */
    async list(namespace) {
      const what = `list ${TYPE.kind} in ${namespace}`;
      const list = await getOrUndefined({ what }, () =>
        rest.request<{ items?: RawObject[] }>({ method: 'GET', path: resourcePath(TYPE, { namespace }) }),
      );
      if (!list) throw new PortError('notFound', `${what}: the API server does not serve ${TYPE.plural}`);
      // A list's items may come without their apiVersion and kind (built-in kinds do): the type names them.
      return (list.items ?? []).map((item) =>
        customObjectOf<PostgresDatabase>({ apiVersion: TYPE.apiVersion, kind: TYPE.kind, ...item }),
      );
    },
  };
}
