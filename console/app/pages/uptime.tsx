import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { routePath } from '../../../schemas/api/client.ts';
import type { Monitor } from '../../../schemas/api/uptime.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, PageHead, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * Uptime (issue 26): the project's monitors (/v1/projects/:slug/uptime) with their state and last check, a new monitor,
 * pause and resume, delete, each monitor's latest checks, the incidents, and the public status JSON's address.
 */
const STATE_KIND: Record<Monitor['state'], string> = { up: 'ok', down: 'bad', pending: '', paused: '' };
const every = (sec: number) => (sec % 60 === 0 ? `${sec / 60} min` : `${sec} s`);

export function Uptime() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('listMonitors', { params: { slug } }), [slug]);
  const incidents = useResource(() => call('listIncidents', { params: { slug } }), [slug]);
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [intervalSec, setIntervalSec] = useState(60);
  const [isPublic, setPublic] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const act = useAction();
  const change = useAction();

  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      await call('createMonitor', { params: { slug }, body: { name: name.trim(), url: url.trim(), intervalSec, public: isPublic } });
      setName('');
      setUrl('');
      await r.reload();
    });
  };
  const setPaused = (m: Monitor, paused: boolean) =>
    void change.run(async () => {
      await call('updateMonitor', { params: { slug, id: m.id }, body: { paused } });
      await r.reload();
    });
  const remove = (m: Monitor) => {
    if (!confirm(`Delete the monitor "${m.name}", its incidents and history?`)) return;
    void change.run(async () => {
      await call('deleteMonitor', { params: { slug, id: m.id } });
      await Promise.all([r.reload(), incidents.reload()]);
    });
  };

  return (
    <div>
      <PageHead title="Uptime">
        <a href={routePath('publicStatus', { slug })} target="_blank" rel="noreferrer">
          Public status JSON
        </a>
      </PageHead>
      <ErrorNote error={change.error} />
      <Loaded r={r} what="monitors">
        {(d) =>
          d.monitors.length ? (
            <Table caption="Monitors" columns={['Monitor', 'State', 'Last check', 'Every', 'Status page', '', '', '']}>
              {d.monitors.flatMap((m) => [
                <tr key={m.id}>
                  <td>
                    <strong>{m.name}</strong>
                    <div class="muted">{m.url}</div>
                  </td>
                  <td>
                    <Badge kind={STATE_KIND[m.state]}>{m.state}</Badge>
                  </td>
                  <td>
                    {m.lastCheck ? (
                      <>
                        {m.lastCheck.ok
                          ? `${m.lastCheck.status} in ${m.lastCheck.ms} ms`
                          : `${m.lastCheck.error}${m.lastCheck.status ? ` (${m.lastCheck.status})` : ''}`}{' '}
                        <span class="muted">
                          <Time iso={m.lastCheck.at} />
                        </span>
                      </>
                    ) : (
                      <span class="muted">not yet</span>
                    )}
                  </td>
                  <td>{every(m.intervalSec)}</td>
                  <td>{m.public ? 'public' : <span class="muted">private</span>}</td>
                  <td>
                    <button type="button" class="small" aria-expanded={open === m.id} onClick={() => setOpen(open === m.id ? null : m.id)}>
                      {open === m.id ? 'Hide checks' : 'Checks'}
                    </button>
                  </td>
                  <td>
                    <button
                      type="button"
                      class="small"
                      onClick={() => setPaused(m, !m.paused)}
                      disabled={change.busy}
                      aria-label={`${m.paused ? 'Resume' : 'Pause'} ${m.name}`}
                    >
                      {m.paused ? 'Resume' : 'Pause'}
                    </button>
                  </td>
                  <td>
                    <button type="button" class="danger small" onClick={() => remove(m)} disabled={change.busy} aria-label={`Delete ${m.name}`}>
                      Delete
                    </button>
                  </td>
                </tr>,
                open === m.id && (
                  <tr key={`${m.id}-checks`} class="expanded">
                    <td colSpan={8}>
                      <LatestChecks slug={slug} monitor={m} />
                    </td>
                  </tr>
                ),
              ])}
            </Table>
          ) : (
            <p class="muted">No monitor yet. The live site gets one when its first production deploy goes live.</p>
          )
        }
      </Loaded>
      <section aria-labelledby="incidents-h" class="panel">
        <h2 id="incidents-h">Incidents</h2>
        <Loaded r={incidents} what="incidents">
          {(d) =>
            d.incidents.length ? (
              <Table caption="Incidents, open ones first" columns={['Monitor', 'Started', 'Ended', 'Cause']}>
                {d.incidents.map((i) => (
                  <tr key={i.id}>
                    <td>{i.monitor}</td>
                    <td>
                      <Time iso={i.startedAt} />
                    </td>
                    <td>{i.endedAt ? <Time iso={i.endedAt} /> : <Badge kind="bad">ongoing</Badge>}</td>
                    <td>
                      {i.cause.error}
                      {i.cause.detail ? <span class="muted"> {i.cause.detail}</span> : null}
                    </td>
                  </tr>
                ))}
              </Table>
            ) : (
              <p class="muted">No incident.</p>
            )
          }
        </Loaded>
      </section>
      <section aria-labelledby="new-monitor" class="panel">
        <h2 id="new-monitor">New monitor</h2>
        <form onSubmit={create} class="stack">
          <div class="row">
            <label>
              Name
              <input name="monitorName" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
            <label>
              URL <span class="muted">(https)</span>
              <input
                name="monitorUrl"
                type="url"
                required
                placeholder="https://example.com/health"
                value={url}
                onInput={(e) => setUrl(e.currentTarget.value)}
              />
            </label>
            <label>
              Check every
              <select name="interval" value={intervalSec} onChange={(e) => setIntervalSec(Number(e.currentTarget.value))}>
                {[30, 60, 300, 600, 1800, 3600].map((s) => (
                  <option key={s} value={s}>
                    {every(s)}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <label class="check">
            <input type="checkbox" checked={isPublic} onChange={(e) => setPublic(e.currentTarget.checked)} />
            Show it on the public status page
          </label>
          <ErrorNote error={act.error} />
          <div class="row">
            <button type="submit" disabled={act.busy}>
              Create monitor
            </button>
          </div>
        </form>
      </section>
    </div>
  );
}

function LatestChecks({ slug, monitor }: { slug: string; monitor: Monitor }) {
  const r = useResource(() => call('listMonitorChecks', { params: { slug, id: monitor.id }, query: { limit: 20 } }), [slug, monitor.id]);
  return (
    <Loaded r={r} what="checks">
      {(d) =>
        d.checks.length ? (
          <Table caption={`Latest checks of ${monitor.name}`} columns={['When', 'Result', 'Status', 'Time', 'Detail']}>
            {d.checks.map((c) => (
              <tr key={c.at}>
                <td>
                  <Time iso={c.at} />
                </td>
                <td>{c.ok ? <Badge kind="ok">up</Badge> : <Badge kind="bad">{c.error ?? 'failed'}</Badge>}</td>
                <td>{c.status ?? '-'}</td>
                <td>{c.ms} ms</td>
                <td class="muted">{c.detail ?? ''}</td>
              </tr>
            ))}
          </Table>
        ) : (
          <p class="muted">No check yet.</p>
        )
      }
    </Loaded>
  );
}
