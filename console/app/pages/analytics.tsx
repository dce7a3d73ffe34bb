import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call } from '../api.ts';
import { Badge, Loaded, PageHead, Table, Time, useResource, countOf } from '../ui.tsx';
import { clipped } from '../text.ts';
import type { CountPoint } from '../../../schemas/api/analytics.ts';

/**
 * Product analytics (the analyticsTrends, analyticsTopEvents and analyticsEvents routes): events and unique users over
 * a range, the most frequent events (a click filters by one), and the newest raw events.
 */
const RANGES = {
  '24h': { label: 'Last 24 hours', ms: 24 * 3600_000, interval: 'hour' },
  '7d': { label: 'Last 7 days', ms: 7 * 86400_000, interval: 'day' },
  '30d': { label: 'Last 30 days', ms: 30 * 86400_000, interval: 'day' },
} as const;
type RangeKey = keyof typeof RANGES;
/** A property value is shown up to this many characters (the whole of it on hover): posthog-js's URLs and tokens run to thousands. */
const PROPERTY_SHOWN = 200;

function caption(series: CountPoint[], interval: 'hour' | 'day', max: number): string {
  const when = (iso: string) => new Date(iso).toLocaleString([], interval === 'hour' ? { dateStyle: 'medium', timeStyle: 'short' } : { dateStyle: 'medium' });
  const span = series.length ? `, ${when(series[0]!.bucket)} to ${when(series[series.length - 1]!.bucket)}` : '';
  return `Events per ${interval}${span}; peak ${max.toLocaleString()}`;
}

/** Up to `n` evenly spaced indexes of `length` items, the first and the last included. */
function ticks(length: number, n: number): number[] {
  if (length <= n) return Array.from({ length }, (_, i) => i);
  const step = (length - 1) / (n - 1);
  return Array.from({ length: n }, (_, i) => Math.round(i * step));
}

/**
 * Events per bucket as bars over axes: the y axis says the scale (0, half, peak), the x axis the buckets' times
 * (every one when few, else about six), and an empty bucket keeps a faint stub on the baseline, so a week with
 * events on one day still reads as seven days.
 */
function Bars({ series, interval }: { series: CountPoint[]; interval: 'hour' | 'day' }) {
  const max = Math.max(1, ...series.map((b) => b.events));
  const w = 100 / Math.max(1, series.length);
  const label = (iso: string) =>
    new Date(iso).toLocaleString([], interval === 'hour' ? { hour: '2-digit', minute: '2-digit' } : { month: 'short', day: 'numeric' });
  const shown = new Set(ticks(series.length, interval === 'hour' ? 7 : 8));
  return (
    <figure class="chart">
      <div class="chart-body">
        <div class="y-axis" aria-hidden="true">
          <span>{max.toLocaleString()}</span>
          <span>{Math.round(max / 2).toLocaleString()}</span>
          <span>0</span>
        </div>
        <svg viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label={`Events per ${interval}`}>
          <line class="grid" x1="0" x2="100" y1="20" y2="20" />
          <line class="baseline" x1="0" x2="100" y1="40" y2="40" />
          {series.map((b, i) => {
            const h = b.events ? Math.max(0.8, (b.events / max) * 40) : 0.6;
            return (
              <rect key={b.bucket} class={b.events ? 'bar' : 'bar empty'} x={i * w + w * 0.12} y={40 - h} width={w * 0.76} height={h}>
                <title>{`${new Date(b.bucket).toLocaleString()}: ${countOf(b.events, 'event')}, ${countOf(b.uniqueUsers, 'user')}`}</title>
              </rect>
            );
          })}
        </svg>
      </div>
      <div class="x-axis" aria-hidden="true">
        {series.map((b, i) => (
          <span key={b.bucket} style={{ width: `${w}%` }}>
            {shown.has(i) ? label(b.bucket) : ''}
          </span>
        ))}
      </div>
      <figcaption class="muted">{caption(series, interval, max)}</figcaption>
    </figure>
  );
}

