import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { Badge, ErrorNote, Loaded, PageHead, Table, useAction, useResource } from '../ui.tsx';
import type { AlertRule, AlertTrigger } from '../../../schemas/api/alerts.ts';

/**
 * Alert rules (issue 41): the project's rules (listAlertRules), each switched on or off, deleted, and a form for a new
 * one: when (one trigger), for which environments and levels, then e-mail and/or webhook endpoints, and the throttle.
 * A project that never wrote its rules shows the default rule (spec §7.6's e-mail), marked as such.
 */
const ENVIRONMENTS = ['production', 'preview', 'unknown'] as const;
const LEVELS = ['fatal', 'error', 'warning', 'info', 'debug'] as const;
type TriggerType = AlertTrigger['type'];
const TRIGGERS: Array<[TriggerType, string]> = [
  ['new_issue', 'A new issue'],
  ['regression', 'A resolved issue comes back'],
  ['escalation', 'An issue escalates'],
  ['event_frequency', 'N events in M minutes'],
  ['user_frequency', 'N users in M minutes'],
];

function triggerText(t: AlertTrigger): string {
  if (t.type === 'event_frequency') return `${t.count} events in ${t.minutes} min`;
  if (t.type === 'user_frequency') return `${t.count} users in ${t.minutes} min`;
  return { new_issue: 'new issue', regression: 'regression', escalation: 'escalation' }[t.type];
}

const throttleText = (m: number) => (m % 60 === 0 ? `${m / 60} h` : `${m} min`);

