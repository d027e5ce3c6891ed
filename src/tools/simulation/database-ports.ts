/**
 * The PostgresDatabase ports of a simulated operator process: the in-memory ones (src/tools/memory/database-ports.ts,
 * with its simulated PostgreSQL for the grants and what exists), answering their Secret writes as the Kubernetes
 * adapter does (kubernetes/database-children.ts answers the Secret as stored). The driver keeps those answers for
 * the cluster's reads (driver/database-cache-reads.ts); a port answering nothing would leave the simulation's
 * cluster passes reading a lagging cache where `pgfsm run`'s read the database's write.
 */
import type { DatabasePorts, PrivilegesPort } from '../../operator/core/database/ports.ts';
import type { Ports } from '../../operator/core/ports.ts';
import type { MemoryApiServer, StoredObject } from '../memory/api-server.ts';
import { connectionSecretViewOf, memoryDatabasePorts } from '../memory/database-ports.ts';

export function simulatedDatabasePorts(
  api: MemoryApiServer,
  clusterPorts: Ports,
  privileges?: PrivilegesPort,
): DatabasePorts {
  const ports = memoryDatabasePorts(api, clusterPorts, ...(privileges ? [privileges] : []));
  const secrets = ports.connectionSecrets;
  return {
    ...ports,
    connectionSecrets: {
      get: (ref) => secrets.get(ref),
      delete: (ref) => secrets.delete(ref),
      releaseOwner: (ref, ownerUid) => secrets.releaseOwner(ref, ownerUid),
      // The in-memory API stores synchronously: what it holds right after the apply is what the apply stored (a
      // copy, as every read of it is).
      apply: async (template) => {
        await secrets.apply(template);
        const stored = api.get<StoredObject>(template.ref);
        return stored && connectionSecretViewOf(stored);
      },
    },
  };
}
