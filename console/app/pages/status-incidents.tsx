import { useState } from 'preact/hooks';
import { routePath } from '../../../schemas/api/client.ts';
import type { Maintenance, StatusIncident } from '../../../schemas/api/status-incidents.ts';
import type { Monitor } from '../../../schemas/api/uptime.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * Incidents and maintenance people write (issue 43), a panel of the Uptime page: compose an incident (title, impact,
 * affected monitors, first update), post updates to open ones until one resolves it, schedule maintenance (start,
 * end, covered monitors, message) and cancel it, and preview the public status page that shows all of it.
 */
const IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
const STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
const IMPACT_KIND: Record<StatusIncident['impact'], string> = { none: '', minor: 'busy', major: 'bad', critical: 'bad' };
const STATE_KIND: Record<Maintenance['state'], string> = { scheduled: 'busy', in_progress: 'bad', completed: 'ok', cancelled: '' };
/** A datetime-local field's value (local time, no zone) as an ISO instant; and an instant as such a value. */
const instantOf = (local: string) => new Date(local).toISOString();
const localOf = (ms: number) => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
};

function MonitorChoice({ monitors, chosen, onFlip, legend }: { monitors: Monitor[]; chosen: Set<string>; onFlip: (id: string) => void; legend: string }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {monitors.length ? (
        monitors.map((m) => (
          <label class="check" key={m.id}>
            <input type="checkbox" name={`monitor-${m.id}`} checked={chosen.has(m.id)} onChange={() => onFlip(m.id)} />
            {m.name}
            {m.public ? null : <span class="muted"> (private: not shown on the page)</span>}
          </label>
        ))
      ) : (
        <p class="muted">No monitor yet.</p>
      )}
    </fieldset>
  );
}

const flipped = (s: Set<string>, id: string) => {
  const next = new Set(s);
  if (!next.delete(id)) next.add(id);
  return next;
};

function IncidentUpdates({ slug, incident, onDone }: { slug: string; incident: StatusIncident; onDone: () => Promise<void> }) {
  const [status, setStatus] = useState<StatusIncident['status']>(incident.status === 'investigating' ? 'identified' : incident.status);
  const [message, setMessage] = useState('');
  const act = useAction();
  const post = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      await call('addStatusIncidentUpdate', { params: { slug, incidentId: incident.id }, body: { status, message: message.trim() } });
      setMessage('');
      await onDone();
    });
  };
  return (
    <article class="panel" aria-label={incident.title}>
      <h3>
        {incident.title} <Badge kind={IMPACT_KIND[incident.impact]}>{incident.impact} impact</Badge>{' '}
        <Badge kind={incident.status === 'resolved' ? 'ok' : 'bad'}>{incident.status}</Badge>
        {incident.kind === 'automatic' ? <span class="muted"> (on an automatic incident)</span> : null}
      </h3>
      <ol class="stack">
        {incident.updates.map((u) => (
          <li key={u.id}>
            <strong>{u.status}</strong> <Time iso={u.at} />: {u.message}
          </li>
        ))}
      </ol>
      {incident.status !== 'resolved' && (
        <form onSubmit={post} class="row-form">
          <label>
            Status
            <select name="updateStatus" value={status} onChange={(e) => setStatus(e.currentTarget.value as StatusIncident['status'])}>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            Update
            <textarea name="updateMessage" required maxLength={5000} rows={2} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={act.busy}>
            {status === 'resolved' ? 'Resolve' : 'Post update'}
          </button>
        </form>
      )}
      <ErrorNote error={act.error} />
    </article>
  );
}

