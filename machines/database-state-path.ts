/** The database machine's state as stored in `status.state`: the codec of state-codec.ts, bound to it. */

import type { DatabaseComponent } from '../src/operator/domain/database/vocabulary.ts';
import { isDatabaseDeletingState } from './database-states.ts';
import type { StateMeta } from './meta.ts';
import { postgresDatabaseMachine } from './postgres-database.ts';
import { stateCodec } from './state-codec.ts';

const codec = stateCodec(postgresDatabaseMachine, { kind: 'PostgresDatabase', isDeleting: isDatabaseDeletingState });

export type DatabaseSnapshot = ReturnType<typeof postgresDatabaseMachine.resolveState>;

export const {
  restoreState: restoreDatabaseState,
  initialState: initialDatabaseState,
  storedStateMisfit: databaseStateMisfit,
  impliedState: impliedDatabaseState,
  namingCondition: databaseNamingCondition,
  storableStates: storableDatabaseStates,
} = codec;

export const databaseMetaOf = (snapshot: DatabaseSnapshot) => codec.metaOf(snapshot) as StateMeta<DatabaseComponent>;
