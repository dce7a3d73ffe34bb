import { useLocation } from 'preact-iso';
import type { AuthorizeAnswer, AuthorizeInfo, McpTokenList } from '../../../schemas/api/oauth.ts';
import { del, get, post, query } from '../api.ts';
import { ErrorNote, Loaded, PageHead, Table, Time, useAction, useResource } from '../ui.tsx';

/**
 * MCP authorization consent (issue 27): an MCP client sends the person here (`/oauth/authorize?...`, the authorization
 * endpoint of `/.well-known/oauth-authorization-server`). The page names the client and where it sends them back;
 * Approve makes a one-use code (POST /v1/oauth/authorize) and goes back to the client, Deny goes back with
 * `error=access_denied`. Below: the person's connected MCP clients, each revocable.
 */
export function OAuthConsent() {
  const { query: q } = useLocation();
  const params = Object.fromEntries(Object.entries(q).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const info = useResource(() => get<AuthorizeInfo>(`/oauth/authorize${query(params)}`), [JSON.stringify(params)]);
  const act = useAction();
  const approve = () =>
    void act.run(async () => {
      const r = await post<AuthorizeAnswer>('/oauth/authorize', params);
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
            <p>
              <strong>{d.client.name}</strong> asks to use this service as you through its MCP endpoint (<code>{d.resource}</code>): your projects, their
              issues, deploys, analytics and flags, as your CLI could.
            </p>
            <p class="muted">You will be sent back to {d.redirectHost}. Approve only if you started this from that client.</p>
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

/** The signed-in person's connected MCP clients (GET /v1/oauth/tokens), each revocable. */
export function ConnectedApps() {
  const r = useResource(() => get<McpTokenList>('/oauth/tokens'), []);
  const revoke = useAction();
  const doRevoke = (id: string, client: string) => {
    if (!confirm(`Disconnect ${client}? Its MCP token stops working at once.`)) return;
    void revoke.run(async () => {
      await del(`/oauth/tokens/${encodeURIComponent(id)}`);
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
