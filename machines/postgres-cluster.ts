/**
 * The PostgresCluster lifecycle statechart: the spine of pgfsm.
 *
 * Pure: no I/O, no clock, no `invoke`, no `after`. Its one event is a reconcile `tick` carrying the
 * observed world and the time. Guards call the components' health checks on that observation; actions
 * only enqueue effect descriptions (`effect` actions) that the reconcile core executes.
 *
 * The pipeline is level-based: every tick re-enters `Provisioning` at its first step and passes, through
 * eventless transitions, every step that is already healthy, so the machine's state is always "the first
 * step that is not healthy yet". That makes a restart from the stored state alone land where an
 * uninterrupted run would, and lets several steps pass in one tick.
 */
import { setup } from 'xstate';
import {
  type Assessment,
  assessTick,
  backupWrites,
  clusterUpdateInSteps,
  isReady,
  poolersAhead,
} from '../src/operator/domain/assessment.ts';
import { planDeletionPolicy, planFinalizerRemoval, planPoolerDeletion } from '../src/operator/domain/deletion.ts';
import type { Effect } from '../src/operator/domain/effects.ts';
import { announce, clusterReady, normal, warning } from '../src/operator/domain/effects.ts';
import type { TickEvent } from '../src/operator/domain/observation.ts';
import { COMPONENTS, CONDITION_OF, type Component, EventReason } from '../src/operator/domain/vocabulary.ts';
import { GATES, gateTransitions, guardImplementations } from './guards.ts';
import { failureMeta, meta, type StateMeta, stepMeta, waitingMeta } from './meta.ts';

export type LifecycleEvent = TickEvent;

const a = (event: TickEvent): Assessment => assessTick(event);

/** Types, the `effect` action and the guards (from the catalogue); the effect-producing actions are added below. */
const base = setup({
  types: {
    context: {} as Record<string, never>,
    events: {} as LifecycleEvent,
    meta: {} as StateMeta,
  },
  actions: {
    /** An effect for the shell. Its implementation is never called: the shell reads `params`. */
    effect: (_, _params: Effect) => {},
  },
  guards: guardImplementations,
});

/** An action that enqueues the effects a pure planner returns for this tick. */
const effects = (plan: (event: TickEvent) => Effect[]) =>
  base.enqueueActions(({ enqueue, event }) => {
    for (const effect of plan(event)) enqueue({ type: 'effect', params: effect });
  });

/** Entry action of a pipeline step: the effects its component's plan asks for on this tick. */
const reconcileStep = (component: Component) => effects((event) => a(event).plans[component]);

/** Entry action of a failure state: one Warning per entry, never one per retry. */
const reportFailure = (component: Component) =>
  effects((event) => {
    const h = a(event).health[component];
    return h ? [announce(warning(h.reason, 'Fail', h.message))] : [];
  });

// The gates every live state checks first on each tick, in catalogue order (machines/guards.ts). A
// state that embodies a gate (Pending for the finalizer, Suspended, a failure) stays there while its
// own gate holds.
const gates = gateTransitions(GATES);

const FAILED_STATE = {
  secret: '#postgresCluster.Failed.Secret',
  cluster: '#postgresCluster.Failed.Cluster',
  managedRoles: '#postgresCluster.Failed.ManagedRoles',
  pooler: '#postgresCluster.Failed.Pooler',
  configMap: '#postgresCluster.Failed.ConfigMap',
} as const;

/**
 * A pipeline step: its entry plans the component's writes; it fails or passes on as its check says, or
 * (`detour`) goes to a state of its own that shows a special way of getting there.
 */
const pipelineStep = <A extends string>(
  component: Component,
  description: string,
  entry: A,
  next: string,
  detour?: { guard: 'clusterUpdateInSteps'; target: string },
) => ({
  meta: stepMeta(description, component),
  entry,
  always: [
    { guard: { type: 'componentFailed' as const, params: { component } }, target: FAILED_STATE[component] },
    ...(detour ? [detour] : []),
    { guard: { type: 'componentReady' as const, params: { component } }, target: next },
  ],
});

