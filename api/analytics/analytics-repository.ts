import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { BreakdownRow, CountPoint, Interval, RawEvent, TopEvent, Totals } from '../../schemas/api/analytics.ts';

/**
 * Reading analytics back (ClickHouse `analytics_events`, written by processor/analytics/). Every query reads FINAL,
 * so an event stored twice (a re-delivery) counts once, and is bounded by a time range. Property values are stored
 * as text (strings as they are, anything else as JSON), and a filter compares that text.
 */
export interface AnalyticsRange {
  projectId: string;
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  event?: string;
  /** Only events whose property `key` has the text `value`. */
  property?: { key: string; value: string };
}

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const isoOf = (t: string) => `${t.replace(' ', 'T')}Z`;

function where(r: AnalyticsRange): { sql: string; params: Record<string, unknown> } {
  const parts = ['project_id = {p:String}', "timestamp >= {from:DateTime64(3, 'UTC')}", "timestamp < {to:DateTime64(3, 'UTC')}"];
  const params: Record<string, unknown> = { p: r.projectId, from: chTime(r.from), to: chTime(r.to) };
  if (r.event !== undefined) {
    parts.push('event = {event:String}');
    params.event = r.event;
  }
  if (r.property) {
    parts.push('properties[{pk:String}] = {pv:String}');
    params.pk = r.property.key;
    params.pv = r.property.value;
  }
  return { sql: parts.join(' AND '), params };
}

export const analyticsRepository = {
  /**
   * Events and distinct users per hour or day (UTC) over the range, empty buckets included, and over the whole range:
   * one query (grouping sets: per bucket, and the empty set for the totals), so the totals and the buckets are read
   * from the same data. Two queries disagreed while events were arriving (totals 5, every bucket 0).
   */
  async trends(analytics: AnalyticalStore, r: AnalyticsRange, interval: Interval): Promise<{ series: CountPoint[]; totals: Totals }> {
    const w = where(r);
    const fn = interval === 'hour' ? 'toStartOfHour' : 'toStartOfDay';
    const rows = await analytics.query<{ total: number | string; bucket: string; events: number | string; users: number | string }>(
      `SELECT grouping(bucket) AS total, toString(${fn}(timestamp)) AS bucket, count() AS events, uniqExact(distinct_id) AS users
         FROM analytics_events FINAL WHERE ${w.sql} GROUP BY GROUPING SETS ((bucket), ()) ORDER BY total, bucket
       SETTINGS force_grouping_standard_compatibility = 1`,
      w.params,
    );
    // grouping() as standard SQL has it (the setting): 1 on the empty set's row, the totals (its bucket reads as 1970).
    const sum = rows.find((x) => Number(x.total) === 1);
    const totals = { events: Number(sum?.events ?? 0), uniqueUsers: Number(sum?.users ?? 0) };
    const found = new Map(rows.filter((x) => x !== sum).map((x) => [isoOf(x.bucket.length === 19 ? `${x.bucket}.000` : x.bucket), x]));
    const step = interval === 'hour' ? 3_600_000 : 86_400_000;
    const out: CountPoint[] = [];
    for (let t = Math.floor(r.from / step) * step; t < r.to && out.length < 10_000; t += step) {
      const key = new Date(t).toISOString();
      const hit = found.get(key);
      out.push({ bucket: key, events: Number(hit?.events ?? 0), uniqueUsers: Number(hit?.users ?? 0) });
    }
    return { series: out, totals };
  },

  /** The most frequent event names in the range. */
  async topEvents(analytics: AnalyticalStore, r: AnalyticsRange, limit: number): Promise<TopEvent[]> {
    const w = where(r);
    const rows = await analytics.query<{ event: string; events: number | string; users: number | string }>(
      `SELECT event, count() AS events, uniqExact(distinct_id) AS users FROM analytics_events FINAL WHERE ${w.sql}
        GROUP BY event ORDER BY events DESC, event LIMIT {limit:UInt32}`,
      { ...w.params, limit },
    );
    return rows.map((x) => ({ event: x.event, events: Number(x.events), uniqueUsers: Number(x.users) }));
  },

  /** One event's counts by the values of one property (`null` for events without it). */
  async breakdown(analytics: AnalyticalStore, r: AnalyticsRange & { event: string }, key: string, limit: number): Promise<BreakdownRow[]> {
    const w = where(r);
    const rows = await analytics.query<{ value: string; has: number | string; events: number | string; users: number | string }>(
      `SELECT properties[{bk:String}] AS value, mapContains(properties, {bk:String}) AS has, count() AS events, uniqExact(distinct_id) AS users
         FROM analytics_events FINAL WHERE ${w.sql} GROUP BY value, has ORDER BY events DESC, has DESC, value LIMIT {limit:UInt32}`,
      { ...w.params, bk: key, limit },
    );
    return rows.map((x) => ({ value: Number(x.has) ? x.value : null, events: Number(x.events), uniqueUsers: Number(x.users) }));
  },

  /** The newest events, newest first. */
  async latestEvents(analytics: AnalyticalStore, r: AnalyticsRange, limit: number): Promise<RawEvent[]> {
    const w = where(r);
    const rows = await analytics.query<{
      event_id: string;
      event: string;
      distinct_id: string;
      ts: string;
      rcv: string;
      environment: string;
      session_id: string;
      path: string;
      properties: Record<string, string>;
    }>(
      `SELECT event_id, event, distinct_id, toString(timestamp) AS ts, toString(received_at) AS rcv, environment, session_id, path, properties
         FROM analytics_events FINAL WHERE ${w.sql} ORDER BY timestamp DESC, event_id LIMIT {limit:UInt32}`,
      { ...w.params, limit },
    );
    return rows.map((x) => ({
      uuid: x.event_id,
      event: x.event,
      distinctId: x.distinct_id,
      timestamp: isoOf(x.ts),
      receivedAt: isoOf(x.rcv),
      environment: x.environment,
      sessionId: x.session_id || null,
      path: x.path || null,
      properties: x.properties ?? {},
    }));
  },
};
