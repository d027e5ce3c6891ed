/**
 * The PostgresDatabase lifecycle statechart: the second machine, built as the first is (postgres-cluster.ts).
 *
 * Pure: its one event is a reconcile `tick` carrying the observed world and the time; guards call the checks
 * of domain/database on it, and actions only enqueue effect descriptions that core/database executes. The
 * pipeline is level-based: every tick re-enters `Provisioning` at its first step and passes every step that is
 * already healthy, so the stored state is always "the first step that is not healthy yet".
 */
import { setup } from 'xstate';
import { assessDatabase, isDatabaseComponentReady } from '../src/operator/domain/database/assessment.ts';
import {
  planCnpgDatabaseDeletion,
  planDatabaseFinalizerRemoval,
  planSecretsCleanup,
} from '../src/operator/domain/database/deletion.ts';
import { type DatabaseEffect, databaseEvent } from '../src/operator/domain/database/effects.ts';
import type { DatabaseTick } from '../src/operator/domain/database/observation.ts';
import {
  DATABASE_COMPONENTS,
  DATABASE_CONDITION_OF,
  type DatabaseComponent,
} from '../src/operator/domain/database/vocabulary.ts';
import { DATABASE_GATES, databaseGuardImplementations } from './database-guards.ts';
import { gateTransitions } from './guards.ts';
import { failureMeta, type StateMeta, stepMeta, waitingMeta } from './meta.ts';

type Meta = StateMeta<DatabaseComponent>;

const base = setup({
  types: {
    context: {} as Record<string, never>,
    events: {} as DatabaseTick,
    meta: {} as Meta,
  },
  actions: {
    /** An effect for the shell. Its implementation is never called: the shell reads `params`. */
    effect: (_, _params: DatabaseEffect) => {},
  },
  guards: databaseGuardImplementations,
});

const effects = (plan: (event: DatabaseTick) => DatabaseEffect[]) =>
  base.enqueueActions(({ enqueue, event }) => {
    for (const effect of plan(event)) enqueue({ type: 'effect', params: effect });
  });

const reconcileStep = (component: DatabaseComponent) => effects((event) => assessDatabase(event).plans[component]);

const reportFailure = (component: DatabaseComponent) =>
  effects((event) => {
    const h = assessDatabase(event).health[component];
    return [{ type: 'event', event: { type: 'Warning', reason: h.reason, action: 'Fail', message: h.message } }];
  });

const gates = gateTransitions(DATABASE_GATES);

const FAILED_STATE: Partial<Record<DatabaseComponent, string>> = {
  claims: '#postgresDatabase.Failed.Claims',
  secrets: '#postgresDatabase.Failed.Secrets',
  roles: '#postgresDatabase.Failed.Roles',
  database: '#postgresDatabase.Failed.Database',
};

/** How a pipeline step leaves: to its failure state while its check fails, on to `next` once it is Ready. */
const leaving = (component: DatabaseComponent, next: string) => {
  const failed = FAILED_STATE[component];
  return [
    ...(failed ? [{ guard: { type: 'componentFailed' as const, params: { component } }, target: failed }] : []),
    { guard: { type: 'componentReady' as const, params: { component } }, target: next },
  ];
};

/** A pipeline step that writes: its entry plans the component's writes. */
const pipelineStep = <A extends string>(component: DatabaseComponent, description: string, entry: A, next: string) => ({
  meta: stepMeta(description, component),
  entry,
  always: leaving(component, next),
});

/** A pipeline step that only waits for someone else (the cluster, CNPG) to act. */
const waitingStep = (component: DatabaseComponent, description: string, next: string) => ({
  meta: stepMeta(description, component),
  always: leaving(component, next),
});

const staysWhileFailed = (component: DatabaseComponent) => ({
  tick: [
    ...gates(),
    { guard: { type: 'componentFailed' as const, params: { component } } },
    { target: '#postgresDatabase.Provisioning' },
  ],
});

