/**
 * Reads the events.k8s.io/v1 Events regarding one PostgresCluster or PostgresDatabase, newest first: what `pgfsm explain`
 * shows next to the state. The API server selects by `regarding.kind` and `regarding.name` (it maps
 * them onto the core Event's indexed `involvedObject` fields); the uid is checked here, so the events
 * of an earlier PostgresCluster of the same name are not mistaken for this one's.
 */
import { EventsV1Api, type EventsV1Event, type KubeConfig } from '@kubernetes/client-node';
import type { ExplainEvent } from '../explain/types.ts';
import { call } from './errors.ts';

export interface EventsRegarding {
  /** The kind of the object the Events are about; a PostgresCluster unless said. */
  kind?: 'PostgresCluster' | 'PostgresDatabase';
  namespace: string;
  name: string;
  uid?: string;
}

/** Pages keep one response small in a namespace with many events; the selector keeps them few. */
const PAGE = 250;

const iso = (time: Date | string | undefined) => {
  if (time === undefined) return null;
  const ms = new Date(time).getTime();
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
};

function toExplainEvent(e: EventsV1Event): ExplainEvent {
  return {
    type: e.type ?? '',
    reason: e.reason ?? '',
    message: e.note ?? '',
    count: e.series?.count ?? e.deprecatedCount ?? 1,
    lastSeen:
      iso(e.series?.lastObservedTime) ??
      iso(e.eventTime) ??
      iso(e.deprecatedLastTimestamp) ??
      iso(e.metadata?.creationTimestamp),
    reportingController: e.reportingController ?? null,
  };
}

/** At most `limit` events (all when undefined), newest first. */
export async function listEventsRegarding(
  kc: KubeConfig,
  regarding: EventsRegarding,
  limit?: number,
): Promise<ExplainEvent[]> {
  const api = kc.makeApiClient(EventsV1Api);
  const { namespace, name, uid, kind = 'PostgresCluster' } = regarding;
  const fieldSelector = `regarding.kind=${kind},regarding.name=${name}`;
  const items: EventsV1Event[] = [];
  let next: string | undefined;
  do {
    const page = await call({ what: `list Events regarding ${kind} ${namespace}/${name}` }, () =>
      api.listNamespacedEvent({ namespace, fieldSelector, limit: PAGE, ...(next ? { _continue: next } : {}) }),
    );
    items.push(...page.items);
    next = page.metadata?._continue || undefined;
  } while (next);
  const ours = items.filter((e) => !uid || !e.regarding?.uid || e.regarding.uid === uid).map(toExplainEvent);
  // ISO strings of one format sort as times; undated events go last.
  ours.sort((a, b) => (b.lastSeen ?? '').localeCompare(a.lastSeen ?? ''));
  return limit === undefined ? ours : ours.slice(0, limit);
}
