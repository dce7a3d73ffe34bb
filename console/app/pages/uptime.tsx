import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { routePath } from '../../../schemas/api/client.ts';
import type { CheckIn, Heartbeat, Monitor } from '../../../schemas/api/uptime.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, PageHead, Table, Time, useAction, useResource } from '../ui.tsx';
import { WrittenStatus } from './status-incidents.tsx';
import { StatusSubscribers } from './status-subscribers.tsx';

/**
 * Uptime (issue 26): the project's monitors (/v1/projects/:slug/uptime) with their state and last check, a new monitor,
 * pause and resume, delete, each monitor's latest checks, the incidents, and the public status JSON's address. Cron
 * jobs' heartbeats (issue 40) in a table of their own: schedule, last check-in, when the next is due, recent check-ins.
 */
const STATE_KIND: Record<Monitor['state'], string> = { up: 'ok', down: 'bad', pending: '', paused: '' };
const CHECK_IN_KIND: Record<CheckIn['status'], string> = { ok: 'ok', error: 'bad', timeout: 'bad', missed: 'bad', in_progress: '' };
const every = (sec: number) => (sec % 60 === 0 ? `${sec / 60} min` : `${sec} s`);
const scheduleText = (h: Heartbeat) =>
  h.schedule.type === 'crontab'
    ? `${h.schedule.value}${h.timezone === 'UTC' ? '' : ` (${h.timezone})`}`
    : `every ${h.schedule.value} ${h.schedule.unit}${h.schedule.value === 1 ? '' : 's'}`;
const statusText = (s: CheckIn['status']) => s.replace('_', ' ');
const at = (iso: string) => <time dateTime={iso}>{new Date(iso).toLocaleString()}</time>;

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
  const [jobSlug, setJobSlug] = useState('');
  const [crontab, setCrontab] = useState('0 * * * *');
  const addHeartbeat = useAction();
  const createHeartbeat = (e: Event) => {
    e.preventDefault();
    void addHeartbeat.run(async () => {
      await call('createMonitor', {
        params: { slug },
        body: { kind: 'heartbeat', slug: jobSlug.trim(), schedule: { type: 'crontab', value: crontab.trim() } },
      });
      setJobSlug('');
      await r.reload();
    });
  };
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
          d.monitors.some((m) => m.kind === 'url') ? (
            <Table caption="Monitors" columns={['Monitor', 'State', 'Last check', 'Every', 'Status page', '', '', '']}>
              {d.monitors
                .filter((m) => m.kind === 'url')
                .flatMap((m) => [
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
            <p class="muted">
              No monitor yet. The live site gets one, shown on the public status, when its first production deploy goes live (on one machine, start the service
              with <code>ALLOW_LOCAL_OUTBOUND=true</code> so it can check <code>localhost</code> sites).
            </p>
          )
        }
      </Loaded>
      <section aria-labelledby="heartbeats-h" class="panel">
        <h2 id="heartbeats-h">Cron jobs</h2>
        <p class="muted">
          Heartbeats of scheduled jobs: Sentry's <code>withMonitor</code> / <code>captureCheckIn</code> with a <code>monitorConfig</code> make them, or{' '}
          <code>GET /api/&lt;project&gt;/cron/&lt;job&gt;/&lt;DSN key&gt;/?status=ok</code>. A run that does not come by its time and margin is missed, one that
          runs past its maximum runtime times out.
        </p>
        <Loaded r={r} what="heartbeats">
          {(d) =>
            d.monitors.some((m) => m.kind === 'heartbeat') ? (
              <Table caption="Cron jobs" columns={['Job', 'State', 'Schedule', 'Last check-in', 'Next expected', '', '', '']}>
                {d.monitors
                  .filter((m) => m.kind === 'heartbeat' && m.heartbeat)
                  .flatMap((m) => {
                    const h = m.heartbeat!;
                    return [
                      <tr key={m.id}>
                        <td>
                          <strong>{m.name}</strong>
                          {m.name !== h.slug ? <div class="muted">{h.slug}</div> : null}
                        </td>
                        <td>
                          <Badge kind={STATE_KIND[m.state]}>{m.state}</Badge>
                          {m.state === 'down' && m.lastCheck?.error ? <div class="muted">{m.lastCheck.error}</div> : null}
                        </td>
                        <td>
                          <code>{scheduleText(h)}</code>
                          <div class="muted">
                            margin {h.checkinMarginMin} min, max runtime {h.maxRuntimeMin} min
                          </div>
                        </td>
                        <td>
                          {h.lastCheckIn ? (
                            <>
                              <Badge kind={CHECK_IN_KIND[h.lastCheckIn.status]}>{statusText(h.lastCheckIn.status)}</Badge>{' '}
                              <span class="muted">
                                <Time iso={h.lastCheckIn.at} />
                              </span>
                            </>
                          ) : (
                            <span class="muted">not yet</span>
                          )}
                        </td>
                        <td>{h.nextExpectedAt ? at(h.nextExpectedAt) : <span class="muted">paused</span>}</td>
                        <td>
                          <button type="button" class="small" aria-expanded={open === m.id} onClick={() => setOpen(open === m.id ? null : m.id)}>
                            {open === m.id ? 'Hide check-ins' : 'Check-ins'}
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
                        <tr key={`${m.id}-check-ins`} class="expanded">
                          <td colSpan={8}>
                            <LatestCheckIns slug={slug} monitor={m} />
                          </td>
                        </tr>
                      ),
                    ];
                  })}
              </Table>
            ) : (
              <p class="muted">No cron job yet.</p>
            )
          }
        </Loaded>
        <form onSubmit={createHeartbeat} class="row">
          <label>
            Job
            <input
              name="heartbeatSlug"
              required
              maxLength={50}
              pattern="[a-z0-9_\-]+"
              placeholder="nightly-backup"
              value={jobSlug}
              onInput={(e) => setJobSlug(e.currentTarget.value)}
            />
          </label>
          <label>
            Crontab <span class="muted">(UTC)</span>
            <input name="crontab" required maxLength={128} value={crontab} onInput={(e) => setCrontab(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={addHeartbeat.busy}>
            Add cron job
          </button>
        </form>
        <ErrorNote error={addHeartbeat.error} />
      </section>
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
      <WrittenStatus slug={slug} monitors={r.data?.monitors ?? []} />
      <StatusSubscribers slug={slug} />
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

function LatestCheckIns({ slug, monitor }: { slug: string; monitor: Monitor }) {
  const r = useResource(() => call('listMonitorCheckIns', { params: { slug, id: monitor.id }, query: { limit: 20 } }), [slug, monitor.id]);
  return (
    <Loaded r={r} what="check-ins">
      {(d) =>
        d.checkIns.length ? (
          <Table caption={`Latest check-ins of ${monitor.name}`} columns={['Started', 'Status', 'Duration', 'Environment', 'Release']}>
            {d.checkIns.map((c) => (
              <tr key={c.id}>
                <td>
                  <Time iso={c.startedAt} />
                </td>
                <td>
                  <Badge kind={CHECK_IN_KIND[c.status]}>{statusText(c.status)}</Badge>
                </td>
                <td>{c.durationMs === null ? '-' : c.durationMs < 1000 ? `${c.durationMs} ms` : `${(c.durationMs / 1000).toFixed(1)} s`}</td>
                <td class="muted">{c.environment ?? ''}</td>
                <td class="muted">{c.release ?? ''}</td>
              </tr>
            ))}
          </Table>
        ) : (
          <p class="muted">No check-in yet.</p>
        )
      }
    </Loaded>
  );
}
