/**
 * A write the API server refused at admission, as the pass handles it: the refusal to remember (only for
 * the writes that carry the user's spec), and the pass's events once its tick is taken again knowing it.
 */
import type { Effect } from '../domain/effects.ts';
import { isRejectable, type RejectedWrite, rejectionOf } from '../domain/rejections.ts';
import { classOf, refusalTextOf } from './errors.ts';
import type { Execution } from './execute.ts';

/** The refusal to remember when the write that failed carried the spec and the API server refused it. */
export function refusalOf(failure: Execution['failure']): RejectedWrite | undefined {
  if (!failure || classOf(failure.error) !== 'rejected') return undefined;
  const { effect, error } = failure;
  if (effect.type !== 'apply' || !isRejectable(effect.component)) return undefined;
  return rejectionOf(effect.component, effect.object, refusalTextOf(error));
}

/**
 * The execution with the announcements of the tick taken again: the reports of the writes that succeeded
 * stand, the first tick's announcements give way (the failure state announces itself), and no failure
 * is left to report or retry.
 */
export function withAnnouncementsOf(execution: Execution, effects: Effect[]): Execution {
  const announcements = effects.flatMap((e) => (e.type === 'event' ? [{ event: e.event, announcement: true }] : []));
  return {
    events: [...execution.events.filter((e) => !e.announcement), ...announcements],
    writes: execution.writes,
    answers: execution.answers,
    cluster: execution.cluster,
  };
}
