import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { post } from '../api.ts';
import { ErrorNote, PageHead, useAction } from '../ui.tsx';
import type { DeviceApproveAnswer } from '../../../schemas/api/accounts.ts';

/**
 * CLI device login (POST /v1/cli/device/approve): the CLI prints a code and this page's URL
 * (`/cli/device?user_code=...`); the signed-in person checks the code matches and approves it.
 */
export function DeviceApproval() {
  const { query } = useLocation();
  const [code, setCode] = useState(query.user_code ?? '');
  const [approved, setApproved] = useState<string | null>(null);
  const act = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const r = await post<DeviceApproveAnswer>('/cli/device/approve', { user_code: code.trim() });
      setApproved(r.client_name);
    });
  };
  return (
    <div class="narrow">
      <PageHead title="Approve a CLI login" />
      {approved !== null ? (
        <div class="note ok" role="status">
          <p>
            Approved: <strong>{approved}</strong> is signed in as you. You can close this page and go back to the terminal.
          </p>
        </div>
      ) : (
        <form onSubmit={submit} class="stack">
          <p>Check that this code is the one your terminal shows. Approve it only if you started the login yourself.</p>
          <label>
            Code
            <input
              name="user_code"
              class="code-input"
              required
              maxLength={20}
              autoComplete="off"
              value={code}
              onInput={(e) => setCode(e.currentTarget.value.toUpperCase())}
            />
          </label>
          <ErrorNote error={act.error} />
          <button type="submit" disabled={act.busy}>
            Approve this CLI login
          </button>
        </form>
      )}
    </div>
  );
}
