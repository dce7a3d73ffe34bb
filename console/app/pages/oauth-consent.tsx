import { useLocation } from 'preact-iso';
import type { AuthorizeInfo, AuthorizeRequest } from '../../../schemas/api/oauth.ts';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, PageHead, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * MCP authorization consent (issue 27): an MCP client sends the person here (`/oauth/authorize?...`, the authorization
 * endpoint of `/.well-known/oauth-authorization-server`). The page names the client (Unverified when it registered
 * itself: its name is its own word) and, prominently, the host the code is sent to (issue 38). Approve makes a one-use
 * code (POST /v1/oauth/authorize) and goes back to the client, Deny goes back with `error=access_denied`. Below: the
 * person's connected MCP clients, each revocable.
 */
export function OAuthConsent() {
  const { query: q } = useLocation();
  // The MCP client's authorization request, as it sent it: the API checks it (and ignores parameters of the client's own).
  const params = Object.fromEntries(Object.entries(q).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const ask = params as unknown as AuthorizeRequest;
  const info = useResource(() => call('oauthAuthorizeInfo', { query: ask }), [JSON.stringify(params)]);
  const act = useAction();
  const approve = () =>
    void act.run(async () => {
      const r = await call('oauthApprove', { body: ask });
      location.assign(r.redirect);
    });
  const deny = () => {
    const back = new URL(params.redirect_uri!);
    back.searchParams.set('error', 'access_denied');
    if (params.state) back.searchParams.set('state', params.state);
    location.assign(back.href);
  };
  return (
    <div class="narrow">
      <PageHead title="Connect an MCP client" />
      <Loaded r={info} what="the request">
        {(d) => (
          <div class="stack">
            <ClientWho info={d} />
            <p>
              It asks to use this service as you through its MCP endpoint (<code>{d.resource}</code>): your projects, their issues, deploys, analytics and
              flags, as your CLI could.
            </p>
            <div class="note hint redirect-to">
              <p>Approving sends you, with a code that lets it act as you, to</p>
              <p class="redirect-host">
                <strong>{d.redirectHost}</strong>
                {d.redirectLoopback ? <span class="muted"> (an app on this computer)</span> : null}
              </p>
              <p class="muted redirect-uri">
                <code>{d.redirectUri}</code>
              </p>
            </div>
            <p class="muted">Approve only if you started this from that client just now. If you did not, Deny.</p>
            <ErrorNote error={act.error} />
            <div class="row">
              <button type="button" onClick={approve} disabled={act.busy}>
                Approve
              </button>
              <button type="button" class="secondary" onClick={deny}>
                Deny
              </button>
            </div>
          </div>
        )}
      </Loaded>
    </div>
  );
}

/**
 * Who asks, in words that do not take its name on trust: a dynamically registered client is marked Unverified (anyone
 * can register any name); a client ID metadata document's name is shown with the host that published it.
 */
function ClientWho({ info }: { info: AuthorizeInfo }) {
  const c = info.client;
  return (
    <div class="client-who">
      <p>
        <strong class="client-name">{c.name}</strong>{' '}
        {c.unverified ? (
          <Badge kind="bad unverified">Unverified</Badge>
        ) : (
          <span class="muted">
            published by <strong>{c.documentHost}</strong>
          </span>
        )}
      </p>
      {c.unverified ? (
        <p class="muted">This name is the client's own: anyone can register a client under any name. Trust the address below, not the name.</p>
      ) : null}
    </div>
  );
}

/** The signed-in person's connected MCP clients (GET /v1/oauth/tokens), each revocable. */
export function ConnectedApps() {
  const r = useResource(() => call('listOauthTokens'), []);
  const revoke = useAction();
  const doRevoke = (id: string, client: string) => {
    if (!confirm(`Disconnect ${client}? Its MCP token stops working at once.`)) return;
    void revoke.run(async () => {
      await call('revokeOauthToken', { params: { id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="apps-h" class="panel">
      <h2 id="apps-h">Connected MCP clients</h2>
      <ErrorNote error={revoke.error} />
      <Loaded r={r} what="connected clients">
        {(d) =>
          d.tokens.length ? (
            <Table caption="Connected MCP clients" columns={['Client', 'Connected', 'Last used', '']}>
              {d.tokens.map((tk) => (
                <tr key={tk.id}>
                  <td>{tk.client}</td>
                  <td>
                    <Time iso={tk.createdAt} />
                  </td>
                  <td>
                    <Time iso={tk.lastUsedAt} />
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => doRevoke(tk.id, tk.client)}
                      disabled={revoke.busy}
                      aria-label={`Disconnect ${tk.client}`}
                    >
                      Disconnect
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No MCP client is connected.</p>
          )
        }
      </Loaded>
    </section>
  );
}
