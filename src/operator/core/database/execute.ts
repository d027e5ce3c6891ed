/** Executes the writes a PostgresDatabase's machine asked for, in order, through the ports; stops at the first failure. */
import type { OwnerReference, PostgresDatabase } from '../../api/schema.ts';
import { cnpgDatabaseDrift } from '../../domain/database/cnpg-database.ts';
import { secretDrift } from '../../domain/database/connection.ts';
import type { DatabaseEffect, DatabaseWrite } from '../../domain/database/effects.ts';
import { PRIVILEGES_ANNOTATION } from '../../domain/database/vocabulary.ts';
import { joinsLast, type KubeEvent } from '../../domain/effects.ts';
import { holds } from '../../domain/holds.ts';
import { refOf } from '../../domain/objects.ts';
import { FINALIZER } from '../../domain/vocabulary.ts';
import { answerMayBeLost, landedAfterAll } from '../execute.ts';
import type { DatabasePorts } from './ports.ts';

export interface DatabaseExecution {
  writes: number;
  /** Events of the writes that succeeded and the machine's own announcements, in order. */
  events: KubeEvent[];
  /** The write that failed, and why; the writes after it were not tried. */
  failed?: { write: DatabaseWrite; error: unknown };
  /** The version the finalizer write left the database at, which later writes are conditional on. */
  resourceVersion?: string;
}

async function write(
  ports: DatabasePorts,
  database: PostgresDatabase,
  effect: DatabaseWrite,
): Promise<string | undefined> {
  switch (effect.type) {
    case 'addFinalizer':
      return ports.databases.addFinalizer(database, FINALIZER);
    case 'removeFinalizer':
      return ports.databases.removeFinalizer(database, FINALIZER);
    case 'applySecret':
      await ports.connectionSecrets.apply(effect.secret);
      return undefined;
    case 'applyDatabase':
      await ports.cnpgDatabases.apply(effect.object);
      return undefined;
    case 'grantPrivileges':
      await ports.privileges.grant({ namespace: database.metadata.namespace, name: effect.cluster }, effect.plan);
      await ports.cnpgDatabases.recordPrivileges(effect.database, effect.digest);
      return undefined;
    case 'delete':
      if (effect.ref.kind === 'Secret') await ports.connectionSecrets.delete(effect.ref);
      else await ports.cnpgDatabases.delete(effect.ref);
      return undefined;
    case 'releaseOwner':
      await ports.connectionSecrets.releaseOwner(effect.ref, effect.ownerUid);
      return undefined;
  }
}

const ownedBy = (object: { metadata: { ownerReferences?: OwnerReference[] } }, owner: OwnerReference) =>
  (object.metadata.ownerReferences ?? []).some((o) => holds(o, owner));

/**
 * After a write whose answer was lost (a timeout, a connection cut): whether the object read back is what the
 * write meant to leave, as the cluster's pass asks (core/execute.ts). Counted as done, the write says its Event
 * (`SecretsCreated`, `CNPGDatabaseCreated`, …); counted as failed, the next pass finds it done and says nothing.
 * These ports read the API itself (their values are in no cache), so what just landed is there to see. The grants
 * are known by the digest recorded on the CNPG Database after them: recorded, the grants ran (a grant whose own
 * answer was lost, with no digest after it, is made again by the next pass, and said then).
 */
async function readBack(ports: DatabasePorts, effect: DatabaseWrite): Promise<boolean> {
  switch (effect.type) {
    case 'applySecret': {
      const secret = await ports.connectionSecrets.get(effect.secret.ref);
      return !!secret && ownedBy(secret, effect.secret.owner) && secretDrift(secret, effect.secret).length === 0;
    }
    case 'applyDatabase': {
      const owner = effect.object.metadata.ownerReferences?.[0];
      const stored = await ports.cnpgDatabases.get(refOf(effect.object));
      return !!stored && !!owner && ownedBy(stored, owner) && cnpgDatabaseDrift(stored, effect.object).length === 0;
    }
    case 'grantPrivileges': {
      const stored = await ports.cnpgDatabases.get(effect.database);
      return stored?.metadata.annotations?.[PRIVILEGES_ANNOTATION] === effect.digest;
    }
    default:
      return false;
  }
}

const mayHaveLanded = (effect: DatabaseWrite, error: unknown) =>
  (effect.type === 'applySecret' || effect.type === 'applyDatabase' || effect.type === 'grantPrivileges') &&
  answerMayBeLost(error);

export async function executeDatabaseEffects(
  ports: DatabasePorts,
  database: PostgresDatabase,
  effects: DatabaseEffect[],
): Promise<DatabaseExecution> {
  const execution: DatabaseExecution = { writes: 0, events: [] };
  let current = database;
  for (const effect of effects) {
    if (effect.type === 'event') {
      execution.events.push(effect.event);
      continue;
    }
    // The shell checks the deletion timestamp again before a cleanup write: the world decides what is destroyed.
    const destructive = effect.type === 'delete' || effect.type === 'releaseOwner' || effect.type === 'removeFinalizer';
    if (destructive && !current.metadata.deletionTimestamp) continue;
    try {
      const version = await write(ports, current, effect);
      if (version !== undefined) {
        current = { ...current, metadata: { ...current.metadata, resourceVersion: version } };
        execution.resourceVersion = version;
      }
    } catch (error) {
      // A lost answer is no failure when a read shows the write landed: done, with its Event.
      if (!(mayHaveLanded(effect, error) && (await landedAfterAll(() => readBack(ports, effect))))) {
        execution.failed = { write: effect, error };
        break;
      }
    }
    execution.writes++;
    // Writes planned together are one report when each of them was made (domain/effects.ts, joinReports).
    if (effect.joins && joinsLast(effect, execution.events.at(-1))) {
      execution.events[execution.events.length - 1] = effect.joins.event;
    } else if (effect.event) {
      execution.events.push(effect.event);
    }
  }
  return execution;
}
