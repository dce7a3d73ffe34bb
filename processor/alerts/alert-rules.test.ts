import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { createLogger } from '../../platform/logger.ts';
import type { Mailer, MailMessage } from '../../platform/ports/mailer.ts';
import { routePath } from '../../schemas/api/client.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch, StampedErrorEvent } from '../../schemas/error-event.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { processed } from '../../test/support/platform.ts';
import { batch, event } from '../errors/error-pipeline.test-scenarios.ts';
import { type ErrorConsumer, startErrorConsumer } from '../errors/error-consumer.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from '../webhooks/webhook-dispatcher.ts';
import { createAlertRuleEvaluation } from './evaluate-rules.ts';

/**
 * Alert rules evaluated (issue 41): rules written through HTTP, events through the bus and the error pipeline, mail
 * through a recording mailer and `issue.alert` through the webhook fan-out to a loopback HTTPS receiver. Each step
 * stops the error consumer after the batch (stop waits for the alerts in flight), so what did not fire is known not to
 * have fired, then starts it again; the clock is a ManualClock.
 */
const MIN = 60_000;
const clock = new ManualClock();
const mails: MailMessage[] = [];
const recordingMailer: Mailer = { adapter: 'file', send: async (m) => void mails.push(m), close: async () => undefined };

let receiver: HttpsReceiver;
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;
let consumer: ErrorConsumer;
let dispatcher: WebhookDispatcher;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
  t = await buildTestApi({ overrides: { clock, mailer: recordingMailer, outbound: outbound.guard }, env: { PUBLIC_BASE_URL: 'http://console.test' } });
  owner = await signUpAndSignIn(t.app, t.platform);
  consumer = await startErrorConsumer(t.platform, { ledgerPruneIntervalMs: false });
  dispatcher = await startWebhookDispatcher(t.platform, { sweepIntervalMs: false });
});
afterAll(async () => {
  await consumer?.stop();
  await dispatcher?.stop();
  await t?.close();
  await receiver?.close();
});

const session = () => sessionHeaders(owner.cookie);
const api = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, status?: number) => {
  const res = await t.app.inject({ method, url, headers: session(), ...(payload ? { payload } : {}) });
  if (status) expect(res.statusCode, `${method} ${url} -> ${res.body}`).toBe(status);
  return res;
};
const newProject = () => createProject(t.app, owner.cookie, { environmentHosts: { production: ['app.example.com'], preview: ['pr-7.preview.example.com'] } });
/** A project whose rules are `rules` alone (the stored default rule deleted), alert mail to one address. */
async function projectWith(rules: object[]) {
  const p = await newProject();
  await api('PATCH', routePath('updateErrorAlerts', { slug: p.slug }), { recipients: ['oncall@example.test'] }, 200);
  const ids: string[] = [];
  for (const r of rules) ids.push((await api('POST', routePath('createAlertRule', { slug: p.slug }), r, 201)).json().rule.id);
  await api('DELETE', routePath('deleteAlertRule', { slug: p.slug, ruleId: 'default' }), undefined, 204);
  return { ...p, ruleIds: ids };
}
/** Publish a batch, let the pipeline process it and finish its alerts (the consumer's stop waits for them). */
async function run(m: StampedErrorBatch) {
  await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
  await processed(t.platform);
  await consumer.stop();
  consumer = await startErrorConsumer(t.platform, { ledgerPruneIntervalMs: false });
}
const send = (projectId: string, events: StampedErrorEvent[], originHost = 'app.example.com') =>
  run(batch(projectId, events, { originHost, receivedAt: clock.now() }));
const mailsFor = (slug: string) => mails.filter((m) => m.text.includes(`(${slug})`));
const groupOf = async (projectId: string, name: string) =>
  (await t.platform.db.query<{ id: string }>('SELECT id FROM error_groups WHERE project_id = $1 AND name = $2', [projectId, name])).rows[0]!.id;

