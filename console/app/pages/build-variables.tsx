import { useState } from 'preact/hooks';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, useAction, useResource } from '../ui.tsx';
import type { EnvTarget, EnvVar } from '../../../schemas/api/env.ts';

/**
 * Build variables per environment (issue 42) on the Deploys page: each with its environments and branch (secret
 * values shown masked, as the API answers them), removed one by one, and a form for a new one: production, preview or
 * both, optionally one branch's previews, optionally secret. The CX_* system variables are listed as a reminder.
 */
const TARGETS: Record<string, EnvTarget[]> = { both: ['production', 'preview'], production: ['production'], preview: ['preview'] };

export function BuildVariables({ slug }: { slug: string }) {
  const r = useResource(() => call('listEnvVars', { params: { slug } }), [slug]);
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [target, setTarget] = useState('both');
  const [branch, setBranch] = useState('');
  const [secret, setSecret] = useState(false);
  const act = useAction();
  const add = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const b = branch.trim();
      await call('createEnvVar', {
        params: { slug },
        body: { key: key.trim(), value, secret, target: b ? ['preview'] : TARGETS[target], ...(b ? { branch: b } : {}) },
      });
      setKey('');
      setValue('');
      setBranch('');
      setSecret(false);
      await r.reload();
    });
  };
  const remove = (v: EnvVar) => {
    if (!confirm(`Remove ${v.key} (${v.target.join(', ')}${v.branch ? `, branch ${v.branch}` : ''})?`)) return;
    void act.run(async () => {
      await call('deleteEnvVar', { params: { slug, id: v.id } });
      await r.reload();
    });
  };
  return (
    <section aria-labelledby="env-h" class="panel">
      <h2 id="env-h">Build variables</h2>
      <p class="muted">
        Set per environment; a branch's value overrides the preview value in that branch's previews. Every build also gets <code>CX_DEPLOY_ID</code>,{' '}
        <code>CX_ENVIRONMENT</code>, <code>CX_GIT_SHA</code>, <code>CX_BRANCH</code>, <code>CX_DEPLOY_URL</code>, <code>CX_PRODUCTION_URL</code> and{' '}
        <code>CX_INGEST_KEY</code> (and <code>VITE_CX_…</code> copies).
      </p>
      <ErrorNote error={act.error} />
      <Loaded r={r} what="build variables">
        {(d) =>
          d.env.length === 0 ? (
            <p class="empty">No build variables.</p>
          ) : (
            <ul class="plain" aria-label="Build variables">
              {d.env.map((v) => (
                <li key={v.id} class="row">
                  <code>{v.key}</code> <code class="muted">{v.value}</code>
                  {v.target.map((t) => (
                    <Badge key={t} kind={`env ${t}`}>
                      {t}
                    </Badge>
                  ))}
                  {v.branch && (
                    <span class="muted">
                      branch <code>{v.branch}</code>
                    </span>
                  )}
                  {v.secret && <Badge kind="muted">secret</Badge>}
                  <button type="button" class="danger small" onClick={() => remove(v)} disabled={act.busy} aria-label={`Remove ${v.key} ${v.id}`}>
                    Remove
                  </button>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <form onSubmit={add} class="row-form" aria-label="Add a build variable">
        <label>
          Key
          <input name="envKey" required maxLength={256} pattern="[A-Z_][A-Z0-9_]*" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </label>
        <label>
          Value
          <input name="envValue" maxLength={65536} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
        <label>
          Environments
          <select name="envTarget" value={target} onChange={(e) => setTarget(e.currentTarget.value)} disabled={Boolean(branch.trim())}>
            <option value="both">production and preview</option>
            <option value="production">production</option>
            <option value="preview">preview</option>
          </select>
        </label>
        <label>
          Branch <span class="muted">(previews only)</span>
          <input name="envBranch" maxLength={200} value={branch} onInput={(e) => setBranch(e.currentTarget.value)} />
        </label>
        <label>
          <input type="checkbox" name="envSecret" checked={secret} onChange={(e) => setSecret(e.currentTarget.checked)} /> Secret
        </label>
        <button type="submit" disabled={act.busy}>
          Add variable
        </button>
      </form>
    </section>
  );
}