export function Analytics() {
  const { params } = useRoute();
  const slug = params.slug!;
  const [range, setRange] = useState<RangeKey>('7d');
  const [event, setEvent] = useState('');
  // The window ends at the next whole hour, so a reload within the hour asks the same question.
  const to = new Date(Math.ceil(Date.now() / 3600_000) * 3600_000);
  const from = new Date(to.getTime() - RANGES[range].ms);
  const q = { from: from.toISOString(), to: to.toISOString() };
  const trends = useResource(
    () => call('analyticsTrends', { params: { slug }, query: { ...q, interval: RANGES[range].interval, event } }),
    [slug, range, event],
  );
  const top = useResource(() => call('analyticsTopEvents', { params: { slug }, query: { ...q, limit: 10 } }), [slug, range]);
  const raw = useResource(() => call('analyticsEvents', { params: { slug }, query: { ...q, event, limit: 20 } }), [slug, range, event]);
  return (
    <div>
      <PageHead title="Analytics" />
      <div class="filters">
        <label>
          Range
          <select value={range} onChange={(e) => setRange(e.currentTarget.value as RangeKey)}>
            {Object.entries(RANGES).map(([k, r]) => (
              <option key={k} value={k}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event <span class="muted">(empty: every event)</span>
          <input name="event" maxLength={200} value={event} onChange={(e) => setEvent(e.currentTarget.value.trim())} />
        </label>
      </div>
      <Loaded r={trends} what="trends">
        {(t) => (
          <>
            <div class="tiles">
              <div class="tile">
                <span class="big">{t.totals.events.toLocaleString()}</span>
                <span>events{event ? ` named ${event}` : ''}</span>
              </div>
              <div class="tile">
                <span class="big">{t.totals.uniqueUsers.toLocaleString()}</span>
                <span>unique users</span>
              </div>
            </div>
            <Bars series={t.series} interval={t.interval} />
          </>
        )}
      </Loaded>
      <section aria-labelledby="top-h">
        <h2 id="top-h">Top events</h2>
        <Loaded r={top} what="top events">
          {(d) =>
            d.data.length === 0 ? (
              <p class="empty">No events in this range. cx.capture() and the Node SDK's capture() send them.</p>
            ) : (
              <Table caption="The most frequent events in the range" columns={['Event', 'Events', 'Unique users']}>
                {d.data.map((e) => (
                  <tr key={e.event}>
                    <td>
                      <button type="button" class="link" onClick={() => setEvent(e.event)} aria-pressed={event === e.event}>
                        {e.event}
                      </button>
                    </td>
                    <td>{e.events.toLocaleString()}</td>
                    <td>{e.uniqueUsers.toLocaleString()}</td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Loaded>
      </section>
      <section aria-labelledby="raw-h">
        <h2 id="raw-h">Newest events</h2>
        <Loaded r={raw} what="events">
          {(d) =>
            d.data.length === 0 ? (
              <p class="empty">No events.</p>
            ) : (
              <Table caption="The newest events, newest first" class="events" columns={['When', 'Event', 'User', 'Environment', 'Path', 'Properties']}>
                {d.data.map((e) => (
                  <tr key={e.uuid}>
                    <td>
                      <Time iso={e.timestamp} />
                    </td>
                    <td>
                      <code>{e.event}</code>
                    </td>
                    <td>{e.distinctId}</td>
                    <td>
                      <Badge kind={`env ${e.environment}`}>{e.environment}</Badge>
                    </td>
                    <td>{e.path ? <code>{e.path}</code> : ''}</td>
                    <td class="context">
                      {Object.entries(e.properties).map(([k, v]) => (
                        <span key={k}>
                          <span class="muted">{k}</span>
                          {'\u00a0'}
                          <span title={v.length > PROPERTY_SHOWN ? v : undefined}>{clipped(v, PROPERTY_SHOWN)}</span>{' '}
                        </span>
                      ))}
                    </td>
                  </tr>
                ))}
              </Table>
            )
          }
        </Loaded>
      </section>
    </div>
  );
}
