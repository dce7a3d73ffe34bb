import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { DeviceLogin } from '../../../schemas/api/accounts.ts';
import { call } from '../api.ts';
import { ago, ErrorNote, PageHead, useAction } from '../ui.tsx';

/**
 * CLI device login (RFC 8628). The CLI prints a code and this page's URL (`/cli/device?user_code=...`). Nothing is
 * approved in one click (§5.4, issue 38): the page first shows the login (GET /v1/cli/device: which CLI, where it
 * started: the address and user agent, and when), then approves (POST /v1/cli/device/approve) only
 *   - a code the person typed here themselves, or
 *   - a code that came in the link, once they tick that it is the one their terminal shows and that they started it
 *     (someone else's link carries someone else's code).
 */
export function DeviceApproval() {
  const { query: q } = useLocation();
  const linked = (q.user_code ?? '').trim();
  const [typed, setTyped] = useState('');
  const [login, setLogin] = useState<DeviceLogin | null>(null);
  const [approved, setApproved] = useState<string | null>(null);
  const lookup = useAction();
  const show = (code: string) =>
    void lookup.run(async () => {
      setLogin(await call('getDeviceLogin', { query: { user_code: code } }));
    });
  // biome-ignore lint/correctness/useExhaustiveDependencies: looked up once per linked code
  useEffect(() => {
    if (linked) show(linked);
  }, [linked]);

  let body;
  if (approved !== null)
    body = (
      <div class="note ok" role="status">
        <p>
          Approved: <strong>{approved}</strong> is signed in as you. You can close this page and go back to the terminal.
        </p>
      </div>
    );
  else if (login) body = <ConfirmLogin login={login} prefilled={Boolean(linked) && !typed} onApproved={setApproved} />;
  else
    body = (
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          show(typed.trim());
        }}
      >
        {linked ? null : (
          <p>
            Type the code your terminal shows after <code>cx login</code>.
          </p>
        )}
        <label>
          Code
          <input
            name="user_code"
            class="code-input"
            required
            maxLength={20}
            autoComplete="off"
            placeholder="XXXX-XXXX"
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value.toUpperCase())}
          />
        </label>
        <ErrorNote error={lookup.error} />
        <button type="submit" disabled={lookup.busy}>
          Continue
        </button>
      </form>
    );
  return (
    <div class="narrow">
      <PageHead title="Approve a CLI login" />
      {body}
    </div>
  );
}

/** The login to approve: which CLI, where and when it started; a code from a link must be confirmed first. */
function ConfirmLogin({ login, prefilled, onApproved }: { login: DeviceLogin; prefilled: boolean; onApproved: (client: string) => void }) {
  const [confirmed, setConfirmed] = useState(false);
  const act = useAction();
  const approve = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const r = await call('approveDeviceLogin', { body: { user_code: login.user_code } });
      onApproved(r.client_name);
    });
  };
  return (
    <form onSubmit={approve} class="stack device-login">
      <p>
        <strong>{login.client_name}</strong> <span class="muted">(the CLI's own name for itself)</span> asks to sign in as you.
      </p>
      <dl class="login-origin">
        <dt>Code</dt>
        <dd>
          <code class="user-code">{login.user_code}</code>
        </dd>
        <dt>Started</dt>
        <dd class="login-started">
          <time dateTime={login.started_at}>{new Date(login.started_at).toLocaleString()}</time> <span class="muted">({ago(login.started_at)})</span>
        </dd>
        <dt>From address</dt>
        <dd class="login-ip">
          <code>{login.ip ?? 'unknown'}</code>
        </dd>
        <dt>Program</dt>
        <dd class="login-agent">
          <code>{login.user_agent ?? 'unknown'}</code>
        </dd>
      </dl>
      {prefilled ? (
        <label class="check confirm-code">
          <input type="checkbox" name="confirm" checked={confirmed} onChange={(e) => setConfirmed(e.currentTarget.checked)} />
          This code is the one my terminal shows, and I started this login myself.
        </label>
      ) : null}
      <p class="muted">If you did not start this login, or the address or program are not yours, close this page: nothing is approved.</p>
      <ErrorNote error={act.error} />
      <button type="submit" disabled={act.busy || (prefilled && !confirmed)}>
        Approve this CLI login
      </button>
    </form>
  );
}
