/**
 * The state names code outside the machine needs, as constants and predicates: nothing outside
 * machines/ spells a state name (the package lint holds everyone to that), so renaming or moving a
 * state is a change to this package alone. test/unit/machine-package.test.ts checks each name below
 * against the machine.
 */

/** The machine's id: state ids are `#postgresCluster.<path>`. */
export const MACHINE_ID = 'postgresCluster';

/** The one state in which the cluster is up and nothing is written. */
export const READY_STATE = 'Ready';

/** The deletion step whose one write, removing the finalizer, leads into the final state. */
export const FINALIZER_STEP = 'Deleting.RemoveFinalizer';

/** The compound states whose children run one after the other, with how a reader names them. */
export const SEQUENCES: Readonly<Record<string, string>> = { Provisioning: 'the pipeline', Deleting: 'deletion' };

/** Whether `path` is `ancestor` or a state inside it (dotted paths, as stored in `status.state`). */
export const isWithin = (path: string, ancestor: string) => path === ancestor || path.startsWith(`${ancestor}.`);

/** The states where cleanup happens: entered on the deletion timestamp, left only by going away. */
export const isDeletingState = (path: string) => isWithin(path, 'Deleting');

export const isReadyState = (path: string | undefined) => path === READY_STATE;
