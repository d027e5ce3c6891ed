/** What a PostgresDatabase's machine asks the shell to do: data, executed in order by core/database. */
import type { OwnerReference } from '../../api/schema.ts';
import type { PrivilegePlan } from '../../postgres/privileges.ts';
import type { Joined, KubeEvent } from '../effects.ts';
import type { ObjectRef } from '../objects.ts';
import type { CnpgDatabase } from './observation.ts';
import { type DatabaseEventReason, databaseEventTypeOf } from './vocabulary.ts';

/**
 * A connection Secret to create or bring up to date. The adapter keeps the password a Secret already has and
 * generates one for a new Secret, and builds every key that contains it (`uri`, `jdbc-uri`, `pgpass`): no
 * password passes the core.
 */
export interface ConnectionSecretTemplate {
  ref: ObjectRef;
  username: string;
  host: string;
  port: string;
  dbname: string;
  labels: Record<string, string>;
  owner: OwnerReference;
}

export type DatabaseWrite =
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer' }
  | { type: 'applySecret'; secret: ConnectionSecretTemplate }
  | { type: 'applyDatabase'; object: CnpgDatabase }
  /** Grants over SQL through the cluster's `-rw` Service, then records `digest` on the CNPG Database. */
  | { type: 'grantPrivileges'; cluster: string; plan: PrivilegePlan; digest: string; database: ObjectRef }
  | { type: 'delete'; ref: ObjectRef }
  | { type: 'releaseOwner'; ref: ObjectRef; ownerUid: string };

/** `joins`: reported together with the writes before it (../effects.ts, joinReports). */
export type DatabaseEffect =
  | (DatabaseWrite & { event?: KubeEvent; joins?: Joined })
  | { type: 'event'; event: KubeEvent };

export const databaseEvent = (reason: DatabaseEventReason, action: string, message: string): KubeEvent => ({
  type: databaseEventTypeOf(reason),
  reason,
  action,
  message,
});
