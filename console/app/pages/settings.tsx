import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { Badge, CopyButton, ErrorNote, lines, Loaded, PageHead, rowsFor, SubmitRow, Table, useAction, useFormFrom, useResource } from '../ui.tsx';
import type { ProjectDomain } from '../../../schemas/api/domains.ts';
import type { ProjectAnswer } from '../../../schemas/api/projects.ts';
import { PreviewProtection } from './preview-protection.tsx';

/**
 * Environment hosts (the project's production and preview host patterns, PATCH /v1/projects/:slug), error settings
 * (§2.7: paused, ingestOrigins, PATCH .../errors/settings) and alert email (§2.8, §7.6: enabled,
 * recipients, PATCH .../error-alerts; a test alert at most once per 15 minutes, POST .../error-alerts/test) and
 * custom domains (/v1/projects/:slug/domains) and whether the sites serve their builds' source maps (PATCH
 * /v1/projects/:slug, serveSourceMaps) and whether new errors fail a preview's GitHub commit status
 * (PATCH /v1/projects/:slug/github/settings) and whether previews are protected (preview-protection.tsx).
 * The API validates; the console shows its message, field by field.
 */
export function Settings() {
  const { params } = useRoute();
  const slug = params.slug!;
  return (
    <div>
      <PageHead title="Settings" />
      <EnvironmentHosts slug={slug} />
      <IngestSettings slug={slug} />
      <AlertSettingsForm slug={slug} />
      <CustomDomains slug={slug} />
      <SourceMapSettings slug={slug} />
      <PreviewProtection slug={slug} />
      <GithubSettings slug={slug} />
    </div>
  );
}

function IngestSettings({ slug }: { slug: string }) {
  const r = useResource(() => call('getErrorSettings', { params: { slug } }), [slug]);
  const [form, setForm] = useFormFrom(r.data, (d) => ({ paused: d.paused, origins: d.ingestOrigins.join('\n') }), { paused: false, origins: '' });
  const { paused, origins } = form;
  const setPaused = (paused: boolean) => setForm((f) => ({ ...f, paused }));
  const setOrigins = (origins: string) => setForm((f) => ({ ...f, origins }));
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await call('updateErrorSettings', { params: { slug }, body: { paused, ingestOrigins: lines(origins) } }));
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="ingest-h" class="panel">
      <h2 id="ingest-h">Error ingest</h2>
      <Loaded r={r} what="error settings">
        {() => (
          <form onSubmit={save} class="stack">
            <label class="check">
              <input type="checkbox" name="paused" checked={paused} onChange={(e) => setPaused(e.currentTarget.checked)} />
              Paused: accept reports and drop them (nothing is stored or counted)
            </label>
            <label>
              Allowed browser origins{' '}
              <span class="muted">(one hostname or *.hostname per line, optionally with :port; empty allows every origin; at most 20)</span>
              <textarea
                name="ingestOrigins"
                rows={rowsFor(origins)}
                value={origins}
                onInput={(e) => setOrigins(e.currentTarget.value)}
                placeholder={'app.example.com\nlocalhost:3000'}
              />
            </label>
            <ErrorNote error={act.error} />
            <SubmitRow label="Save ingest settings" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
    </section>
  );
}