export const postgresClusterMachine = base
  .extend({
    actions: {
      addFinalizer: effects(() => [{ type: 'addFinalizer' }]),
      reconcileSecret: reconcileStep('secret'),
      // An update in steps is written by the state that shows it (ClusterStaged), not by the step. The missing
      // Poolers are created here too once the CNPG Cluster exists (poolersAhead): PgBouncer starts with PostgreSQL.
      // A backed-up cluster's ObjectStore goes first: the plugin looks for it when the CNPG Cluster starts.
      reconcileCluster: effects((event) =>
        clusterUpdateInSteps(a(event))
          ? []
          : [...(a(event).backup?.store ?? []), ...a(event).plans.cluster, ...poolersAhead(a(event))],
      ),
      // Only a restore still waiting writes here: the read-only store of its source's archive.
      reconcileRestore: effects((event) => (a(event).restore ? (a(event).backup?.sourceStore ?? []) : [])),
      // The ScheduledBackup and the on-demand Backup on entering Ready (the Cluster step of the same tick wrote
      // the store); later ticks in Ready also repair the store (reconcileBackups).
      scheduleBackups: effects((event) => (isReady(a(event), 'cluster') ? (a(event).backup?.schedule ?? []) : [])),
      reconcileBackups: effects((event) => backupWrites(a(event))),
      stageClusterUpdate: reconcileStep('cluster'),
      // The step pushes the PostgresDatabases' roles too when its own are as wanted: it is the list's one writer.
      reconcileManagedRoles: effects((event) => {
        const x = a(event);
        return x.plans.managedRoles.length > 0 ? x.plans.managedRoles : x.databaseRolesPush;
      }),
      pushDatabaseRoles: effects((event) => a(event).databaseRolesPush),
      reconcilePooler: reconcileStep('pooler'),
      reconcileConfigMap: reconcileStep('configMap'),
      announceReady: effects(() => [announce(clusterReady())]),
      announceDegraded: effects((event) => [
        announce(
          warning(
            EventReason.Degraded,
            'BecomeDegraded',
            `Cluster degraded: ${a(event).health.cluster?.message ?? ''}`,
          ),
        ),
      ]),
      announceNotReady: effects((event) => {
        const x = a(event);
        const lost = COMPONENTS.find((c) => !isReady(x, c));
        const h = lost ? x.health[lost] : undefined;
        const what = lost && h ? `${CONDITION_OF[lost]} is ${h.reason}: ${h.message}` : 'a component is not ready';
        return [announce(warning(EventReason.NotReady, 'BecomeNotReady', `Cluster is no longer ready: ${what}`))];
      }),
      reportSecretFailure: reportFailure('secret'),
      reportClusterFailure: reportFailure('cluster'),
      reportManagedRolesFailure: reportFailure('managedRoles'),
      reportPoolerFailure: reportFailure('pooler'),
      reportConfigMapFailure: reportFailure('configMap'),
      announceSuspended: effects(() => [
        announce(normal(EventReason.Suspended, 'Suspend', 'Reconciliation suspended: no writes to children')),
      ]),
      announceResumed: effects(() => [announce(normal(EventReason.Resumed, 'Resume', 'Reconciliation resumed'))]),
      deletePoolers: effects((event) => planPoolerDeletion(event.observation)),
      applyDeletionPolicy: effects((event) => planDeletionPolicy(event.observation)),
      removeFinalizer: effects((event) => planFinalizerRemoval(event.observation)),
    },
  })
  .createMachine({
    id: 'postgresCluster',
    initial: 'Pending',
    context: {},
    states: {
      Pending: {
        meta: waitingMeta('Adds the finalizer before anything is created', 'Pending', 'observe'),
        on: {
          tick: [...gates('finalizerMissing', 'addFinalizer'), { target: 'Provisioning' }],
        },
      },
      Provisioning: {
        initial: 'Secret',
        on: {
          tick: [
            ...gates(),
            // Level-based: start again at the first step; healthy steps pass on in the same tick.
            { target: '.Secret', reenter: true },
          ],
        },
        states: {
          Secret: pipelineStep('secret', 'Creates or adopts the superuser Secret', 'reconcileSecret', 'Restore'),
          // Passed at once by a cluster that is not restored, and by one whose CNPG Cluster exists.
          Restore: {
            meta: stepMeta(
              'A restored cluster: creates the read-only ObjectStore of its source archive and waits until the ' +
                'source has a backup to restore from, before the CNPG Cluster is created from it',
              'cluster',
            ),
            entry: 'reconcileRestore',
            // A refused restore passes on too: the Cluster step fails it, as any other failure of the cluster.
            always: { guard: 'restoreReady', target: 'Cluster' },
          },
          Cluster: pipelineStep(
            'cluster',
            'Creates the CNPG Cluster, repairs its drift, waits for healthy and all instances ready; once it exists, ' +
              'also creates the missing Poolers, so that PgBouncer starts with PostgreSQL',
            'reconcileCluster',
            'ManagedRoles',
            { guard: 'clusterUpdateInSteps', target: 'ClusterStaged' },
          ),
          // Left on the next tick like every step: the pipeline starts again at Secret, and the Cluster
          // step comes back here while the update still goes in steps.
          ClusterStaged: {
            meta: stepMeta(
              'Rolls out a CNPG Cluster change CNPG accepts only in parts: the PostgreSQL parameters first, ' +
                'then the image once CNPG is healthy with every instance ready',
              'cluster',
            ),
            entry: 'stageClusterUpdate',
          },
          ManagedRoles: pipelineStep(
            'managedRoles',
            'Pushes managed roles to CNPG and waits until CNPG reconciles them',
            'reconcileManagedRoles',
            'Pooler',
          ),
          Pooler: pipelineStep(
            'pooler',
            'Creates, repairs or removes the rw and ro Poolers; waits for ready replicas',
            'reconcilePooler',
            'ConfigMap',
          ),
          ConfigMap: pipelineStep(
            'configMap',
            'Publishes the endpoints ConfigMap and restores it on drift',
            'reconcileConfigMap',
            '#postgresCluster.Ready',
          ),
        },
      },
      Ready: {
        meta: meta({
          description:
            'Every component is healthy; nothing of its own is written while it stays so (the roles PostgresDatabases ' +
            'ask for are pushed without leaving, and so are the backup objects of a backed-up cluster)',
          phase: 'Ready',
          conditions: 'pipeline',
          ready: true,
          reconciling: false,
          stalled: false,
          deadline: false,
          requeue: 'none',
        }),
        entry: ['announceReady', 'scheduleBackups'],
        on: {
          tick: [
            ...gates(),
            { guard: 'databaseRolesBehind', actions: 'pushDatabaseRoles' },
            { guard: 'backupsBehind', actions: 'reconcileBackups' },
            { guard: 'allReady' },
            { guard: 'cnpgBusy', target: 'Degraded', actions: 'announceDegraded' },
            { guard: 'routineChange', target: 'Provisioning' },
            { target: 'Provisioning', actions: 'announceNotReady' },
          ],
        },
      },
      Degraded: {
        meta: waitingMeta(
          'Was Ready; CNPG is switching over, failing over, restarting, upgrading or reconfiguring',
          'Degraded',
          'pipeline',
          'cluster',
        ),
        on: {
          tick: [...gates(), { guard: 'allReady', target: 'Ready' }, { guard: 'cnpgBusy' }, { target: 'Provisioning' }],
        },
      },
      Failed: {
        // Never entered on its own: every transition names its substate, but XState wants an initial.
        initial: 'InvalidSpec',
        // Each failure stays while its cause holds and is left on the first tick where it does not:
        // a changed spec, class or world lets the pipeline run again from the start.
        states: {
          ClassMissing: {
            meta: failureMeta('The PostgresClusterClass named by spec.class does not exist', 'cluster'),
            entry: 'reportClusterFailure',
            on: {
              tick: [...gates('classMissing'), { target: '#postgresCluster.Provisioning' }],
            },
          },
          InvalidSpec: {
            meta: failureMeta('The merged spec is invalid; the condition names the field', 'cluster'),
            entry: 'reportClusterFailure',
            on: {
              tick: [...gates('specInvalid'), { target: '#postgresCluster.Provisioning' }],
            },
          },
          ...Object.fromEntries(
            (
              [
                ['Secret', 'secret', 'The superuser Secret has no password or is controlled by someone else'],
                [
                  'Cluster',
                  'cluster',
                  'CNPG reports a failure that needs a human (unrecoverable, waiting for user, …), the CNPG ' +
                    'Cluster is controlled by someone else or authenticates with another superuser Secret, or the ' +
                    'API server refused its spec',
                ],
                [
                  'ManagedRoles',
                  'managedRoles',
                  'CNPG cannot reconcile one or more managed roles, or the API server refused them',
                ],
                [
                  'Pooler',
                  'pooler',
                  'A Pooler with our name is controlled by someone else, or the API server refused its spec',
                ],
                ['ConfigMap', 'configMap', 'A ConfigMap with our name is controlled by someone else'],
              ] as const
            ).map(([key, component, description]) => [
              key,
              {
                meta: failureMeta(description, component),
                entry: `report${key}Failure` as const,
                on: {
                  tick: [
                    ...gates(),
                    { guard: { type: 'componentFailed', params: { component } } },
                    { target: '#postgresCluster.Provisioning' },
                  ],
                },
              },
            ]),
          ),
        },
      },
      Suspended: {
        meta: meta({
          description: 'spec.suspend is true: observes and reports, writes nothing to the children',
          phase: 'Suspended',
          conditions: 'observe',
          ready: false,
          reconciling: false,
          stalled: false,
          deadline: false,
          requeue: 'none',
        }),
        entry: 'announceSuspended',
        exit: 'announceResumed',
        on: {
          tick: [...gates('suspendRequested'), { target: 'Provisioning' }],
        },
      },
      // Every transition that plans cleanup (deleting, releasing, removing the finalizer) checks the
      // deletion timestamp itself, not only the gate that leads here (`poolersGone` and `policyApplied`
      // ask it too): a Deleting state restored from a status written by hand must not destroy a live
      // cluster. The shell checks again before the write (src/operator/core/execute.ts).
      Deleting: {
        initial: 'Poolers',
        on: { tick: { guard: 'deletionRequested', target: '.Poolers', reenter: true } },
        states: {
          Poolers: {
            meta: waitingMeta('Deletes both Poolers and waits until they are gone', 'Deleting', 'observe'),
            entry: 'deletePoolers',
            always: { guard: 'poolersGone', target: 'ApplyPolicy' },
          },
          ApplyPolicy: {
            meta: waitingMeta(
              'Delete: deletes the CNPG Cluster, Secret, ConfigMap and backup objects (never the archive in the ' +
                'bucket). Retain: removes our owner references',
              'Deleting',
              'observe',
            ),
            entry: 'applyDeletionPolicy',
            always: { guard: 'policyApplied', target: 'RemoveFinalizer' },
          },
          RemoveFinalizer: {
            meta: meta({
              description: 'Removes the finalizer; the API server then deletes the object',
              phase: 'Deleting',
              conditions: 'observe',
              ready: false,
              reconciling: true,
              stalled: false,
              deadline: false,
              requeue: 'none',
            }),
            entry: 'removeFinalizer',
            always: { guard: 'deletionRequested', target: '#postgresCluster.Deleted' },
          },
        },
      },
      Deleted: {
        type: 'final',
        meta: meta({
          description: 'The finalizer is gone; nothing more to do',
          phase: 'Deleting',
          conditions: 'observe',
          ready: false,
          reconciling: false,
          stalled: false,
          deadline: false,
          requeue: 'none',
        }),
      },
    },
  });

export type PostgresClusterMachine = typeof postgresClusterMachine;
