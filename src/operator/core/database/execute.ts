/** Executes the writes a PostgresDatabase's machine asked for, in order, through the ports; stops at the first failure. */
import type { PostgresDatabase } from '../../api/schema.ts';
import type { DatabaseEffect, DatabaseWrite } from '../../domain/database/effects.ts';
import { joinsLast, type KubeEvent } from '../../domain/effects.ts';
import { FINALIZER } from '../../domain/vocabulary.ts';
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
      execution.writes++;
      // Writes planned together are one report when each of them was made (domain/effects.ts, joinReports).
      if (effect.joins && joinsLast(effect, execution.events.at(-1))) {
        execution.events[execution.events.length - 1] = effect.joins.event;
      } else if (effect.event) {
        execution.events.push(effect.event);
      }
    } catch (error) {
      execution.failed = { write: effect, error };
      break;
    }
  }
  return execution;
}