export function WrittenStatus({ slug, monitors }: { slug: string; monitors: Monitor[] }) {
  const incidents = useResource(() => call('listIncidents', { params: { slug } }), [slug]);
  const windows = useResource(() => call('listMaintenance', { params: { slug } }), [slug]);
  const [title, setTitle] = useState('');
  const [impact, setImpact] = useState<StatusIncident['impact']>('minor');
  const [message, setMessage] = useState('');
  const [affected, setAffected] = useState<Set<string>>(new Set());
  const [wTitle, setWTitle] = useState('');
  const [wMessage, setWMessage] = useState('');
  const [covered, setCovered] = useState<Set<string>>(new Set());
  const [startsAt, setStartsAt] = useState(() => localOf(Date.now() + 3_600_000));
  const [endsAt, setEndsAt] = useState(() => localOf(Date.now() + 2 * 3_600_000));
  const compose = useAction();
  const schedule = useAction();
  const cancel = useAction();

  const publish = (e: Event) => {
    e.preventDefault();
    void compose.run(async () => {
      await call('createStatusIncident', { params: { slug }, body: { title: title.trim(), impact, monitorIds: [...affected], message: message.trim() } });
      setTitle('');
      setImpact('minor');
      setMessage('');
      setAffected(new Set());
      await incidents.reload();
    });
  };
  const plan = (e: Event) => {
    e.preventDefault();
    void schedule.run(async () => {
      await call('scheduleMaintenance', {
        params: { slug },
        body: { title: wTitle.trim(), message: wMessage.trim(), monitorIds: [...covered], startsAt: instantOf(startsAt), endsAt: instantOf(endsAt) },
      });
      setWTitle('');
      setWMessage('');
      setCovered(new Set());
      await windows.reload();
    });
  };
  const cancelWindow = (w: Maintenance) => {
    if (!confirm(`Cancel the maintenance "${w.title}"?`)) return;
    void cancel.run(async () => {
      await call('cancelMaintenance', { params: { slug, maintenanceId: w.id } });
      await windows.reload();
    });
  };

  return (
    <section aria-labelledby="written-h" class="panel">
      <h2 id="written-h">Incidents and maintenance</h2>
      <p class="muted">
        What you write here shows on the public status page and goes to its subscribers.{' '}
        <a href={routePath('statusPage', { slug })} target="_blank" rel="noreferrer">
          Preview the page
        </a>
      </p>
      <h3>Written incidents</h3>
      <Loaded r={incidents} what="incidents">
        {(d) =>
          d.written.length ? (
            d.written.map((i) => <IncidentUpdates key={i.id} slug={slug} incident={i} onDone={incidents.reload} />)
          ) : (
            <p class="muted">None.</p>
          )
        }
      </Loaded>
      <form onSubmit={publish} class="stack" aria-label="New incident">
        <h3>New incident</h3>
        <div class="row-form">
          <label>
            Title
            <input name="incidentTitle" required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
          </label>
          <label>
            Impact
            <select name="incidentImpact" value={impact} onChange={(e) => setImpact(e.currentTarget.value as StatusIncident['impact'])}>
              {IMPACTS.map((i) => (
                <option key={i} value={i}>
                  {i}
                </option>
              ))}
            </select>
          </label>
        </div>
        <MonitorChoice legend="Affected monitors" monitors={monitors} chosen={affected} onFlip={(id) => setAffected((s) => flipped(s, id))} />
        <label>
          What is happening <span class="muted">(the first update: investigating)</span>
          <textarea name="incidentMessage" required maxLength={5000} rows={3} value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={compose.busy}>
          Publish incident
        </button>
        <ErrorNote error={compose.error} />
      </form>

      <h3>Maintenance</h3>
      <Loaded r={windows} what="maintenance">
        {(d) =>
          d.maintenance.length ? (
            <Table caption="Maintenance windows, in progress and upcoming first" columns={['Title', 'State', 'Starts', 'Ends', '']}>
              {d.maintenance.map((w) => (
                <tr key={w.id}>
                  <td>{w.title}</td>
                  <td>
                    <Badge kind={STATE_KIND[w.state]}>{w.state.replace('_', ' ')}</Badge>
                  </td>
                  <td>{new Date(w.startsAt).toLocaleString()}</td>
                  <td>{new Date(w.endsAt).toLocaleString()}</td>
                  <td>
                    {w.state === 'scheduled' || w.state === 'in_progress' ? (
                      <button type="button" class="danger small" disabled={cancel.busy} onClick={() => cancelWindow(w)} aria-label={`Cancel ${w.title}`}>
                        Cancel
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No maintenance scheduled.</p>
          )
        }
      </Loaded>
      <ErrorNote error={cancel.error} />
      <form onSubmit={plan} class="stack" aria-label="Schedule maintenance">
        <div class="row-form">
          <label>
            Title
            <input name="maintenanceTitle" required maxLength={200} value={wTitle} onInput={(e) => setWTitle(e.currentTarget.value)} />
          </label>
          <label>
            Starts
            <input name="maintenanceStarts" type="datetime-local" required value={startsAt} onInput={(e) => setStartsAt(e.currentTarget.value)} />
          </label>
          <label>
            Ends
            <input name="maintenanceEnds" type="datetime-local" required value={endsAt} onInput={(e) => setEndsAt(e.currentTarget.value)} />
          </label>
        </div>
        <MonitorChoice
          legend="Covered monitors (their failures open no incident and alert nobody while it lasts)"
          monitors={monitors}
          chosen={covered}
          onFlip={(id) => setCovered((s) => flipped(s, id))}
        />
        <label>
          Message
          <textarea name="maintenanceMessage" maxLength={5000} rows={2} value={wMessage} onInput={(e) => setWMessage(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={schedule.busy}>
          Schedule maintenance
        </button>
        <ErrorNote error={schedule.error} />
      </form>
    </section>
  );
}
