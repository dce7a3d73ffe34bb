import { useState } from 'preact/hooks';
import type { StatusSubscriber } from '../../../schemas/api/status-subscribers.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * The status page's subscribers (issue 43), a panel of the Uptime page: who gets mail about its incidents and
 * maintenance (pending until they open their confirmation link; a bounce or complaint stops mail), the webhook
 * subscribers (signed deliveries through the webhook pipeline; the secret shown once), adding a webhook, removing any.
 */
export function StatusSubscribers({ slug }: { slug: string }) {
  const r = useResource(() => call('listStatusSubscribers', { params: { slug } }), [slug]);
  const [url, setUrl] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const act = useAction();

  const add = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const made = await call('createStatusWebhookSubscriber', { params: { slug }, body: { url: url.trim() } });
      setSecret(made.subscriber.secret);
      setUrl('');
      await r.reload();
    });
  };
  const remove = (s: StatusSubscriber) => {
    if (!confirm(`Remove ${s.email ?? s.url}?`)) return;
    void act.run(async () => {
      await call('deleteStatusSubscriber', { params: { slug, subscriberId: s.id } });
      await r.reload();
    });
  };

  return (
    <section aria-labelledby="subscribers-h" class="panel">
      <h2 id="subscribers-h">Subscribers</h2>
      <Loaded r={r} what="subscribers">
        {(d) => (
          <>
            <p class="muted">
              {d.counts.confirmed} by e-mail, {d.counts.pending} waiting for their confirmation, {d.counts.webhooks} by webhook. People sign up on the public
              status page.
            </p>
            {d.subscribers.length ? (
              <Table caption="Subscribers of the status page" columns={['Subscriber', 'Kind', 'State', 'Since', '']}>
                {d.subscribers.map((s) => (
                  <tr key={s.id}>
                    <td>{s.email ?? s.url}</td>
                    <td>{s.kind}</td>
                    <td>
                      {s.suppressed ? (
                        <Badge kind="bad">bounced, no mail</Badge>
                      ) : (
                        <Badge kind={s.status === 'confirmed' ? 'ok' : ''}>{s.status === 'confirmed' ? 'subscribed' : 'pending'}</Badge>
                      )}
                    </td>
                    <td>
                      <Time iso={s.confirmedAt ?? s.createdAt} />
                    </td>
                    <td>
                      <button type="button" class="danger small" onClick={() => remove(s)} disabled={act.busy} aria-label={`Remove ${s.email ?? s.url}`}>
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </Table>
            ) : (
              <p class="muted">No subscriber yet.</p>
            )}
          </>
        )}
      </Loaded>
      <form onSubmit={add} class="row">
        <label>
          Webhook URL <span class="muted">(https)</span>
          <input
            name="subscriberUrl"
            type="url"
            required
            placeholder="https://example.com/status-hook"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={act.busy}>
          Add webhook subscriber
        </button>
      </form>
      {secret && (
        <p class="note" role="status">
          Signing secret, shown once: <code>{secret}</code>
        </p>
      )}
      <ErrorNote error={act.error} />
    </section>
  );
}
