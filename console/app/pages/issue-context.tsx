import { call, projectPath, query } from '../api.ts';
import { Loaded, Table, useResource } from '../ui.tsx';
import type { IssueSample } from '../../../schemas/api/errors.ts';

/**
 * The context people triage an issue by (issue 40): the tag facets over its events (the getIssueTags route: the top
 * values of browser, os, device, release, environment, url, level and the events' own tags, each with its share, a
 * value linking to the issue list filtered by it), and the newest event's breadcrumbs as a timeline and its context as
 * tables (contexts, request, user, SDK and release).
 */
export function IssueTags({ slug, groupId }: { slug: string; groupId: string }) {
  const r = useResource(() => call('getIssueTags', { params: { slug, groupId }, query: { values: 5 } }), [slug, groupId]);
  return (
    <section aria-labelledby="tags-h">
      <h2 id="tags-h">Tags</h2>
      <Loaded r={r} what="the tags">
        {({ total, tags }) =>
          tags.length ? (
            <div class="tag-facets">
              {tags.map((t) => (
                <div class="tag-facet" key={t.key}>
                  <h3>
                    {t.key} <span class="muted">{t.count === total ? '' : `on ${t.count.toLocaleString()} of ${total.toLocaleString()}`}</span>
                  </h3>
                  <ul>
                    {t.values.map((v) => (
                      <li key={v.value}>
                        <a
                          href={`${projectPath(slug, '/errors')}${query({ query: `${t.key}:${/\s/.test(v.value) ? `"${v.value}"` : v.value}` })}`}
                          title={`Issues with ${t.key} ${v.value}`}
                        >
                          <span class="tag-value">{v.value}</span>
                        </a>
                        <span class="share" aria-label={`${Math.round(v.share * 100)}% of events`}>
                          <span class="bar" style={{ width: `${Math.max(2, Math.round(v.share * 100))}%` }} />
                        </span>
                        <span class="pct">{Math.round(v.share * 100)}%</span>
                      </li>
                    ))}
                  </ul>
                </div>
              ))}
            </div>
          ) : (
            <p class="muted">No tags yet: events stored before tags were kept have none.</p>
          )
        }
      </Loaded>
    </section>
  );
}

type Context = NonNullable<IssueSample['context']>;

/** The newest event's breadcrumbs and context; nothing when it was sent with none. */
export function EventContextView({ sample }: { sample: IssueSample | undefined }) {
  const c = sample?.context as Context | undefined;
  if (!c) return null;
  const at =
    typeof sample?.clientTime === 'string' ? Date.parse(sample.clientTime) : typeof sample?.receivedAt === 'string' ? Date.parse(sample.receivedAt) : NaN;
  const tables: Array<[string, Record<string, unknown>]> = [];
  const facts: Record<string, unknown> = {
    level: c.level,
    release: c.release,
    dist: c.dist,
    'SDK environment': c.clientEnvironment,
    server: c.serverName,
    SDK: c.sdk ? `${c.sdk.name}${c.sdk.version ? ` ${c.sdk.version}` : ''}` : undefined,
  };
  if (Object.values(facts).some((v) => v !== undefined)) tables.push(['event', facts]);
  if (c.user) tables.push(['user', c.user]);
  if (c.request) tables.push(['request', { method: c.request.method, url: c.request.url, ...c.request.headers }]);
  for (const [name, t] of Object.entries(c.contexts ?? {})) tables.push([name, t]);
  if (c.tags && Object.keys(c.tags).length) tables.push(['tags', c.tags]);
  return (
    <>
      {c.breadcrumbs?.length ? (
        <section aria-labelledby="crumbs-h">
          <h2 id="crumbs-h">Breadcrumbs ({c.breadcrumbs.length})</h2>
          <p class="muted">What happened before the newest event, oldest first.</p>
          <Table caption="Breadcrumbs, oldest first" class="breadcrumbs" columns={['Time', 'Category', 'Level', 'Message', 'Data']}>
            {c.breadcrumbs.map((b, n) => (
              <tr key={n} class={b.level === 'error' || b.level === 'fatal' ? 'crumb-error' : b.level === 'warning' ? 'crumb-warning' : undefined}>
                <td title={new Date(b.timestamp).toISOString()}>
                  <code>{Number.isFinite(at) ? relative(b.timestamp - at) : new Date(b.timestamp).toISOString().slice(11, 23)}</code>
                </td>
                <td>{b.category ?? b.type ?? ''}</td>
                <td>{b.level ?? ''}</td>
                <td class="crumb-message">{b.message ?? ''}</td>
                <td class="crumb-data">
                  {b.data
                    ? Object.entries(b.data).map(([k, v]) => (
                        <span key={k}>
                          <span class="muted">{k}</span> {String(v)}{' '}
                        </span>
                      ))
                    : ''}
                </td>
              </tr>
            ))}
          </Table>
        </section>
      ) : null}
      {tables.length > 0 && (
        <section aria-labelledby="context-h">
          <h2 id="context-h">Context</h2>
          <div class="context-tables">
            {tables.map(([name, rows]) => (
              <table class="table kv" key={name}>
                <caption>{name}</caption>
                <tbody>
                  {Object.entries(rows)
                    .filter(([, v]) => v !== undefined && v !== null && v !== '')
                    .map(([k, v]) => (
                      <tr key={k}>
                        <th scope="row">{k}</th>
                        <td>{String(v)}</td>
                      </tr>
                    ))}
                </tbody>
              </table>
            ))}
          </div>
        </section>
      )}
    </>
  );
}

/** A breadcrumb's time before the event: `-1.25s`, `-2m 3s`. */
function relative(ms: number): string {
  const s = Math.abs(ms) / 1000;
  const sign = ms < 0 ? '-' : '+';
  if (s < 60) return `${sign}${s.toFixed(s < 10 ? 2 : 1)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${sign}${m}m ${Math.round(s % 60)}s` : `${sign}${Math.floor(m / 60)}h ${m % 60}m`;
}
