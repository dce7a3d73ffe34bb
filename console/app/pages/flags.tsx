import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call } from '../api.ts';
import { Badge, ErrorNote, Loaded, PageHead, Time, useAction, useResource } from '../ui.tsx';
import type { Flag, PatchFlagBody } from '../../../schemas/api/flags.ts';

/**
 * Feature flags (the listFlags, createFlag, updateFlag and deleteFlag routes): the list with an on/off switch and
 * the rollout, a new flag, and per flag its variants, payload and conditions edited as JSON (the API checks them and
 * its message says what is wrong). Changes reach the edge's evaluation within seconds.
 */
export function Flags() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('listFlags', { params: { slug } }), [slug]);
  const [key, setKey] = useState('');
  const [description, setDescription] = useState('');
  const [rollout, setRollout] = useState(100);
  const act = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      await call('createFlag', { params: { slug }, body: { key: key.trim(), description, rolloutPercentage: rollout, enabled: false } });
      setKey('');
      setDescription('');
      await r.reload();
    });
  };
  return (
    <div>
      <PageHead title="Feature flags" />
      <ErrorNote error={act.error} />
      <Loaded r={r} what="flags">
        {(d) =>
          d.data.length === 0 ? (
            <p class="empty">No flags yet. cx.flags.isEnabled() and the Node SDK's flags.isEnabled() read them.</p>
          ) : (
            <ul class="cards">
              {d.data.map((f) => (
                <FlagCard key={f.key} slug={slug} flag={f} onChange={() => void r.reload()} />
              ))}
            </ul>
          )
        }
      </Loaded>
      <section aria-labelledby="new-flag" class="panel">
        <h2 id="new-flag">New flag</h2>
        <form onSubmit={create} class="row-form">
          <label>
            Key
            <input name="flagKey" required maxLength={100} pattern="[a-zA-Z0-9][a-zA-Z0-9_.\-]*" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
          </label>
          <label>
            Description <span class="muted">(optional)</span>
            <input name="flagDescription" maxLength={1000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          </label>
          <label class="narrow-field">
            Rollout %
            <input name="flagRollout" type="number" min={0} max={100} value={rollout} onInput={(e) => setRollout(Number(e.currentTarget.value))} />
          </label>
          <button type="submit" disabled={act.busy}>
            Create flag (off)
          </button>
        </form>
      </section>
    </div>
  );
}

function FlagCard({ slug, flag, onChange }: { slug: string; flag: Flag; onChange: () => void }) {
  const [rollout, setRollout] = useState(flag.rolloutPercentage);
  const [json, setJson] = useState(() => JSON.stringify({ variants: flag.variants, payload: flag.payload ?? null, conditions: flag.conditions }, null, 2));
  const [jsonError, setJsonError] = useState<string | null>(null);
  const act = useAction();
  const params = { slug, key: flag.key };
  const change = (body: PatchFlagBody) =>
    act.run(async () => {
      await call('updateFlag', { params, body });
      onChange();
    });
  const saveJson = () => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(json);
    } catch (err) {
      setJsonError(`Not JSON: ${(err as Error).message}`);
      return;
    }
    setJsonError(null);
    // What the JSON holds is the person's; the API checks it and says what is wrong.
    const body = { variants: parsed.variants ?? [], conditions: parsed.conditions ?? [] } as PatchFlagBody;
    if (parsed.payload !== null && parsed.payload !== undefined) body.payload = parsed.payload;
    void change(body);
  };
  const remove = () => {
    if (!confirm(`Delete the flag ${flag.key}? Clients asking for it get unknown_flag.`)) return;
    void act.run(async () => {
      await call('deleteFlag', { params });
      onChange();
    });
  };
  return (
    <li class="card flag">
      <div class="row">
        {/* A switch, not a button that says what it would do: its state is the knob's side and aria-checked. */}
        <button
          type="button"
          role="switch"
          aria-checked={flag.enabled}
          class={flag.enabled ? 'switch on' : 'switch'}
          onClick={() => void change({ enabled: !flag.enabled })}
          disabled={act.busy}
          aria-label={`${flag.key} enabled`}
        >
          <span class="track" aria-hidden="true">
            <span class="knob" />
          </span>
          <span class="state">{flag.enabled ? 'On' : 'Off'}</span>
        </button>
        <strong>
          <code>{flag.key}</code>
        </strong>
        <span class="muted">{flag.description}</span>
        {flag.variants.length > 0 && <Badge kind="">{flag.variants.map((v) => `${v.key} ${v.weight}%`).join(' · ')}</Badge>}
        {flag.conditions.length > 0 && (
          <Badge kind="">
            {flag.conditions.length} {flag.conditions.length === 1 ? 'condition' : 'conditions'}
          </Badge>
        )}
        <span class="muted">
          changed <Time iso={flag.updatedAt} />
        </span>
      </div>
      <div class="row">
        <label class="inline">
          Rollout %
          <input type="number" min={0} max={100} value={rollout} onInput={(e) => setRollout(Number(e.currentTarget.value))} />
        </label>
        <button
          type="button"
          class="secondary small"
          disabled={act.busy || rollout === flag.rolloutPercentage}
          onClick={() => void change({ rolloutPercentage: rollout })}
        >
          Save rollout
        </button>
        <button type="button" class="danger small" onClick={remove} disabled={act.busy}>
          Delete
        </button>
      </div>
      <details>
        <summary>Variants, payload and conditions (JSON)</summary>
        <label>
          <span class="sr-only">Variants, payload and conditions of {flag.key}</span>
          <textarea rows={8} class="mono" value={json} onInput={(e) => setJson(e.currentTarget.value)} />
        </label>
        {jsonError && (
          <p class="note error" role="alert">
            {jsonError}
          </p>
        )}
        <button type="button" class="secondary small" onClick={saveJson} disabled={act.busy}>
          Save variants, payload and conditions
        </button>
      </details>
      <ErrorNote error={act.error} />
    </li>
  );
}