describe('alert rules, evaluated', () => {
  it('a rule fires once per throttle window: a regression inside the window sends nothing, one after it mails again', async () => {
    const p = await projectWith([
      { name: 'Anything new or back', triggers: [{ type: 'new_issue' }, { type: 'regression' }], actions: { email: true }, throttleMinutes: 60 },
    ]);
    await send(p.id, [event({ name: 'ThrottleError' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);
    expect(mailsFor(p.slug)[0]!.subject).toContain('New issue in production');
    expect(mailsFor(p.slug)[0]!.text).toContain('alert rule "Anything new or back"');
    expect(mailsFor(p.slug)[0]!.to).toEqual(['oncall@example.test']);
    const groupId = await groupOf(p.id, 'ThrottleError');

    // The same batch again (a re-delivery) and a regression 30 minutes later: inside the window.
    await api('POST', routePath('resolveIssue', { slug: p.slug, groupId }), {}, 200);
    clock.advance(30 * MIN);
    await send(p.id, [event({ name: 'ThrottleError' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);

    await api('POST', routePath('resolveIssue', { slug: p.slug, groupId }), {}, 200);
    clock.advance(31 * MIN);
    await send(p.id, [event({ name: 'ThrottleError' })]);
    expect(mailsFor(p.slug)).toHaveLength(2);
    expect(mailsFor(p.slug)[1]!.subject).toContain('Regression in production');
    expect(mailsFor(p.slug)[1]!.text).toContain('every 60 minutes');
  });

  it('environment and level filters: only events the rule looks at trigger it', async () => {
    const p = await projectWith([
      { name: 'Fatal previews', triggers: [{ type: 'new_issue' }], environments: ['preview'], levels: ['fatal'], actions: { email: true } },
    ]);
    await send(p.id, [event({ name: 'ProdFatal', context: { level: 'fatal' } })]);
    await send(p.id, [event({ name: 'PreviewPlain' })], 'pr-7.preview.example.com');
    await send(p.id, [event({ name: 'PreviewWarning', context: { level: 'warning' } })], 'pr-7.preview.example.com');
    expect(mailsFor(p.slug)).toHaveLength(0);
    await send(p.id, [event({ name: 'PreviewFatal', context: { level: 'fatal' } })], 'pr-7.preview.example.com');
    expect(mailsFor(p.slug)).toHaveLength(1);
    expect(mailsFor(p.slug)[0]!.subject).toContain('New issue in preview: PreviewFatal');
  });

  it('an endpoint action delivers issue.alert signed to that endpoint only; error-alerts enabled:false silences the e-mail, not the endpoint', async () => {
    const p = await newProject();
    const make = async (path: string) =>
      (await api('POST', routePath('createWebhookEndpoint', { slug: p.slug }), { url: receiver.url.replace(/\/hook$/, path), events: [] }, 201)).json()
        .endpoint as {
        id: string;
        secret: string;
      };
    const chosen = await make(`/${p.slug}-chosen`);
    const other = await make(`/${p.slug}-other`);
    await api(
      'POST',
      routePath('createAlertRule', { slug: p.slug }),
      {
        name: 'Page the hook',
        triggers: [{ type: 'new_issue' }],
        actions: { email: true, endpointIds: [chosen.id] },
      },
      201,
    );
    await api('PATCH', routePath('updateErrorAlerts', { slug: p.slug }), { enabled: false }, 200);
    await send(p.id, [event({ name: 'HookError' })]);
    await dispatcher.idle();
    // The stored default rule and this one: e-mail is off for both.
    expect(mailsFor(p.slug)).toHaveLength(0);
    const alerts = await t.platform.db.query<{ endpoint_id: string }>(
      "SELECT endpoint_id FROM webhook_deliveries WHERE project_id = $1 AND event = 'issue.alert'",
      [p.id],
    );
    expect(alerts.rows.map((r) => r.endpoint_id)).toEqual([chosen.id]);
    const got = receiver.requests.filter((r) => r.path === `/${p.slug}-chosen` && JSON.parse(r.body).event === 'issue.alert');
    expect(got).toHaveLength(1);
    const payload = verifyWebhook<{ alert: { rule: { name: string }; trigger: { type: string } }; issue: { title: string }; environment: string }>(
      got[0]!.body,
      got[0]!.headers['service-signature'] as string,
      chosen.secret,
      { now: clock.now() },
    );
    expect(payload.data).toMatchObject({ alert: { rule: { name: 'Page the hook' }, trigger: { type: 'new_issue' } }, environment: 'production' });
    expect(payload.data.issue.title).toContain('HookError');
    // The other endpoint (subscribed to everything) has the issue.created broadcast, never the alert.
    expect(receiver.requests.filter((r) => r.path === `/${p.slug}-other`).map((r) => JSON.parse(r.body).event)).not.toContain('issue.alert');
    expect(other.id).not.toBe(chosen.id);

    await api('PATCH', routePath('updateErrorAlerts', { slug: p.slug }), { enabled: true }, 200);
    await send(p.id, [event({ name: 'HookErrorTwo' })]);
    // Both rules mail once e-mail is back on.
    expect(
      mailsFor(p.slug)
        .map((m) => m.text.match(/alert rule "([^"]+)"/)?.[1])
        .sort(),
    ).toEqual(['New production issues and regressions', 'Page the hook']);
  });

  it('frequency triggers: N events, or N distinct users, in the last M minutes', async () => {
    const p = await projectWith([
      { name: 'Busy', triggers: [{ type: 'event_frequency', count: 3, minutes: 10 }], actions: { email: true }, throttleMinutes: 1 },
      { name: 'Widespread', triggers: [{ type: 'user_frequency', count: 2, minutes: 10 }], actions: { email: true }, throttleMinutes: 1 },
    ]);
    const rule = (name: string) => mailsFor(p.slug).filter((m) => m.text.includes(`alert rule "${name}"`));
    const user = (id: string) => ({ context: { user: { id } } });
    await send(p.id, [event({ name: 'Freq', ...user('u1') }), event({ name: 'Freq', ...user('u1') })]);
    expect(rule('Busy')).toHaveLength(0);
    expect(rule('Widespread')).toHaveLength(0);
    clock.advance(5 * MIN);
    await send(p.id, [event({ name: 'Freq', ...user('u2') })]);
    expect(rule('Busy')).toHaveLength(1);
    expect(rule('Busy')[0]!.text).toContain('3 events or more in 10 minutes');
    expect(rule('Widespread')).toHaveLength(1);
    // Eleven minutes on, the window holds only what came since: two events of one user fire neither.
    clock.advance(11 * MIN);
    await send(p.id, [event({ name: 'Freq', ...user('u3') }), event({ name: 'Freq', ...user('u3') })]);
    expect(rule('Busy')).toHaveLength(1);
    expect(rule('Widespread')).toHaveLength(1);
    await send(p.id, [event({ name: 'Freq' })]);
    expect(rule('Busy')).toHaveLength(2);
    expect(rule('Widespread')).toHaveLength(1);
  });

  it('the default rule as stored reproduces §7.6: new production issues, not preview ones, never ignored issues', async () => {
    const p = await newProject();
    await api('PATCH', routePath('updateErrorAlerts', { slug: p.slug }), { recipients: ['oncall@example.test'] }, 200);
    // Any write stores the default rule: here a second rule that never fires.
    await api('POST', routePath('createAlertRule', { slug: p.slug }), { name: 'Quiet', triggers: [{ type: 'escalation' }], actions: { email: true } }, 201);
    await send(p.id, [event({ name: 'PreviewOnly' })], 'pr-7.preview.example.com');
    expect(mailsFor(p.slug)).toHaveLength(0);
    await send(p.id, [event({ name: 'PreviewOnly' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);
    expect(mailsFor(p.slug)[0]!.subject).toContain('New issue in production: PreviewOnly');
    // An ignored issue new to production: the trigger holds, the claim refuses.
    await send(p.id, [event({ name: 'Muted' })], 'pr-7.preview.example.com');
    await t.platform.db.query("UPDATE error_groups SET status = 'ignored' WHERE id = $1", [await groupOf(p.id, 'Muted')]);
    await send(p.id, [event({ name: 'Muted' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);
  });

  it('a project that never wrote its rules keeps §7.6 mail as before; once it writes them, only its rules send', async () => {
    const p = await newProject();
    await api('PATCH', routePath('updateErrorAlerts', { slug: p.slug }), { recipients: ['oncall@example.test'] }, 200);
    await send(p.id, [event({ name: 'Legacy' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);
    expect(mailsFor(p.slug)[0]!.text).toContain('At most one email per issue every 6 hours');
    // Its default rule switched off: nothing, not even §7.6's own claim.
    await api('PATCH', routePath('updateAlertRule', { slug: p.slug, ruleId: 'default' }), { enabled: false }, 200);
    await send(p.id, [event({ name: 'LegacyTwo' })]);
    expect(mailsFor(p.slug)).toHaveLength(1);
  });

  it('evaluateEscalation (the escalation sweep’s hook) fires escalation rules once per window, for their environments', async () => {
    const p = await projectWith([{ name: 'Escalating in prod', triggers: [{ type: 'escalation' }], environments: ['production'], actions: { email: true } }]);
    await send(p.id, [event({ name: 'Spiky' })]);
    const groupId = await groupOf(p.id, 'Spiky');
    const evaluation = createAlertRuleEvaluation({ ...t.platform, logger: createLogger('silent', 'test'), publicBaseUrl: 'http://console.test' });
    await evaluation.evaluateEscalation([{ projectId: p.id, groupId, environment: 'preview' }]);
    expect(mailsFor(p.slug)).toHaveLength(0);
    await evaluation.evaluateEscalation([{ projectId: p.id, groupId, environment: 'production' }]);
    await evaluation.evaluateEscalation([{ projectId: p.id, groupId, environment: 'production' }]);
    expect(mailsFor(p.slug)).toHaveLength(1);
    expect(mailsFor(p.slug)[0]!.subject).toContain('Escalating issue in production: Spiky');
    clock.advance(361 * MIN);
    await evaluation.evaluateEscalation([{ projectId: p.id, groupId, environment: 'production' }]);
    expect(mailsFor(p.slug)).toHaveLength(2);
  });
});
