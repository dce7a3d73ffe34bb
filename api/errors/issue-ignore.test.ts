import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { sweepIssueTriage } from '../../processor/errors/issue-triage-sweep.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch, StampedErrorEvent } from '../../schemas/error-event.ts';
import { IssueEventDataSchema } from '../../schemas/project-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { processed } from '../../test/support/platform.ts';

/**
 * Issue 41, "Triage around deploys": ignore until N events, N users, a time or escalation, through HTTP and the error
 * pipeline; escalation by the triage sweep with its own clock, publishing a signed issue.escalating.
 */

const HOUR = 3_600_000;

describe('ignore until, and escalation', () => {
  let receiver: HttpsReceiver;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    t = await buildTestApi({ processors: true, overrides: { outbound: outbound.guard }, env: { PUBLIC_BASE_URL: 'http://console.test:8080' } });
    owner = await signUpAndSignIn(t.app, t.platform);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const session = () => sessionHeaders(owner.cookie);
  const newProject = () => createProject(t.app, owner.cookie, { environmentHosts: { production: ['app.example.com'] } });
  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const many = (n: number, over: Partial<StampedErrorEvent> = {}) => Array.from({ length: n }, () => event({ name: 'TriageError', ...over }));
  /** A new issue in a new project, from one event; answers its id. */
  const newIssue = async (first?: StampedErrorBatch | ((projectId: string) => StampedErrorBatch)) => {
    const p = await newProject();
    await publish(typeof first === 'function' ? first(p.id) : (first ?? batch(p.id, many(1))));
    const list = await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/errors`, headers: session() });
    return { p, groupId: list.json().data[0].groupId as string };
  };
  const ignore = (slug: string, groupId: string, payload?: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/errors/${groupId}/ignore`, headers: session(), ...(payload ? { payload } : {}) });
  const issue = async (slug: string, groupId: string) =>
    (await t.app.inject({ method: 'GET', url: `/v1/projects/${slug}/errors/${groupId}`, headers: session() })).json().issue;

  it('no body ignores forever, as before: events keep it ignored', async () => {
    const { p, groupId } = await newIssue();
    const r = await ignore(p.slug, groupId);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().issue).toMatchObject({ status: 'ignored', ignoreUntil: null, unignoredReason: null });
    await publish(batch(p.id, many(5)));
    expect(await issue(p.slug, groupId)).toMatchObject({ status: 'ignored', count: 6 });
  });

  it('ignoreCount: N more events bring it back, reason events, not a regression', async () => {
    const { p, groupId } = await newIssue();
    const r = await ignore(p.slug, groupId, { ignoreCount: 3 });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().issue.ignoreUntil).toMatchObject({ condition: 'events', count: 3, seen: 0 });
    await publish(batch(p.id, many(2)));
    expect(await issue(p.slug, groupId)).toMatchObject({ status: 'ignored', ignoreUntil: { condition: 'events', seen: 2 } });
    await publish(batch(p.id, many(1)));
    const back = await issue(p.slug, groupId);
    expect(back).toMatchObject({ status: 'unresolved', regressionCount: 0, ignoreUntil: null, unignoredReason: { reason: 'events' } });
    // The next transition clears the reason.
    expect((await ignore(p.slug, groupId)).json().issue).toMatchObject({ status: 'ignored', unignoredReason: null });
  });

  it('ignoreUserCount: N more distinct users (id, else email, else IP; none not counted), at most N keys kept', async () => {
    const { p, groupId } = await newIssue();
    expect((await ignore(p.slug, groupId, { ignoreUserCount: 3 })).statusCode).toBe(200);
    const keys = async () =>
      Number((await t.platform.db.query<{ n: string }>('SELECT count(*) AS n FROM error_group_ignore_users WHERE group_id = $1', [groupId])).rows[0]!.n);
    // One user three times, and an event with no user: one user.
    await publish(batch(p.id, [...many(3, { context: { user: { id: 'u1' } } }), ...many(1)]));
    expect(await issue(p.slug, groupId)).toMatchObject({ status: 'ignored', ignoreUntil: { condition: 'users', count: 3, seen: 1 } });
    await publish(batch(p.id, many(1, { context: { user: { email: 'b@example.com' } } })));
    expect((await issue(p.slug, groupId)).ignoreUntil.seen).toBe(2);
    expect(await keys()).toBe(2);
    // Asking again (a stale tab, a retried call) is refused and forgets nobody seen so far.
    const again = await ignore(p.slug, groupId, { ignoreUserCount: 3 });
    expect(again.statusCode, again.body).toBe(409);
    expect(await keys()).toBe(2);
    expect((await issue(p.slug, groupId)).ignoreUntil.seen).toBe(2);
    // Nobody's address is kept: the keys are hashes.
    const stored = await t.platform.db.query<{ user_key: string }>('SELECT user_key FROM error_group_ignore_users WHERE group_id = $1', [groupId]);
    expect(stored.rows.every((k) => /^[0-9a-f]{32}$/.test(k.user_key))).toBe(true);
    await publish(batch(p.id, many(4, { context: { user: { ipAddress: '203.0.113.9' } } })));
    expect(await issue(p.slug, groupId)).toMatchObject({ status: 'unresolved', regressionCount: 0, unignoredReason: { reason: 'users' } });
    expect(await keys()).toBe(0);

    // A batch of many users keeps at most N keys while it counts.
    const other = await newIssue();
    expect((await ignore(other.p.slug, other.groupId, { ignoreUserCount: 50 })).statusCode).toBe(200);
    await publish(
      batch(
        other.p.id,
        Array.from({ length: 80 }, (_, i) => event({ name: 'TriageError', context: { user: { id: `user-${i}` } } })),
      ),
    );
    expect(await issue(other.p.slug, other.groupId)).toMatchObject({ status: 'unresolved', unignoredReason: { reason: 'users' } });
    expect((await ignore(other.p.slug, other.groupId, { ignoreUserCount: 1000 })).statusCode).toBe(200);
    await publish(
      batch(
        other.p.id,
        Array.from({ length: 80 }, (_, i) => event({ name: 'TriageError', context: { user: { id: `user-${i}` } } })),
      ),
    );
    expect((await issue(other.p.slug, other.groupId)).ignoreUntil).toMatchObject({ condition: 'users', seen: 80 });
  });

  it('ignoreDuration and ignoreUntil: the sweep brings it back once the time has passed, reason time', async () => {
    const { p, groupId } = await newIssue();
    const r = await ignore(p.slug, groupId, { ignoreDuration: 60 });
    expect(r.statusCode, r.body).toBe(200);
    const at = Date.parse(r.json().issue.ignoreUntil.at);
    expect(r.json().issue.ignoreUntil.condition).toBe('time');
    expect(Math.abs(at - (t.platform.clock.now() + HOUR))).toBeLessThan(60_000);
    await sweepIssueTriage(t.platform, at - 1000);
    expect((await issue(p.slug, groupId)).status).toBe('ignored');
    const swept = await sweepIssueTriage(t.platform, at + 1000);
    expect(swept.unignored).toBeGreaterThanOrEqual(1);
    expect(await issue(p.slug, groupId)).toMatchObject({
      status: 'unresolved',
      regressionCount: 0,
      unignoredReason: { reason: 'time', at: new Date(at).toISOString() },
    });

    const until = new Date(t.platform.clock.now() + 2 * HOUR).toISOString();
    expect((await ignore(p.slug, groupId, { ignoreUntil: until })).json().issue.ignoreUntil).toMatchObject({ condition: 'time', at: until });
  });

  it('refuses bad conditions with 400 invalid_request, and another project’s issue with 404', async () => {
    const { p, groupId } = await newIssue();
    const now = t.platform.clock.now();
    for (const bad of [
      { ignoreCount: 1_000_001 },
      { ignoreCount: 0 },
      { ignoreUserCount: 1e12 },
      { ignoreCount: 1.5 },
      { ignoreDuration: 525_601 },
      { ignoreUntil: new Date(now - 60_000).toISOString() },
      { ignoreUntil: new Date(now + 400 * 24 * HOUR).toISOString() },
      { ignoreUntil: 'tomorrow' },
      { ignoreUntilEscalating: false },
      { ignoreCount: 5, ignoreDuration: 5 },
      { ignoreWindow: 60 },
    ]) {
      const r = await ignore(p.slug, groupId, bad);
      expect(r.statusCode, JSON.stringify(bad)).toBe(400);
      expect(r.json().error, JSON.stringify(bad)).toBe('invalid_request');
    }
    expect((await issue(p.slug, groupId)).status).toBe('unresolved');
    const stranger = await newProject();
    const r = await ignore(stranger.slug, groupId, { ignoreCount: 5 });
    expect(r.statusCode).toBe(404);
    expect(r.json().error).toBe('not_found');
    expect((await issue(p.slug, groupId)).status).toBe('unresolved');
  });

  it('escalation: an ignored-until-escalating issue 3x above its baseline comes back and a signed issue.escalating is delivered, once', async () => {
    // A fixed week of its own: the sweep's clock is the test's.
    const now = Date.UTC(2026, 6, 15, 12, 0, 0);
    const hooked: unknown[] = [];
    const onEscalating = async (items: unknown[]) => void hooked.push(...items);
    const { p, groupId } = await newIssue((projectId) => batch(projectId, many(3), { receivedAt: now - 72 * HOUR }));
    const ep = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/webhooks`,
      headers: session(),
      payload: { url: receiver.url.replace(/\/hook$/, `/${p.slug}`), events: ['issue.escalating'] },
    });
    expect(ep.statusCode, ep.body).toBe(201);
    const secret = ep.json().endpoint.secret as string;
    await publish(batch(p.id, many(3), { receivedAt: now - 48 * HOUR }));
    expect((await ignore(p.slug, groupId, { ignoreUntilEscalating: true })).json().issue.ignoreUntil).toMatchObject({ condition: 'escalating' });

    // 9 in the last hour: under the 10-event floor.
    await publish(batch(p.id, many(9), { receivedAt: now - 20 * 60_000 }));
    expect((await sweepIssueTriage(t.platform, now, { onEscalating })).escalated).toBe(0);
    expect((await issue(p.slug, groupId)).status).toBe('ignored');

    await publish(batch(p.id, many(3), { receivedAt: now - 10 * 60_000 }));
    expect((await sweepIssueTriage(t.platform, now, { onEscalating })).escalated).toBe(1);
    const back = await issue(p.slug, groupId);
    expect(back).toMatchObject({
      status: 'unresolved',
      regressionCount: 0,
      unignoredReason: { reason: 'escalating' },
      escalatingSince: new Date(now).toISOString(),
    });
    expect(hooked).toEqual([{ projectId: p.id, groupId, environment: 'production' }]);
    // Still escalating a minute later: nothing new.
    expect((await sweepIssueTriage(t.platform, now + 60_000, { onEscalating })).escalated).toBe(0);

    const requests = () => receiver.requests.filter((r) => r.path === `/${p.slug}`);
    await expect.poll(() => requests().length, { timeout: 15_000 }).toBe(1);
    const delivered = requests()[0]!;
    expect(delivered.headers['service-webhook-event']).toBe('issue.escalating');
    const payload = verifyWebhook<Record<string, unknown>>(delivered.body, delivered.headers['service-signature'] as string, secret);
    const data = IssueEventDataSchema.parse(payload.data);
    // 6 events over the 71 hours before the last hour it existed.
    expect(data).toMatchObject({
      issue: { id: groupId, status: 'unresolved', regressionCount: 0 },
      environment: 'production',
      escalation: { since: new Date(now).toISOString(), lastHourCount: 12, multiple: 3, unignored: true },
    });
    expect(data.escalation!.baselinePerHour).toBeCloseTo(6 / 71, 2);

    // Two hours on, its last hour is quiet: it calms down. A new burst within 24 h of the escalation sends nothing.
    expect((await sweepIssueTriage(t.platform, now + 2 * HOUR, { onEscalating })).calmed).toBeGreaterThanOrEqual(1);
    expect((await issue(p.slug, groupId)).escalatingSince).toBeNull();
    await publish(batch(p.id, many(40), { receivedAt: now + 3 * HOUR - 60_000 }));
    expect((await sweepIssueTriage(t.platform, now + 3 * HOUR, { onEscalating })).escalated).toBe(0);
    // A day after, a burst over its new baseline escalates it again (a new event id).
    await publish(batch(p.id, many(200), { receivedAt: now + 30 * HOUR - 60_000 }));
    expect((await sweepIssueTriage(t.platform, now + 30 * HOUR, { onEscalating })).escalated).toBe(1);
    await expect.poll(() => requests().length, { timeout: 15_000 }).toBe(2);
    expect(hooked).toHaveLength(2);
  });

  it('a steady issue does not escalate: its baseline is the hours it existed, not the whole week', async () => {
    const now = Date.UTC(2026, 6, 16, 12, 0, 0);
    const { p, groupId } = await newIssue((projectId) => batch(projectId, many(40), { receivedAt: now - 5 * HOUR }));
    await publish(batch(p.id, many(12), { receivedAt: now - 10 * 60_000 }));
    await sweepIssueTriage(t.platform, now);
    expect(await issue(p.slug, groupId)).toMatchObject({ status: 'unresolved', escalatingSince: null });
    // A young issue (under an hour of history) has no baseline and does not escalate either.
    const young = await newIssue((projectId) => batch(projectId, many(30), { receivedAt: now - 30 * 60_000 }));
    await sweepIssueTriage(t.platform, now);
    expect((await issue(young.p.slug, young.groupId)).escalatingSince).toBeNull();
  });
});