function AlertSettingsForm({ slug }: { slug: string }) {
  const r = useResource(() => call('getErrorAlerts', { params: { slug } }), [slug]);
  const [form, setForm] = useFormFrom(r.data, (d) => ({ enabled: d.enabled, recipients: d.recipients.join('\n') }), { enabled: true, recipients: '' });
  const { enabled, recipients } = form;
  const setEnabled = (enabled: boolean) => setForm((f) => ({ ...f, enabled }));
  const setRecipients = (recipients: string) => setForm((f) => ({ ...f, recipients }));
  const [saved, setSaved] = useState(false);
  const [sent, setSent] = useState<string | null>(null);
  const act = useAction();
  const test = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await call('updateErrorAlerts', { params: { slug }, body: { enabled, recipients: lines(recipients) } }));
      setSaved(true);
    });
  };
  const reenable = (email: string) => {
    void act.run(async () => {
      r.setData(await call('updateErrorAlerts', { params: { slug }, body: { reenable: [email] } }));
    });
  };
  const sendTest = () => {
    setSent(null);
    void test.run(async () => {
      const res = await call('testErrorAlert', { params: { slug } });
      setSent(`Test alert sent to ${res.to.join(', ')}.`);
    });
  };
  return (
    <section aria-labelledby="alerts-h" class="panel">
      <h2 id="alerts-h">Alert email</h2>
      <p class="muted">
        New production issues and regressions send email, at most one per issue every 6 hours. Ignored issues never do. Change when and to whom in{' '}
        <a href={projectPath(slug, '/alerts')}>alert rules</a>.
      </p>
      <Loaded r={r} what="alert settings">
        {() => (
          <form onSubmit={save} class="stack">
            <label class="check">
              <input type="checkbox" name="alertsEnabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
              Send alert email
            </label>
            <label>
              Recipients <span class="muted">(one address per line; empty sends to the project owner)</span>
              <textarea name="recipients" rows={rowsFor(recipients, 3)} value={recipients} onInput={(e) => setRecipients(e.currentTarget.value)} />
            </label>
            {r.data!.suppressed.length > 0 && (
              <div role="note" class="stack">
                <p class="muted">The mail provider reported these addresses as undeliverable; alert mail skips them until re-enabled.</p>
                <ul class="plain">
                  {r.data!.suppressed.map((s) => (
                    <li key={s.email}>
                      <Badge kind="bad">{s.reason === 'bounced' ? 'bounced' : 'marked as spam'}</Badge> {s.email}{' '}
                      <button type="button" class="secondary" onClick={() => reenable(s.email)} disabled={act.busy}>
                        Re-enable {s.email}
                      </button>
                    </li>
                  ))}
                </ul>
              </div>
            )}
            <ErrorNote error={act.error} />
            <SubmitRow label="Save alert settings" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
      <div class="row">
        <button type="button" class="secondary" onClick={sendTest} disabled={test.busy}>
          Send a test alert
        </button>
        <span class="muted">One test alert per 15 minutes.</span>
      </div>
      {sent && (
        <p role="status" class="ok-text">
          {sent}
        </p>
      )}
      <ErrorNote error={test.error} />
    </section>
  );
}

/**
 * Custom domains: claim one, add the TXT record shown, verify. Until verified a domain serves nothing; the API's
 * message says why a claim or a verification was refused (reserved, taken, record missing).
 */
function CustomDomains({ slug }: { slug: string }) {
  const r = useResource(() => call('listDomains', { params: { slug } }), [slug]);
  const [domain, setDomain] = useState('');
  const add = useAction();
  const row = useAction();
  const reload = async () => r.setData(await call('listDomains', { params: { slug } }));
  const submit = (e: Event) => {
    e.preventDefault();
    void add.run(async () => {
      await call('addDomain', { params: { slug }, body: { domain: domain.trim() } });
      setDomain('');
      await reload();
    });
  };
  const verify = (d: ProjectDomain) =>
    void row.run(async () => {
      try {
        await call('verifyDomain', { params: { slug, domain: d.domain } });
      } finally {
        await reload();
      }
    });
  const remove = (d: ProjectDomain) =>
    void row.run(async () => {
      await call('removeDomain', { params: { slug, domain: d.domain } });
      await reload();
    });
  return (
    <section aria-labelledby="domains-h" class="panel">
      <h2 id="domains-h">Custom domains</h2>
      <p class="muted">A domain serves this project's live production deploy once you prove you control it: add the TXT record shown, then verify.</p>
      <Loaded r={r} what="custom domains">
        {(d) =>
          d.domains.length ? (
            <Table caption="Custom domains" columns={['Domain', 'State', 'DNS record to add', '']}>
              {d.domains.map((x) => (
                <tr key={x.domain}>
                  <td>{x.domain}</td>
                  <td>{x.verified ? <Badge kind="ok">verified</Badge> : <Badge kind="busy">pending</Badge>}</td>
                  <td>
                    {x.verified ? (
                      <span class="muted">none needed</span>
                    ) : (
                      <span class="stack domain-record">
                        <code>TXT {x.verification.name}</code>
                        <code>{x.verification.value}</code>
                        <CopyButton text={x.verification.value} what={`the TXT value for ${x.domain}`} />
                      </span>
                    )}
                  </td>
                  <td class="row">
                    {!x.verified && (
                      <button type="button" class="secondary" disabled={row.busy} onClick={() => verify(x)}>
                        Verify {x.domain}
                      </button>
                    )}
                    <button type="button" class="secondary" disabled={row.busy} onClick={() => remove(x)}>
                      Remove {x.domain}
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No custom domains yet.</p>
          )
        }
      </Loaded>
      <ErrorNote error={row.error} />
      <form onSubmit={submit} class="stack">
        <label>
          Domain <span class="muted">(a hostname you control, e.g. shop.example.com)</span>
          <input name="domain" value={domain} onInput={(e) => setDomain(e.currentTarget.value)} placeholder="shop.example.com" />
        </label>
        <ErrorNote error={add.error} />
        <SubmitRow label="Add domain" busy={add.busy} />
      </form>
    </section>
  );
}

/**
 * Which hosts are production and which preview, for events sent from browsers (the project's environmentHosts). The
 * platform's own hosts of the project (its site, verified domains, deploy hosts) count without being listed; these are
 * the other hosts the project's apps run on. They serve nothing, which the text says: custom domains are below.
 */
function EnvironmentHosts({ slug }: { slug: string }) {
  const r = useResource<ProjectAnswer>(() => call('getProject', { params: { slug } }), [slug]);
  const [form, setForm] = useFormFrom(
    r.data,
    (d) => ({ production: d.project.environmentHosts.production.join('\n'), preview: d.project.environmentHosts.preview.join('\n') }),
    { production: '', preview: '' },
  );
  const { production, preview } = form;
  const setProduction = (production: string) => setForm((f) => ({ ...f, production }));
  const setPreview = (preview: string) => setForm((f) => ({ ...f, preview }));
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      const body = { environmentHosts: { production: lines(production), preview: lines(preview) } };
      r.setData(await call('updateProject', { params: { slug }, body }));
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="envhosts-h" class="panel">
      <h2 id="envhosts-h">Environment hosts</h2>
      <p class="muted">
        Events from pages on these hosts are stamped production or preview, and when allowed browser origins are listed below these hosts may send too. The
        project's own site, its verified custom domains and its deploy hosts count without being listed.
      </p>
      <p class="muted">These hosts serve nothing: to serve the site on a domain of yours, add it under Custom domains.</p>
      <Loaded r={r} what="the project's environment hosts">
        {() => (
          <form onSubmit={save} class="stack">
            <label>
              Production hosts <span class="muted">(one hostname or *.hostname per line, optionally with :port)</span>
              <textarea
                name="productionHosts"
                rows={rowsFor(production, 3)}
                value={production}
                onInput={(e) => setProduction(e.currentTarget.value)}
                placeholder={'shop.example.com\n*.shop.example.com'}
              />
            </label>
            <label>
              Preview hosts <span class="muted">(the same form)</span>
              <textarea
                name="previewHosts"
                rows={rowsFor(preview, 3)}
                value={preview}
                onInput={(e) => setPreview(e.currentTarget.value)}
                placeholder={'*.preview.example.com\nstaging.example.com'}
              />
            </label>
            <ErrorNote error={act.error} />
            <SubmitRow label="Save environment hosts" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
    </section>
  );
}

/**
 * Source maps (issue 37): a build's maps are always kept privately for symbolication; this only says whether the
 * project's sites also serve the `*.map` files (and their sources) to anyone.
 */
function SourceMapSettings({ slug }: { slug: string }) {
  const r = useResource<ProjectAnswer>(() => call('getProject', { params: { slug } }), [slug]);
  const [serve, setServe] = useFormFrom(r.data, (d) => d.project.serveSourceMaps, false);
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await call('updateProject', { params: { slug }, body: { serveSourceMaps: serve } }));
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="sourcemaps-h" class="panel">
      <h2 id="sourcemaps-h">Source maps</h2>
      <p class="muted">
        Each build's source maps are kept privately to turn minified stack traces back into your source. The sites answer a <code>.map</code> as a missing file
        unless you choose to publish them.
      </p>
      <Loaded r={r} what="the project's settings">
        {() => (
          <form onSubmit={save} class="stack">
            <label class="check">
              <input type="checkbox" name="serveSourceMaps" checked={serve} onChange={(e) => setServe(e.currentTarget.checked)} />
              Serve source maps publicly (anyone can then read the sources they contain)
            </label>
            <ErrorNote error={act.error} />
            <SubmitRow label="Save source map setting" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
    </section>
  );
}

/**
 * GitHub (issue 41): deploys queued by a push or pull request set a commit status and keep one pull-request comment;
 * with failOnNewErrors a preview that brings new errors fails its status (GET/PATCH /v1/projects/:slug/github/settings).
 */
function GithubSettings({ slug }: { slug: string }) {
  const r = useResource(() => call('getGithubSettings', { params: { slug } }), [slug]);
  const [fail, setFail] = useFormFrom(r.data, (d) => d.failOnNewErrors, false);
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await call('updateGithubSettings', { params: { slug }, body: { failOnNewErrors: fail } }));
      setSaved(true);
    });
  };
  return (
    <section aria-labelledby="github-h" class="panel">
      <h2 id="github-h">GitHub checks</h2>
      <p class="muted">
        Deploys started by a push or a pull request of the connected repository set a commit status and keep one comment on the pull request up to date (its
        preview, the issues seen only there, crash-free sessions).
      </p>
      <Loaded r={r} what="the GitHub settings">
        {() => (
          <form onSubmit={save} class="stack">
            <label class="check">
              <input type="checkbox" name="failOnNewErrors" checked={fail} onChange={(e) => setFail(e.currentTarget.checked)} />
              Fail a preview's commit status when it introduces new errors (within 30 minutes of going ready)
            </label>
            <ErrorNote error={act.error} />
            <SubmitRow label="Save GitHub setting" busy={act.busy} saved={saved} />
          </form>
        )}
      </Loaded>
    </section>
  );
}
