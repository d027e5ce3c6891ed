/**
 * The state names of the PostgresDatabase machine that code outside machines/ needs, as constants and
 * predicates (the cluster machine's are in states.ts): nothing outside the package spells a state name.
 */
import { isWithin } from './states.ts';

/** The machine's id: state ids are `#postgresDatabase.<path>`. */
export const DATABASE_MACHINE_ID = 'postgresDatabase';

export const DATABASE_READY_STATE = 'Ready';

/** The deletion step whose one write, removing the finalizer, leads into the final state. */
export const DATABASE_FINALIZER_STEP = 'Deleting.RemoveFinalizer';

/** The compound states whose children run one after the other, with how a reader names them. */
export const DATABASE_SEQUENCES: Readonly<Record<string, string>> = {
  Provisioning: 'the pipeline',
  Deleting: 'deletion',
};

export const isDatabaseDeletingState = (path: string) => isWithin(path, 'Deleting');

/**
 * Whether a PostgresDatabase stored in this state has its CNPG Database gone and now lets its roles go: the
 * PostgresCluster's pass then drops them (Delete) or takes them out of its list (Retain). Before that, a role
 * that owns the database could not be dropped, and CNPG would report it as failing.
 */
export const isDatabaseReleasingRoles = (path: string | undefined) =>
  path !== undefined && isDatabaseDeletingState(path) && !isWithin(path, 'Deleting.Database');
