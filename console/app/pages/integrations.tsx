import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import type { CreatedInboxAnswer, Inbox } from '../../../schemas/api/email.ts';
import type { GithubConnection } from '../../../schemas/api/integrations.ts';
import { routePath } from '../../../schemas/api/client.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, NewestOlder, PageHead, ShownOnce, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * What feeds a project from outside (issue 25): GitHub repositories whose pushes deploy it (/v1/integrations/github),
 * Stripe accounts whose payments become its order.* events (/v1/projects/:slug/payments; connected on Stripe's consent
 * page, which sends the browser back here with `?stripe=connected` or `?stripe_error=`), and mailbox inboxes whose
 * mail becomes email.received (/v1/projects/:slug/email/inboxes): each inbox's address, its webhook secret shown once,
 * and its recent messages.
 */
export function Integrations() {
  const { params } = useRoute();
  const slug = params.slug!;
  return (
    <div>
      <PageHead title="Integrations" />
      <Repositories slug={slug} />
      <PaymentAccounts slug={slug} />
      <Mailboxes slug={slug} />
    </div>
  );
}

/** What `?github=` on the return from GitHub means (schemas/api/integrations.ts, GITHUB_CONNECT_OUTCOMES). */
const GITHUB_OUTCOMES: Record<string, string> = {
  connected: 'Repository connected.',
  already_connected: 'That repository was already connected to this project.',
  not_installed: 'No installation of the GitHub App that your GitHub account can access holds that repository: install the app on its account, then connect.',
  code_refused: 'GitHub did not accept the authorization (it expired or was used). Try again.',
  cancelled: 'The authorization was cancelled on GitHub.',
  github_failed: 'GitHub could not be reached to finish the connection. Try again.',
};

