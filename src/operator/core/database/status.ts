/**
 * A PostgresDatabase's status: a pure function of its machine's state (through its meta), the tick's
 * assessment, a failed write if any, and the previous status — projected by the same summary rule as the
 * cluster's (machines/summary.ts) and with the same condition bookkeeping (../status.ts).
 */
import type { StateMeta } from '../../../../machines/meta.ts';
import { deadlineExceeded, stateMessage, summaryOf } from '../../../../machines/summary.ts';
import type { PostgresDatabaseStatus } from '../../api/schema.ts';
import type { DatabaseAssessment } from '../../domain/database/assessment.ts';
import {
  DATABASE_COMPONENTS,
  DATABASE_CONDITION_OF,
  type DatabaseComponent,
  DatabaseReason,
} from '../../domain/database/vocabulary.ts';
import type { Settings } from '../../domain/observation.ts';
import { deadlineReason, stateReason, waitingForReason } from '../../domain/vocabulary.ts';
import { type Draft, draft, finish, toSeconds } from '../status.ts';

export interface DatabaseWriteFailure {
  component?: DatabaseComponent;
  reason: DatabaseReason;
  message: string;
}

export interface DatabaseStatusInput {
  state: string;
  meta: StateMeta<DatabaseComponent>;
  assessment: DatabaseAssessment;
  generation: number;
  previous: PostgresDatabaseStatus | undefined;
  now: number;
  since: number;
  settings: Settings;
  failure?: DatabaseWriteFailure;
}

function componentConditions(input: DatabaseStatusInput): Draft[] {
  const { meta, assessment, failure } = input;
  const stepIndex = meta.step ? DATABASE_COMPONENTS.indexOf(meta.step) : DATABASE_COMPONENTS.length;
  return DATABASE_COMPONENTS.map((c, i) => {
    const type = DATABASE_CONDITION_OF[c];
    if (failure?.component === c) return draft(type, false, failure.reason, failure.message);
    const h = assessment.health[c];
    if (meta.conditions === 'observe' || i <= stepIndex || h.state === 'Ready') {
      return draft(type, h.state === 'Ready', h.reason, h.message);
    }
    const blocker = meta.step ? DATABASE_CONDITION_OF[meta.step] : 'earlier steps';
    return draft(type, false, waitingForReason(blocker), `Blocked until ${blocker} is True: ${h.message}`);
  });
}

function summaryConditions(input: DatabaseStatusInput, components: Draft[]): Draft[] {
  const { meta, state, failure } = input;
  const activeComponent = failure?.component ?? meta.step;
  const active = activeComponent ? components[DATABASE_COMPONENTS.indexOf(activeComponent)] : undefined;
  const why = active ? active.message : stateMessage(state);
  const pastDeadline = deadlineExceeded(input);
  const summary = summaryOf(meta, pastDeadline);
  const ready = summary.ready && !failure;
  const readyReason = ready ? DatabaseReason.AllComponentsReady : (active?.reason ?? failure?.reason ?? meta.phase);
  const readyMessage = ready ? 'Database is ready' : failure && !failure.component ? failure.message : why;
  const minutes = Math.round(input.settings.progressDeadlineMs / 60_000);
  return [
    draft('Ready', ready, readyReason, readyMessage),
    draft(
      'Reconciling',
      summary.reconciling,
      summary.reconciling ? stateReason(state) : meta.phase,
      summary.reconciling ? why : stateMessage(state),
    ),
    pastDeadline
      ? draft('Stalled', true, deadlineReason(state), `No progress in ${state} for more than ${minutes} min: ${why}`)
      : draft(
          'Stalled',
          summary.stalled,
          summary.stalled ? (active?.reason ?? meta.phase) : meta.phase,
          summary.stalled ? why : stateMessage(state),
        ),
  ];
}

export function projectDatabaseStatus(input: DatabaseStatusInput): PostgresDatabaseStatus {
  const { assessment, meta, generation } = input;
  const components = componentConditions(input);
  const conditions = finish(
    [...summaryConditions(input, components), ...components],
    input.previous?.conditions,
    generation,
    input.now,
  );
  const status: PostgresDatabaseStatus = {
    observedGeneration: generation,
    phase: meta.phase,
    state: input.state,
    stateSince: toSeconds(input.since),
    conditions,
  };
  const { endpoints } = assessment;
  if (endpoints) status.endpoint = { host: endpoints.rw, port: endpoints.port, pooled: endpoints.pooled };
  if (assessment.roles.length > 0) {
    status.secrets = assessment.roles.map((r) => ({ user: r.name, secretName: r.secretName, access: r.access }));
  }
  // What it holds is what keeps it held (claims.ts): recorded on every pass that could judge it.
  const held = assessment.held;
  if (held && (held.database !== undefined || held.roles.length > 0 || held.secrets.length > 0)) {
    status.claims = {
      ...(held.database !== undefined ? { database: held.database } : {}),
      roles: held.roles,
      secrets: held.secrets,
    };
  }
  return status;
}
