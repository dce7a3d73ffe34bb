import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { ALL_SCOPES, SCOPES, type Scope } from '../../../schemas/scopes.ts';
import { call } from '../api.ts';
import { EDGE_PATHS } from '../../../schemas/api/route-table.ts';
import { routePath } from '../../../schemas/api/client.ts';
import { Badge, ErrorNote, Loaded, PageHead, ShownOnce, Table, Time, useAction, useResource } from '../ui.tsx';
import type { ApiKey, CreatedKey } from '../../../schemas/api/keys.ts';

/**
 * Project keys (POST/GET/DELETE /v1/projects/:slug/keys): API keys (cx_live_, cx_test_) with scopes, and ingest keys
 * (cak_live_) for the clients. A new key's token (and an ingest key's Sentry DSN) is shown once, with how to use it.
 */
export function Keys() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('listKeys', { params: { slug } }), [slug]);
  const [kind, setKind] = useState<ApiKey['kind']>('ingest');
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set(['errors:read']));
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const act = useAction();
  const revoke = useAction();

  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const body = kind === 'ingest' ? { kind, name: name || undefined } : { kind, name: name || undefined, scopes: [...scopes] };
      const res = await call('createKey', { params: { slug }, body });
      setCreated(res.key);
      setName('');
      await r.reload();
    });
  };
  const doRevoke = (k: ApiKey) => {
    if (!confirm(`Revoke "${k.name || k.hint}"? Everything using it is refused at once.`)) return;
    void revoke.run(async () => {
      await call('revokeKey', { params: { slug, id: k.id } });
      await r.reload();
    });
  };
  const toggleScope = (s: Scope) => {
    const next = new Set(scopes);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setScopes(next);
  };
  const base = location.origin;

  return (
    <div>
      <PageHead title="Keys" />
      {created && (
        <ShownOnce
          title={`New ${created.kind === 'ingest' ? 'ingest' : created.kind === 'live' ? 'API' : 'test API'} key`}
          items={[{ label: 'Token', value: created.token }, ...(created.dsn ? [{ label: 'Sentry DSN', value: created.dsn }] : [])]}
          onDone={() => setCreated(null)}
        >
          {created.kind === 'ingest' ? (
            <div class="snippets">
              <p>Send errors from a server (or any HTTP client):</p>
              <pre>{`curl -X POST ${base}${EDGE_PATHS.errors} \\\n  -H "Authorization: Bearer ${created.token}" -H 'content-type: application/json' \\\n  -d '{"batch":[{"name":"TypeError","message":"x is undefined","stack":"TypeError: x\\n    at load (src/app.ts:3:9)"}]}'`}</pre>
              <p>From browsers on a site this service hosts, add cx.js: it posts to the site's own origin, so the key never appears in the page:</p>
              <pre>{`<script src="${base}${EDGE_PATHS.widget}" defer></script>`}</pre>
              {created.dsn && (
                <>
                  <p>Sentry SDKs take the DSN:</p>
                  <pre>{`Sentry.init({ dsn: '${created.dsn}' });`}</pre>
                </>
              )}
              <p>PostHog's SDKs take the key as the project token and this service as the host:</p>
              <pre>{`// posthog-js\nposthog.init('${created.token}', { api_host: '${base}' });\n// posthog-node\nnew PostHog('${created.token}', { host: '${base}' });`}</pre>
            </div>
          ) : (
            <pre>{`curl ${base}${routePath('getProject', { slug })} -H "Authorization: Bearer ${created.token}"`}</pre>
          )}
        </ShownOnce>
      )}
      <ErrorNote error={revoke.error} />
      <Loaded r={r} what="keys">
        {(d) => (
          <Table caption="The project's keys" columns={['Name', 'Kind', 'Key', 'Scopes', 'Created', 'Last used', '']}>
            {d.keys.map((k) => (
              <tr key={k.id} class={k.revoked ? 'revoked' : ''}>
                <td>{k.name || <span class="muted">unnamed</span>}</td>
                <td>{k.kind}</td>
                <td>
                  <code>{k.hint}</code>
                </td>
                <td class="scopes">{k.kind === 'ingest' ? <span class="muted">ingest only</span> : k.scopes.join(', ')}</td>
                <td>
                  <Time iso={k.createdAt} />
                </td>
                <td>
                  <Time iso={k.lastUsedAt} />
                </td>
                <td>
                  {k.revoked ? (
                    <Badge kind="revoked">revoked</Badge>
                  ) : (
                    <button type="button" class="danger small" onClick={() => doRevoke(k)} disabled={revoke.busy} aria-label={`Revoke ${k.name || k.hint}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
      </Loaded>
      <section aria-labelledby="new-key" class="panel">
        <h2 id="new-key">New key</h2>
        <form onSubmit={create} class="stack">
          <fieldset>
            <legend>Kind</legend>
            {(
              [
                ['ingest', 'Ingest key (cak_live_): write-only, for cx.js, the Node SDK and Sentry SDKs'],
                ['live', 'API key (cx_live_): reads and changes this project within its scopes'],
                ['test', 'Test API key (cx_test_)'],
              ] as const
            ).map(([k, label]) => (
              <label class="check" key={k}>
                <input type="radio" name="kind" value={k} checked={kind === k} onChange={() => setKind(k)} />
                {label}
              </label>
            ))}
          </fieldset>
          <label>
            Name <span class="muted">(optional)</span>
            <input name="keyName" maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          {kind !== 'ingest' && (
            <fieldset class="scopes-pick">
              <legend>Scopes</legend>
              {ALL_SCOPES.map((s) => (
                <label class="check" key={s}>
                  <input type="checkbox" checked={scopes.has(s)} onChange={() => toggleScope(s)} />
                  <code>{s}</code> <span class="muted">{SCOPES[s]}</span>
                </label>
              ))}
            </fieldset>
          )}
          <ErrorNote error={act.error} />
          <div class="row">
            <button type="submit" disabled={act.busy}>
              Create key
            </button>
          </div>
        </form>
      </section>
    </div>
  );
}