function Repositories({ slug }: { slug: string }) {
  const r = useResource(() => call('listGithubRepositories'), [slug]);
  const [repository, setRepository] = useState('');
  const outcome = new URLSearchParams(location.search).get('github');
  const act = useAction();
  const remove = useAction();
  // GitHub proves the repository is yours (your account reaches it through an installation of the app), then sends the
  // browser back here with `?github=<outcome>`. `install` goes through the app's install page first.
  const connect = (how: 'authorize' | 'install') =>
    void act.run(async () => {
      const started = await call('connectGithub', { body: { project: slug, repository: repository.trim() } });
      location.assign(how === 'install' && started.installUrl ? started.installUrl : started.authorizeUrl);
    });
  const disconnect = (c: GithubConnection) => {
    if (!confirm(`Disconnect ${c.repository}? Its pushes stop deploying this project.`)) return;
    void remove.run(async () => {
      await call('disconnectGithub', { params: { id: c.id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="repos" class="panel">
      <h2 id="repos">GitHub repositories</h2>
      <p class="muted">
        A push to a connected repository deploys it: production for the default branch, a preview for other branches and pull requests. Repositories connect
        through the GitHub App: GitHub asks you to authorize it, and only a repository your GitHub account reaches through an installation of the app is
        connected.
      </p>
      {outcome && (
        <p role={outcome === 'connected' ? 'status' : 'alert'} class={outcome === 'connected' ? 'ok-text' : 'note error'}>
          {GITHUB_OUTCOMES[outcome] ?? 'The repository was not connected.'}
        </p>
      )}
      <ErrorNote error={remove.error} />
      <Loaded r={r} what="repositories">
        {(d) => {
          const mine = d.connections.filter((c) => c.project === slug);
          return mine.length ? (
            <Table caption="Connected repositories" columns={['Repository', 'Status', 'Clone URL', 'Connected', '']}>
              {mine.map((c) => (
                <tr key={c.id}>
                  <td>
                    <code>{c.repository}</code>
                  </td>
                  <td>{c.status === 'active' ? <Badge kind="ok">active</Badge> : <Badge kind="bad">needs reconnecting</Badge>}</td>
                  <td class="muted">{c.cloneUrl}</td>
                  <td>
                    <Time iso={c.createdAt} />
                  </td>
                  <td>
                    <button type="button" class="danger small" onClick={() => disconnect(c)} disabled={remove.busy} aria-label={`Disconnect ${c.repository}`}>
                      Disconnect
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No repository is connected.</p>
          );
        }}
      </Loaded>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          connect('authorize');
        }}
        class="row"
      >
        <label>
          Repository <span class="muted">(owner/name)</span>
          <input name="repository" required placeholder="acme/site" value={repository} onInput={(e) => setRepository(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={act.busy}>
          Connect repository
        </button>
        <button type="button" class="secondary" disabled={act.busy || !repository.trim()} onClick={() => connect('install')}>
          Install the app, then connect
        </button>
      </form>
      <ErrorNote error={act.error} />
    </section>
  );
}

/** What `?stripe_error=` on the return from Stripe means (schemas/api/payments.ts, PaymentConnectFailure). */
const STRIPE_ERRORS: Record<string, string> = {
  access_denied: 'The connection was declined on Stripe.',
  refused: 'Stripe refused the connection (the link was used or expired). Try again.',
  exchange_failed: 'Stripe could not be reached to finish the connection. Try again.',
  account_taken: 'That Stripe account is connected to another project. Disconnect it there first.',
};

function PaymentAccounts({ slug }: { slug: string }) {
  const r = useResource(() => call('listPaymentAccounts', { params: { slug } }), [slug]);
  const returned = new URLSearchParams(location.search);
  const act = useAction();
  const remove = useAction();
  // Stripe's consent page proves the account is yours; it sends the browser back here with the outcome.
  const connect = () =>
    void act.run(async () => {
      const { url } = await call('connectPayments', { params: { slug } });
      location.assign(url);
    });
  const disconnect = (id: string) => {
    if (!confirm(`Disconnect ${id}? Its payments stop becoming this project's order events.`)) return;
    void remove.run(async () => {
      await call('disconnectPaymentAccount', { params: { slug, accountId: id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="payments" class="panel">
      <h2 id="payments">Stripe accounts</h2>
      <p class="muted">
        Payments of a connected account become <code>order.created</code>, <code>order.paid</code> and <code>order.refunded</code> events for this project's
        webhooks. An account is connected on Stripe's own page, signed in to Stripe.
      </p>
      {returned.get('stripe') === 'connected' && (
        <p role="status" class="ok-text">
          Stripe account connected.
        </p>
      )}
      {returned.get('stripe_error') && (
        <div class="note error" role="alert">
          <p>{STRIPE_ERRORS[returned.get('stripe_error')!] ?? 'The Stripe account was not connected.'}</p>
        </div>
      )}
      <ErrorNote error={remove.error} />
      <Loaded r={r} what="payment accounts">
        {(d) =>
          d.accounts.length ? (
            <Table caption="Connected Stripe accounts" columns={['Account', 'Status', 'Connected', '']}>
              {d.accounts.map((a) => (
                <tr key={a.accountId}>
                  <td>
                    <code>{a.accountId}</code>
                  </td>
                  <td>
                    {a.status === 'connected' ? <Badge kind="ok">{a.livemode ? 'live' : 'test mode'}</Badge> : <Badge kind="bad">needs reconnecting</Badge>}
                  </td>
                  <td>
                    <Time iso={a.connectedAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => disconnect(a.accountId)}
                      disabled={remove.busy}
                      aria-label={`Disconnect ${a.accountId}`}
                    >
                      Disconnect
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No Stripe account is connected.</p>
          )
        }
      </Loaded>
      {r.data?.accounts.some((a) => a.status === 'needs_reconnecting') && (
        <p class="muted">
          An account that needs reconnecting was typed in by its id, which proves nothing: its payments are dropped until it is connected with Stripe.
        </p>
      )}
      <div class="row">
        <button type="button" onClick={connect} disabled={act.busy}>
          Connect with Stripe
        </button>
      </div>
      <ErrorNote error={act.error} />
    </section>
  );
}

function Mailboxes({ slug }: { slug: string }) {
  const r = useResource(() => call('listInboxes', { params: { slug } }), [slug]);
  const [localPart, setLocalPart] = useState('');
  const [webhookUrl, setWebhookUrl] = useState('');
  const [created, setCreated] = useState<CreatedInboxAnswer['inbox'] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const act = useAction();
  const remove = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const res = await call('createInbox', { params: { slug }, body: { localPart: localPart.trim(), webhookUrl: webhookUrl.trim() || undefined } });
      setCreated(res.inbox);
      setLocalPart('');
      setWebhookUrl('');
      await r.reload();
    });
  };
  const doDelete = (i: Inbox) => {
    if (!confirm(`Delete ${i.address}? Mail to it is dropped from now on, and its messages are deleted.`)) return;
    void remove.run(async () => {
      await call('deleteInbox', { params: { slug, id: i.id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="mailboxes" class="panel">
      <h2 id="mailboxes">Mailboxes</h2>
      <p class="muted">
        Mail to an inbox becomes <code>email.received</code> for the webhooks subscribed to it (by name or <code>email.*</code>) and for the inbox's own webhook
        URL.
      </p>
      {created?.webhookSecret && (
        <ShownOnce title={`Inbox ${created.address}`} items={[{ label: 'Webhook secret', value: created.webhookSecret }]} onDone={() => setCreated(null)}>
          <p>
            Its webhook URL gets <code>email.received</code> signed with this secret (<code>Service-Signature</code>, as project webhooks are).
          </p>
        </ShownOnce>
      )}
      <ErrorNote error={remove.error} />
      <Loaded r={r} what="inboxes">
        {(d) =>
          d.inboxes.length ? (
            <Table caption="Inboxes" columns={['Address', 'Webhook URL', 'Created', '', '']}>
              {d.inboxes.flatMap((i) => [
                <tr key={i.id}>
                  <td>
                    <code>{i.address}</code>
                  </td>
                  <td class="muted">{i.webhookUrl ?? 'none'}</td>
                  <td>
                    <Time iso={i.createdAt} />
                  </td>
                  <td>
                    <button type="button" class="small" aria-expanded={open === i.id} onClick={() => setOpen(open === i.id ? null : i.id)}>
                      {open === i.id ? 'Hide messages' : 'Messages'}
                    </button>
                  </td>
                  <td>
                    <button type="button" class="danger small" onClick={() => doDelete(i)} disabled={remove.busy} aria-label={`Delete ${i.address}`}>
                      Delete
                    </button>
                  </td>
                </tr>,
                open === i.id && (
                  <tr key={`${i.id}-messages`} class="expanded">
                    <td colSpan={5}>
                      <RecentMessages slug={slug} inbox={i} />
                    </td>
                  </tr>
                ),
              ])}
            </Table>
          ) : (
            <p class="muted">No inbox yet.</p>
          )
        }
      </Loaded>
      <form onSubmit={create} class="stack">
        <div class="row">
          <label>
            Address <span class="muted">(local part)</span>
            <input name="localPart" required placeholder="support" value={localPart} onInput={(e) => setLocalPart(e.currentTarget.value)} />
          </label>
          <label>
            Webhook URL <span class="muted">(optional, https)</span>
            <input
              name="webhookUrl"
              type="url"
              placeholder="https://example.com/mail"
              value={webhookUrl}
              onInput={(e) => setWebhookUrl(e.currentTarget.value)}
            />
          </label>
          <button type="submit" disabled={act.busy}>
            Create inbox
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} />
    </section>
  );
}

function RecentMessages({ slug, inbox }: { slug: string; inbox: Inbox }) {
  const [cursor, setCursor] = useState<string | null>(null);
  const r = useResource(
    () => call('listInboxMessages', { params: { slug, id: inbox.id }, query: { limit: 20, cursor: cursor ?? undefined } }),
    [slug, inbox.id, cursor],
  );
  return (
    <>
      <Loaded r={r} what="messages">
        {(d) =>
          d.data.length ? (
            <Table caption={`Recent mail to ${inbox.address}`} columns={['From', 'Subject', 'Sender', 'Attachments', 'Received', '']}>
              {d.data.map((m) => (
                <tr key={m.id}>
                  <td>
                    {m.fromName ? `${m.fromName} ` : ''}
                    <span class="muted">&lt;{m.from}&gt;</span>
                  </td>
                  <td>{m.subject || <span class="muted">(no subject)</span>}</td>
                  <td>{m.senderAuthenticated ? <Badge kind="ok">DKIM verified</Badge> : <Badge kind="bad">unverified</Badge>}</td>
                  <td>{m.attachments}</td>
                  <td>
                    <Time iso={m.receivedAt} />
                  </td>
                  <td>
                    <a href={routePath('getRawInboxMessage', { slug, id: inbox.id, messageId: m.id })} download={`${m.id}.eml`}>
                      .eml
                    </a>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No mail yet.</p>
          )
        }
      </Loaded>
      <NewestOlder cursor={cursor} page={r.data} onCursor={setCursor} label={`Pages of mail to ${inbox.address}`} />
    </>
  );
}