export const postgresDatabaseMachine = base
  .extend({
    actions: {
      addFinalizer: effects(() => [{ type: 'addFinalizer' }]),
      reconcileSecrets: reconcileStep('secrets'),
      applyDatabase: reconcileStep('database'),
      grantPrivileges: reconcileStep('privileges'),
      announceReady: effects((event) => {
        const { database } = event.observation;
        const secret = assessDatabase(event).roles[0]?.secretName ?? '';
        const message = `Database ${database.spec.name} is ready on PostgresCluster ${database.spec.cluster}: connect with Secret ${secret}`;
        return [{ type: 'event', event: databaseEvent('Ready', 'BecomeReady', message) }];
      }),
      announceNotReady: effects((event) => {
        const x = assessDatabase(event);
        const lost = DATABASE_COMPONENTS.find((c) => !isDatabaseComponentReady(x, c));
        const what = lost
          ? `${DATABASE_CONDITION_OF[lost]} is ${x.health[lost].reason}: ${x.health[lost].message}`
          : '';
        return [
          {
            type: 'event',
            event: databaseEvent('NotReady', 'BecomeNotReady', `Database is no longer ready: ${what}`),
          },
        ];
      }),
      reportInvalidSpec: reportFailure('cluster'),
      reportClaimsFailure: reportFailure('claims'),
      reportSecretsFailure: reportFailure('secrets'),
      reportRolesFailure: reportFailure('roles'),
      reportDatabaseFailure: reportFailure('database'),
      deleteCnpgDatabase: effects((event) => planCnpgDatabaseDeletion(event.observation)),
      cleanUpSecrets: effects((event) => planSecretsCleanup(event.observation)),
      removeFinalizer: effects((event) => planDatabaseFinalizerRemoval(event.observation)),
    },
  })
  .createMachine({
    id: 'postgresDatabase',
    initial: 'Pending',
    context: {},
    states: {
      Pending: {
        meta: waitingMeta('Adds the finalizer before anything is created', 'Pending', 'observe'),
        on: { tick: [...gates('finalizerMissing', 'addFinalizer'), { target: 'Provisioning' }] },
      },
      Provisioning: {
        initial: 'Cluster',
        on: { tick: [...gates(), { target: '.Cluster', reenter: true }] },
        states: {
          Cluster: waitingStep('cluster', 'Waits for the PostgresCluster to exist and publish its endpoints', 'Claims'),
          Claims: waitingStep(
            'claims',
            'Holds its database name and role names on the cluster and its Secret names: nothing is made for a name another holds',
            'Secrets',
          ),
          Secrets: pipelineStep(
            'secrets',
            'Creates a connection Secret per role (a generated password), or points them at what the cluster publishes',
            'reconcileSecrets',
            'Roles',
          ),
          Roles: waitingStep(
            'roles',
            'Waits for the PostgresCluster to push the roles and for CNPG to create them',
            'Database',
          ),
          Database: pipelineStep(
            'database',
            'Creates or repairs the CNPG Database (schemas, extensions) and waits for CNPG to apply it',
            'applyDatabase',
            'Privileges',
          ),
          Privileges: pipelineStep(
            'privileges',
            "Grants the users' privileges over SQL through the cluster's -rw Service and records what it granted",
            'grantPrivileges',
            '#postgresDatabase.Ready',
          ),
        },
      },
      Ready: {
        meta: {
          description: 'The database, its roles and their Secrets are ready; nothing is written while it stays so',
          phase: 'Ready',
          conditions: 'pipeline',
          ready: true,
          reconciling: false,
          stalled: false,
          deadline: false,
          requeue: 'none',
        },
        entry: 'announceReady',
        on: {
          tick: [
            ...gates(),
            { guard: 'allReady' },
            { guard: 'routineChange', target: 'Provisioning' },
            { target: 'Provisioning', actions: 'announceNotReady' },
          ],
        },
      },
      Failed: {
        initial: 'InvalidSpec',
        states: {
          InvalidSpec: {
            meta: failureMeta('The spec cannot be acted on; the condition names the field', 'cluster'),
            entry: 'reportInvalidSpec',
            on: { tick: [...gates('specInvalid'), { target: '#postgresDatabase.Provisioning' }] },
          },
          Claims: {
            meta: failureMeta(
              'A database, role or Secret name it needs is held by the cluster’s spec or another PostgresDatabase',
              'claims',
            ),
            entry: 'reportClaimsFailure',
            on: staysWhileFailed('claims'),
          },
          Secrets: {
            meta: failureMeta(
              'A Secret of a role’s name is controlled by someone else or was not handed over',
              'secrets',
            ),
            entry: 'reportSecretsFailure',
            on: staysWhileFailed('secrets'),
          },
          Roles: {
            meta: failureMeta('CNPG cannot reconcile a role', 'roles'),
            entry: 'reportRolesFailure',
            on: staysWhileFailed('roles'),
          },
          Database: {
            meta: failureMeta(
              'The CNPG Database is controlled by someone else, CNPG cannot apply it, or PostgreSQL no longer has the database',
              'database',
            ),
            entry: 'reportDatabaseFailure',
            on: staysWhileFailed('database'),
          },
        },
      },
      Deleting: {
        initial: 'Database',
        on: { tick: { guard: 'deletionRequested', target: '.Database', reenter: true } },
        states: {
          Database: {
            meta: waitingMeta(
              'Deletes the CNPG Database (CNPG drops the database under Delete) and waits until it is gone',
              'Deleting',
              'observe',
            ),
            entry: 'deleteCnpgDatabase',
            always: { guard: 'cnpgDatabaseGone', target: 'Roles' },
          },
          Roles: {
            meta: waitingMeta(
              'Waits for the PostgresCluster to drop the roles (Delete) or take them out of its list (Retain)',
              'Deleting',
              'observe',
            ),
            always: { guard: 'rolesLetGo', target: 'Secrets' },
          },
          Secrets: {
            meta: waitingMeta(
              'Deletes the connection Secrets (Delete) or releases them (Retain)',
              'Deleting',
              'observe',
            ),
            entry: 'cleanUpSecrets',
            always: { guard: 'secretsCleanedUp', target: 'RemoveFinalizer' },
          },
          RemoveFinalizer: {
            meta: {
              description: 'Removes the finalizer; the API server then deletes the object',
              phase: 'Deleting',
              conditions: 'observe',
              ready: false,
              reconciling: true,
              stalled: false,
              deadline: false,
              requeue: 'none',
            },
            entry: 'removeFinalizer',
            always: { guard: 'deletionRequested', target: '#postgresDatabase.Deleted' },
          },
        },
      },
      Deleted: {
        type: 'final',
        meta: {
          description: 'The finalizer is gone; nothing more to do',
          phase: 'Deleting',
          conditions: 'observe',
          ready: false,
          reconciling: false,
          stalled: false,
          deadline: false,
          requeue: 'none',
        },
      },
    },
  });

export type PostgresDatabaseMachine = typeof postgresDatabaseMachine;
