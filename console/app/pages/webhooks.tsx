import { useEffect, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { PROJECT_EVENT_NAMES } from '../../../schemas/project-event-names.ts';
import { call, projectPath } from '../api.ts';
import { nextAttemptNotes, receiverRule } from '../webhook-text.ts';
import { Badge, ErrorNote, Loaded, PageHead, ShownOnce, SubmitRow, Table, Time, useAction, useFormFrom, useResource } from '../ui.tsx';
import type { Endpoint } from '../../../schemas/api/webhooks.ts';

/**
 * Project webhooks (§4.3): endpoints (create with the secret shown once, edit events, delete), a test event, and per
 * endpoint the delivery log (the last 100 attempts, each with its status and error) with replay, and secret rotation.
 */
const eventsText = (events: string[]) => (events.length ? events.join(', ') : 'every event except email.received');

function EventPicker({ value, onChange }: { value: Set<string>; onChange: (v: Set<string>) => void }) {
  const toggle = (e: string) => {
    const next = new Set(value);
    if (next.has(e)) next.delete(e);
    else next.add(e);
    onChange(next);
  };
  // Families the API took (`deploy.*`) are shown beside the names, so saving keeps them.
  const names: readonly string[] = PROJECT_EVENT_NAMES;
  const options = [...names, ...[...value].filter((v) => !names.includes(v)).sort()];
  return (
    <fieldset class="events-pick">
      <legend>
        Events <span class="muted">(none checked: every event except email.received)</span>
      </legend>
      {options.map((e) => (
        <label class="check" key={e}>
          <input type="checkbox" checked={value.has(e)} onChange={() => toggle(e)} />
          <code>{e}</code>
        </label>
      ))}
    </fieldset>
  );
}

export function Webhooks() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('listWebhookEndpoints', { params: { slug } }), [slug]);
  const localReceiversAllowed = r.data?.localReceiversAllowed ?? false;
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<Set<string>>(new Set());
  const [maxAttempts, setMaxAttempts] = useState(6);
  const [format, setFormat] = useState<Endpoint['format']>('standard');
  const [created, setCreated] = useState<(Endpoint & { secret: string }) | null>(null);
  const [fired, setFired] = useState<string | null>(null);
  const act = useAction();
  const test = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const res = await call('createWebhookEndpoint', { params: { slug }, body: { url: url.trim(), format, description, events: [...events], maxAttempts } });
      setCreated(res.endpoint);
      setUrl('');
      setDescription('');
      await r.reload();
    });
  };
  const sendTest = () =>
    test.run(async () => {
      const res = await call('sendTestWebhook', { params: { slug } });
      setFired(`webhook.test sent (${res.event.id}). Each subscribed endpoint's log shows its delivery.`);
    });
  return (
    <div>
      <PageHead title="Webhooks">
        <button type="button" class="secondary" onClick={() => void sendTest()} disabled={test.busy}>
          Send a test event
        </button>
      </PageHead>
      {fired && (
        <p role="status" class="ok-text">
          {fired}
        </p>
      )}
      <ErrorNote error={test.error} />
      {created && (
        <ShownOnce title="Signing secret of the new endpoint" items={[{ label: 'Secret', value: created.secret }]} onDone={() => setCreated(null)}>
          <p class="muted">
            Verify each delivery's <code>Service-Signature</code> header with it (the Node SDK's <code>webhook-verifier</code> does).
          </p>
        </ShownOnce>
      )}
      <Loaded r={r} what="webhook endpoints">
        {(d) =>
          d.endpoints.length === 0 ? (
            <p class="empty">No endpoints yet.</p>
          ) : (
            <ul class="cards">
              {d.endpoints.map((e) => (
                <li key={e.id}>
                  <a href={projectPath(slug, `/webhooks/${e.id}`)} class="card">
                    <strong class="url">{e.url}</strong>
                    <span class="muted">
                      {e.format !== 'standard' ? `${e.format === 'slack' ? 'Slack' : 'Discord'} message · ` : ''}
                      {e.description ? `${e.description} · ` : ''}
                      {eventsText(e.events)} · up to {e.maxAttempts} attempts
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <section aria-labelledby="new-endpoint" class="panel">
        <h2 id="new-endpoint">New endpoint</h2>
        <form onSubmit={create} class="stack">
          <label>
            URL <span class="muted">({receiverRule(localReceiversAllowed)})</span>
            <input
              name="url"
              type="url"
              required
              maxLength={2048}
              placeholder="https://example.com/hooks"
              value={url}
              onInput={(e) => setUrl(e.currentTarget.value)}
            />
          </label>
          <label>
            Format
            <select name="format" value={format} onChange={(e) => setFormat(e.currentTarget.value as Endpoint['format'])}>
              <option value="standard">Signed JSON (Service-Signature)</option>
              <option value="slack">Slack incoming webhook (hooks.slack.com)</option>
              <option value="discord">Discord webhook (discord.com)</option>
            </select>
          </label>
          <label>
            Description <span class="muted">(optional)</span>
            <input name="description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          </label>
          <EventPicker value={events} onChange={setEvents} />
          <label>
            Attempts before giving up
            <input name="maxAttempts" type="number" min={1} max={10} value={maxAttempts} onInput={(e) => setMaxAttempts(Number(e.currentTarget.value))} />
          </label>
          <ErrorNote error={act.error} />
          <div class="row">
            <button type="submit" disabled={act.busy}>
              Create endpoint
            </button>
          </div>
        </form>
      </section>
    </div>
  );
}

export function WebhookDetail() {
  const { params } = useRoute();
  const { route } = useLocation();
  const slug = params.slug!;
  const id = params.id!;
  const ep = useResource(() => call('getWebhookEndpoint', { params: { slug, id } }), [slug, id]);
  const log = useResource(() => call('listWebhookAttempts', { params: { slug, id } }), [slug, id]);
  const [events, setEvents] = useFormFrom(ep.data, (d) => new Set(d.endpoint.events), new Set<string>());
  const [saved, setSaved] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const [replayed, setReplayed] = useState<string | null>(null);
  const act = useAction();
  // The log follows new attempts while the page is open.
  useEffect(() => {
    const t = setInterval(() => void log.reload(), 3000);
    return () => clearInterval(t);
  }, [log.reload]);

  const saveEvents = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      ep.setData(await call('updateWebhookEndpoint', { params: { slug, id }, body: { events: [...events] } }));
      setSaved(true);
    });
  };
  const rotate = () => {
    if (!confirm('Rotate the signing secret? The previous secret keeps signing for 24 hours.')) return;
    void act.run(async () => {
      const res = await call('rotateWebhookSecret', { params: { slug, id } });
      setSecret(res.endpoint.secret);
      ep.setData({ endpoint: res.endpoint });
    });
  };
  const remove = () => {
    if (!confirm('Delete this endpoint and its pending deliveries?')) return;
    void act.run(async () => {
      await call('deleteWebhookEndpoint', { params: { slug, id } });
      route(projectPath(slug, '/webhooks'));
    });
  };
  const replay = (deliveryId: string) =>
    act.run(async () => {
      await call('replayWebhookDelivery', { params: { slug, id: deliveryId } });
      setReplayed(`Delivery ${deliveryId} queued again with a fresh attempt budget: the retry sweep sends it within a minute.`);
      await log.reload();
    });

  return (
    <div>
      <p>
        <a href={projectPath(slug, '/webhooks')}>← Webhooks</a>
      </p>
      <Loaded r={ep} what="the endpoint">
        {({ endpoint: e }) => (
          <>
            <PageHead title={e.url}>
              <button type="button" class="secondary" onClick={rotate} disabled={act.busy}>
                Rotate secret
              </button>
              <button type="button" class="danger" onClick={remove} disabled={act.busy}>
                Delete
              </button>
            </PageHead>
            <p class="muted">
              {e.format === 'standard' ? 'signed JSON · ' : `${e.format === 'slack' ? 'Slack' : 'Discord'} message (unsigned: the URL is the credential) · `}
              {e.description ? `${e.description} · ` : ''}up to {e.maxAttempts} attempts · created <Time iso={e.createdAt} />
              {e.previousSecretExpiresAt && <> · the previous secret signs until {new Date(e.previousSecretExpiresAt).toLocaleString()}</>}
            </p>
            {secret && <ShownOnce title="New signing secret" items={[{ label: 'Secret', value: secret }]} onDone={() => setSecret(null)} />}
            <ErrorNote error={act.error} />
          </>
        )}
      </Loaded>
      <section aria-labelledby="log-h">
        <h2 id="log-h">Delivery log</h2>
        {replayed && (
          <p role="status" class="ok-text">
            {replayed}
          </p>
        )}
        <Loaded r={log} what="deliveries">
          {(d) => {
            const notes = nextAttemptNotes(d.deliveries, (iso) => new Date(iso).toLocaleTimeString());
            return d.deliveries.length === 0 ? (
              <p class="empty">No delivery attempts yet. Send a test event to see one here.</p>
            ) : (
              <Table
                caption="The last 100 delivery attempts, newest first"
                class="deliveries"
                columns={['Event', 'Attempt', 'Result', 'Error', 'When', 'Delivery', '']}
              >
                {d.deliveries.map((a) => (
                  <tr key={`${a.deliveryId}-${a.attempt}`}>
                    <td>
                      <code>{a.event}</code>
                    </td>
                    <td>{a.attempt}</td>
                    <td>
                      <Badge kind={a.status === 'succeeded' ? 'ok' : 'bad'}>{a.responseCode ? `${a.status} (${a.responseCode})` : a.status}</Badge>
                    </td>
                    <td class="error-text">{a.error ?? ''}</td>
                    <td>
                      <Time iso={a.startedAt} />
                    </td>
                    <td>
                      {a.deliveryStatus}
                      {notes.has(a) && <span class="muted"> · {notes.get(a)}</span>}
                    </td>
                    <td>
                      <button type="button" class="secondary small" onClick={() => void replay(a.deliveryId)} disabled={act.busy}>
                        Replay
                      </button>
                    </td>
                  </tr>
                ))}
              </Table>
            );
          }}
        </Loaded>
      </section>
      {ep.data && (
        <section aria-labelledby="events-h" class="panel">
          <h2 id="events-h">Events</h2>
          <form onSubmit={saveEvents} class="stack">
            <EventPicker value={events} onChange={setEvents} />
            <SubmitRow label="Save events" busy={act.busy} saved={saved} />
          </form>
        </section>
      )}
    </div>
  );
}
