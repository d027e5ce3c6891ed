/**
 * The PostgresDatabase's ports beside the cluster's cache-reading ones (cache-reads.ts): what a database's pass
 * writes or reads of its connection Secrets is kept as the cluster's own Secret writes are, so that the cluster's
 * pass, which reads those Secrets as its roles' password Secrets, sees them at once rather than when the Secrets'
 * watch delivers them.
 *
 * Why: a new database's pass creates its Secrets and writes its status; the status wakes the cluster, whose pass
 * read the Secrets from a cache that had not caught up, pushed the roles it could, and pushed them again once the
 * watch delivered the Secrets (`ManagedRolesApplied` said twice, issue 37). The database's status and finalizers
 * go through the shared ports, which keep them already.
 *
 * The database's own reads of its Secrets and CNPG Database stay reads of the API: they carry values the caches
 * (metadata only) do not hold.
 */
import type { ConnectionSecretPort, DatabasePorts } from '../core/database/ports.ts';
import { sharedWithClusters } from '../core/database/ports.ts';
import type { Ports } from '../core/ports.ts';
import type { ConnectionSecretView } from '../domain/database/observation.ts';
import type { ObjectRef, SecretView } from '../domain/objects.ts';
import { isRecord } from '../domain/records.ts';

/** Where the cluster's reads keep a Secret written or deleted (cache-reads.ts, `written.secrets`). */
export interface SecretWrites {
  written(view: SecretView | undefined): void;
  deleted(ref: ObjectRef): void;
}

/**
 * The Secret a connection Secret port answered, as the cluster's reads keep it (key names, no values), or nothing
 * when the adapter answered none. ConnectionSecretPort's writes answer `unknown` (an adapter may answer nothing),
 * so the answer is checked for what it must be before it is kept.
 */
export function secretViewOfAnswer(answer: unknown): SecretView | undefined {
  if (!isRecord(answer) || answer.kind !== 'Secret' || !isRecord(answer.metadata)) return undefined;
  if (typeof answer.metadata.name !== 'string' || typeof answer.metadata.resourceVersion !== 'string') return undefined;
  if (!Array.isArray(answer.keys)) return undefined;
  const { values: _values, ...view } = answer as unknown as ConnectionSecretView;
  return view;
}

/** `port` with each answer (and each Secret a read of the API found) kept in `secrets`. */
function knownSecrets(port: ConnectionSecretPort, secrets: SecretWrites): ConnectionSecretPort {
  const keep = <T>(answer: T): T => {
    secrets.written(secretViewOfAnswer(answer));
    return answer;
  };
  return {
    get: async (ref) => keep(await port.get(ref)),
    apply: async (template) => keep(await port.apply(template)),
    releaseOwner: async (ref, ownerUid) => keep(await port.releaseOwner(ref, ownerUid)),
    delete: async (ref) => {
      const answer = await port.delete(ref);
      secrets.deleted(ref);
      return answer;
    },
  };
}

/** `database`'s ports sharing `cluster`'s (cache-reading) ones, its connection Secrets kept in `secrets`. */
export function databaseWritesKnown(database: DatabasePorts, cluster: Ports, secrets: SecretWrites): DatabasePorts {
  return {
    ...database,
    ...sharedWithClusters(cluster),
    connectionSecrets: knownSecrets(database.connectionSecrets, secrets),
  };
}
