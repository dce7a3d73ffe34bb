import { useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { get, patch, post, projectPath } from '../api.ts';
import { ErrorNote, lines, Loaded, PageHead, SubmitRow, useAction, useResource } from '../ui.tsx';

/**
 * Error settings (§2.7: paused, ingestOrigins, PATCH .../errors/settings) and alert email (§2.8, §7.6: enabled,
 * recipients, PATCH .../error-alerts; a test alert at most once per 15 minutes, POST .../error-alerts/test).
 * The API validates; the console shows its message, field by field.
 */
interface ErrorSettings {
  paused: boolean;
  ingestOrigins: string[];
}
interface AlertSettings {
  enabled: boolean;
  recipients: string[];
}

export function Settings() {
  const { params } = useRoute();
  const slug = params.slug!;
  return (
    <div>
      <PageHead title="Settings" />
      <IngestSettings slug={slug} />
      <AlertSettingsForm slug={slug} />
    </div>
  );
}

function IngestSettings({ slug }: { slug: string }) {
  const r = useResource(() => get<ErrorSettings>(projectPath(slug, '/errors/settings')), [slug]);
  const [paused, setPaused] = useState(false);
  const [origins, setOrigins] = useState('');
  const [saved, setSaved] = useState(false);
  const act = useAction();
  useEffect(() => {
    if (!r.data) return;
    setPaused(r.data.paused);
    setOrigins(r.data.ingestOrigins.join('\n'));
  }, [r.data]);
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await patch<ErrorSettings>(projectPath(slug, '/errors/settings'), { paused, ingestOrigins: lines(origins) }));
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
              Allowed browser origins <span class="muted">(one hostname per line, optionally with :port; empty allows every origin; at most 20)</span>
              <textarea name="ingestOrigins" rows={4} value={origins} onInput={(e) => setOrigins(e.currentTarget.value)} placeholder={'app.example.com\nlocalhost:3000'} />
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
  const r = useResource(() => get<AlertSettings>(projectPath(slug, '/error-alerts')), [slug]);
  const [enabled, setEnabled] = useState(true);
  const [recipients, setRecipients] = useState('');
  const [saved, setSaved] = useState(false);
  const [sent, setSent] = useState<string | null>(null);
  const act = useAction();
  const test = useAction();
  useEffect(() => {
    if (!r.data) return;
    setEnabled(r.data.enabled);
    setRecipients(r.data.recipients.join('\n'));
  }, [r.data]);
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    void act.run(async () => {
      r.setData(await patch<AlertSettings>(projectPath(slug, '/error-alerts'), { enabled, recipients: lines(recipients) }));
      setSaved(true);
    });
  };
  const sendTest = () => {
    setSent(null);
    void test.run(async () => {
      const res = await post<{ sent: true; to: string[] }>(projectPath(slug, '/error-alerts/test'));
      setSent(`Test alert sent to ${res.to.join(', ')}.`);
    });
  };
  return (
    <section aria-labelledby="alerts-h" class="panel">
      <h2 id="alerts-h">Alert email</h2>
      <p class="muted">New production issues and regressions send email, at most one per issue every 6 hours. Ignored issues never do.</p>
      <Loaded r={r} what="alert settings">
        {() => (
          <form onSubmit={save} class="stack">
            <label class="check">
              <input type="checkbox" name="alertsEnabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
              Send alert email
            </label>
            <label>
              Recipients <span class="muted">(one address per line; empty sends to the project owner)</span>
              <textarea name="recipients" rows={3} value={recipients} onInput={(e) => setRecipients(e.currentTarget.value)} />
            </label>
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