export function AlertRules() {
  const { params } = useRoute();
  const slug = params.slug!;
  const r = useResource(() => call('listAlertRules', { params: { slug } }), [slug]);
  const endpoints = useResource(() => call('listWebhookEndpoints', { params: { slug } }), [slug]);
  const act = useAction();
  const urlOf = (id: string) => endpoints.data?.endpoints.find((e) => e.id === id)?.url ?? id;
  const toggle = (rule: AlertRule) =>
    void act.run(async () => {
      await call('updateAlertRule', { params: { slug, ruleId: rule.id }, body: { enabled: !rule.enabled } });
      await r.reload();
    });
  const remove = (rule: AlertRule) =>
    void act.run(async () => {
      await call('deleteAlertRule', { params: { slug, ruleId: rule.id } });
      await r.reload();
    });
  return (
    <div>
      <PageHead title="Alert rules" />
      <p class="muted">
        When an issue earns an alert, and who hears about it. Each rule alerts at most once per issue in its throttle window, never for ignored issues. E-mail
        goes to the alert recipients in <a href={projectPath(slug, '/settings')}>settings</a> (off there, off here).
      </p>
      <Loaded r={r} what="alert rules">
        {(list) =>
          list.rules.length ? (
            <Table caption="Alert rules" columns={['Rule', 'When', 'Environments', 'Levels', 'Then', 'Throttle', '']} class="alert-rules">
              {list.rules.map((rule) => (
                <tr key={rule.id}>
                  <td>
                    {rule.name} {rule.default && <Badge kind="info">default</Badge>} {!rule.enabled && <Badge kind="muted">off</Badge>}
                  </td>
                  <td>{rule.triggers.map(triggerText).join(' or ')}</td>
                  <td>{rule.environments.length ? rule.environments.join(', ') : 'all'}</td>
                  <td>{rule.levels.length ? rule.levels.join(', ') : 'all'}</td>
                  <td>
                    {[...(rule.actions.email ? ['e-mail'] : []), ...rule.actions.endpointIds.map(urlOf)].map((a) => (
                      <div key={a}>{a}</div>
                    ))}
                  </td>
                  <td>{throttleText(rule.throttleMinutes)}</td>
                  <td class="row">
                    <button type="button" class="secondary small" onClick={() => toggle(rule)} disabled={act.busy}>
                      {rule.enabled ? 'Disable' : 'Enable'} <span class="sr-only">{rule.name}</span>
                    </button>
                    <button type="button" class="danger small" onClick={() => remove(rule)} disabled={act.busy}>
                      Delete <span class="sr-only">{rule.name}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          ) : (
            <p class="muted">No rules: this project sends no alerts.</p>
          )
        }
      </Loaded>
      <ErrorNote error={act.error} />
      <NewRule slug={slug} endpoints={endpoints.data?.endpoints ?? []} onCreated={() => void r.reload()} />
    </div>
  );
}

function NewRule({ slug, endpoints, onCreated }: { slug: string; endpoints: Array<{ id: string; url: string }>; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<TriggerType>('new_issue');
  const [count, setCount] = useState(100);
  const [minutes, setMinutes] = useState(60);
  const [envs, setEnvs] = useState<Set<string>>(new Set(['production']));
  const [levels, setLevels] = useState<Set<string>>(new Set());
  const [email, setEmail] = useState(true);
  const [hooks, setHooks] = useState<Set<string>>(new Set());
  const [throttle, setThrottle] = useState(360);
  const act = useAction();
  const flip = (set: Set<string>, v: string, to: (s: Set<string>) => void) => {
    const next = new Set(set);
    if (next.has(v)) next.delete(v);
    else next.add(v);
    to(next);
  };
  const frequency = type === 'event_frequency' || type === 'user_frequency';
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const trigger = (frequency ? { type, count, minutes } : { type }) as AlertTrigger;
      await call('createAlertRule', {
        params: { slug },
        body: {
          name,
          triggers: [trigger],
          environments: [...envs] as Array<(typeof ENVIRONMENTS)[number]>,
          levels: [...levels] as Array<(typeof LEVELS)[number]>,
          actions: { email, endpointIds: [...hooks] },
          throttleMinutes: throttle,
        },
      });
      setName('');
      onCreated();
    });
  };
  return (
    <section aria-labelledby="new-rule" class="panel">
      <h2 id="new-rule">New rule</h2>
      <form onSubmit={create} class="stack">
        <label>
          Name
          <input name="ruleName" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <fieldset>
          <legend>When</legend>
          {TRIGGERS.map(([t, label]) => (
            <label class="check" key={t}>
              <input type="radio" name="trigger" value={t} checked={type === t} onChange={() => setType(t)} />
              {label}
            </label>
          ))}
          {frequency && (
            <div class="row-form">
              <label>
                N
                <input name="count" type="number" min={1} max={1_000_000} value={count} onInput={(e) => setCount(Number(e.currentTarget.value))} />
              </label>
              <label>
                M (minutes)
                <input name="minutes" type="number" min={1} max={1_440} value={minutes} onInput={(e) => setMinutes(Number(e.currentTarget.value))} />
              </label>
            </div>
          )}
        </fieldset>
        <fieldset>
          <legend>
            Environments <span class="muted">(none ticked: all)</span>
          </legend>
          {ENVIRONMENTS.map((v) => (
            <label class="check" key={v}>
              <input type="checkbox" name={`env-${v}`} checked={envs.has(v)} onChange={() => flip(envs, v, setEnvs)} />
              {v}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>
            Levels <span class="muted">(none ticked: all; an event without a level is an error)</span>
          </legend>
          {LEVELS.map((v) => (
            <label class="check" key={v}>
              <input type="checkbox" name={`level-${v}`} checked={levels.has(v)} onChange={() => flip(levels, v, setLevels)} />
              {v}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Then</legend>
          <label class="check">
            <input type="checkbox" name="email" checked={email} onChange={(e) => setEmail(e.currentTarget.checked)} />
            E-mail the alert recipients
          </label>
          {endpoints.map((ep) => (
            <label class="check" key={ep.id}>
              <input type="checkbox" name={`endpoint-${ep.id}`} checked={hooks.has(ep.id)} onChange={() => flip(hooks, ep.id, setHooks)} />
              Send <code>issue.alert</code> to {ep.url}
            </label>
          ))}
          {!endpoints.length && (
            <p class="muted">
              No webhook endpoints yet: <a href={projectPath(slug, '/webhooks')}>add one</a> to send alerts to Slack, Discord or your own service.
            </p>
          )}
        </fieldset>
        <label>
          Throttle <span class="muted">(minutes: at most one alert per issue from this rule in this time)</span>
          <input name="throttle" type="number" min={1} max={43_200} value={throttle} onInput={(e) => setThrottle(Number(e.currentTarget.value))} />
        </label>
        <ErrorNote error={act.error} />
        <div class="row">
          <button type="submit" disabled={act.busy}>
            Create rule
          </button>
        </div>
      </form>
    </section>
  );
}
