import { useState } from 'preact/hooks';
import { call } from '../api.ts';
import { Badge, CopyButton, ErrorNote, Loaded, SubmitRow, Table, useAction, useFormFrom, useResource } from '../ui.tsx';
import type { PreviewLinkAnswer, ProjectAnswer } from '../../../schemas/api/projects.ts';

/**
 * Previews that only the team sees (issue 42): whether the per-deploy hosts ask for a password (PATCH
 * /v1/projects/:slug previewProtection), the password itself (write-only: set or cleared, never shown), and share
 * links (made with their token shown once, listed, revoked). The section says which state the project is in.
 */
export function PreviewProtection({ slug }: { slug: string }) {
  const r = useResource<ProjectAnswer>(() => call('getProject', { params: { slug } }), [slug]);
  const [enabled, setEnabled] = useFormFrom(r.data, (d) => d.project.previewProtection.enabled, false);
  const [password, setPassword] = useState('');
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (body: { enabled?: boolean; password?: string | null }) => {
    setSaved(false);
    void act.run(async () => {
      r.setData(await call('updateProject', { params: { slug }, body: { previewProtection: body } }));
      setPassword('');
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="previews-h" class="panel">
      <h2 id="previews-h">Preview protection</h2>
      <p class="muted">
        Production hosts are always public. Protected previews (each deploy's own host) show a password page until the visitor types the password or opens a
        share link.
      </p>
      <Loaded r={r} what="the project's settings">
        {(d) => {
          const p = d.project.previewProtection;
          const state = !p.enabled ? 'public' : p.passwordSet ? 'protected (password set)' : 'protected (share links only)';
          return (
            <div class="stack">
              <p>
                Previews: <Badge kind={p.enabled ? 'ok' : 'muted'}>{state}</Badge>
              </p>
              <form
                class="stack"
                onSubmit={(e) => {
                  e.preventDefault();
                  save(password ? { enabled, password } : { enabled });
                }}
              >
                <label class="check">
                  <input type="checkbox" name="previewProtection" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
                  Protect previews
                </label>
                <label>
                  {p.passwordSet ? 'New password' : 'Password'} <span class="muted">(8 characters or more; a new one signs every visitor out)</span>
                  <input
                    name="previewPassword"
                    type="password"
                    autocomplete="new-password"
                    value={password}
                    onInput={(e) => setPassword(e.currentTarget.value)}
                  />
                </label>
                <ErrorNote error={act.error} />
                <SubmitRow label="Save preview protection" busy={act.busy} saved={saved} />
                {p.passwordSet && (
                  <div class="row">
                    <button type="button" class="secondary" disabled={act.busy} onClick={() => save({ password: null })}>
                      Remove password
                    </button>
                  </div>
                )}
              </form>
            </div>
          );
        }}
      </Loaded>
      <PreviewLinks slug={slug} />
    </section>
  );
}

function PreviewLinks({ slug }: { slug: string }) {
  const r = useResource(() => call('listPreviewLinks', { params: { slug } }), [slug]);
  const [made, setMade] = useState<PreviewLinkAnswer['link'] | undefined>();
  const [days, setDays] = useState('7');
  const act = useAction();
  const reload = async () => r.setData(await call('listPreviewLinks', { params: { slug } }));
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      setMade((await call('createPreviewLink', { params: { slug }, body: { days: Number(days) } })).link);
      await reload();
    });
  };
  const revoke = (id: string) =>
    void act.run(async () => {
      await call('revokePreviewLink', { params: { slug, id } });
      await reload();
    });
  return (
    <div class="stack">
      <h3>Share links</h3>
      {made && (
        <p>
          New link (shown once): add <code>{made.path}</code> to any preview's address. <CopyButton text={made.path} what="the share link's path" />
        </p>
      )}
      <Loaded r={r} what="share links">
        {(d) =>
          d.links.length ? (
            <Table caption="Preview share links" columns={['Link', 'Expires', 'State', '']}>
              {d.links.map((l) => (
                <tr key={l.id}>
                  <td>
                    <code>{l.id}</code>
                  </td>
                  <td>{new Date(l.expiresAt).toLocaleString()}</td>
                  <td>{l.revokedAt ? <Badge kind="muted">revoked</Badge> : <Badge kind="ok">open</Badge>}</td>
                  <td>
                    {!l.revokedAt && (
                      <button type="button" class="secondary" disabled={act.busy} onClick={() => revoke(l.id)}>
                        Revoke {l.id}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No share links yet.</p>
          )
        }
      </Loaded>
      <form class="row" onSubmit={create}>
        <label>
          Valid for (days)
          <input name="days" type="number" min={1} max={30} value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        </label>
        <SubmitRow label="Create share link" busy={act.busy} />
      </form>
      <ErrorNote error={act.error} />
    </div>
  );
}
