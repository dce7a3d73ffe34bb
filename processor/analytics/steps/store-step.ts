import { createHash } from 'node:crypto';
import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import type { StampedAnalyticsEvent, StoredAnalyticsEvent } from '../../../schemas/analytics-event.ts';
import { chTime } from '../../time-text.ts';

/**
 * Analytics events in ClickHouse `analytics_events`. The table is keyed by the event's uuid (ReplacingMergeTree) and
 * the insert carries a dedup token derived from the uuids, so a re-delivered batch writes the same rows again and
 * no more, on chDB and ClickHouse alike. Property values are stored as text in a Map (strings as they are, anything
 * else as JSON), so queries filter on them: `properties['plan'] = 'pro'`.
 */
export const ANALYTICS_EVENTS_TABLE = 'analytics_events';

export function propertyText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null');
}

/**
 * An event's row, built straight from the (scrubbed) event and its batch's stamp: the one copy of the event the
 * pipeline makes after scrubbing.
 */
export function analyticsRow(
  e: StampedAnalyticsEvent,
  stamp: { projectId: string; receivedAt: number; originHost: string | null },
  environment: StoredAnalyticsEvent['environment'],
): Record<string, unknown> {
  const properties: Record<string, string> = {};
  const from = e.properties;
  for (const k in from) properties[k] = propertyText(from[k]);
  return {
    project_id: stamp.projectId,
    event_id: e.uuid,
    event: e.event,
    distinct_id: e.distinctId,
    timestamp: chTime(e.timestamp),
    received_at: chTime(stamp.receivedAt),
    environment,
    session_id: e.sessionId ?? '',
    path: e.path ?? '',
    origin_host: stamp.originHost ?? '',
    properties,
  };
}

export function createStoreStep(deps: { analytics: AnalyticalStore }) {
  return async function storeStep(rows: Array<Record<string, unknown>>): Promise<void> {
    if (!rows.length) return;
    const key = (r: Record<string, unknown>) => `${r.project_id as string}/${r.event_id as string}`;
    const sorted = [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    const dedupToken = 'ana-' + createHash('sha256').update(sorted.map(key).join(',')).digest('hex');
    await deps.analytics.insert(ANALYTICS_EVENTS_TABLE, sorted, { dedupToken });
  };
}
