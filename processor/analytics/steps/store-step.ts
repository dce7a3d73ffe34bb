import { createHash } from 'node:crypto';
import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import type { StoredAnalyticsEvent } from '../../../schemas/analytics-event.ts';
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

export function analyticsRow(e: StoredAnalyticsEvent & { originHost: string | null }): Record<string, unknown> {
  const properties: Record<string, string> = {};
  for (const [k, v] of Object.entries(e.properties)) properties[k] = propertyText(v);
  return {
    project_id: e.projectId,
    event_id: e.uuid,
    event: e.event,
    distinct_id: e.distinctId,
    timestamp: chTime(e.timestamp),
    received_at: chTime(e.receivedAt),
    environment: e.environment,
    session_id: e.sessionId ?? '',
    path: e.path ?? '',
    origin_host: e.originHost ?? '',
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
