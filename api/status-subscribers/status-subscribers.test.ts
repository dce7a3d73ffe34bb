import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertRecipientsRepository } from '../../domain/alert-recipients-repository.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { startSubscriberMailConsumer } from '../../processor/status-subscribers/subscriber-mail-consumer.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { bearer, buildTestApi, createKey, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import type { SteerableGuard } from '../../test/support/outbound-guard.ts';
import { processed } from '../../test/support/platform.ts';
import { parseMessage, startSmtpReceiver, type ReceivedMail } from '../../test/support/smtp-receiver.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';
import { signupOutcomes } from './status-subscriber-routes.ts';

/**
 * Status page subscribers (issue 43) through HTTP, with a real SMTP receiver and a real HTTPS webhook receiver:
 * sign-up → confirmation mail → confirm → mail on an incident update (List-Unsubscribe one-click) → unsubscribe → no
 * more mail; the same answer for new, pending and subscribed addresses; the limits that keep a page from mail-bombing
 * a stranger, played by an attacker; a bounce stops mail; webhook subscribers through the webhook pipeline.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
let receiver: HttpsReceiver;
let outbound: SteerableGuard;
let owner: SignedInUser;
let stopMail: () => Promise<void>;
let ipSeq = 0;
/** Each test's callers from addresses of their own, so the per-IP limit is met only where a test means it. */
const freshIp = () => `203.0.113.${++ipSeq % 250}`;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  outbound = statusTestGuard({ ca: receiver.cert });
  smtp = await startSmtpReceiver();
  t = await buildTestApi({ processors: true, env: { SMTP_URL: smtp.url }, overrides: { outbound: outbound.guard } });
  const mail = await startSubscriberMailConsumer(t.platform);
  stopMail = () => mail.stop();
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => {
  await stopMail?.();
  await t?.close();
  await smtp?.stop();
  await receiver?.close();
});

const statusPage = () => publicStatusPage(t.app, owner.cookie);

const signUp = (slug: string, email: string, ip = freshIp()) =>
  t.app.inject({ method: 'POST', url: `/v1/status/${slug}/subscribers`, payload: { email }, remoteAddress: ip });

const mailsTo = (email: string) => smtp.messages.filter((m) => m.to.includes(email));
const tokenIn = (m: ReceivedMail, path: string) => new RegExp(`${path}\\?token=([A-Za-z0-9_%-]+)`).exec(m.text)?.[1];

/** A signed-up and confirmed address; its confirmation mail read from the SMTP receiver. */
async function subscribed(slug: string, email: string) {
  expect((await signUp(slug, email)).statusCode).toBe(202);
  await expect.poll(() => mailsTo(email).length).toBe(1);
  const token = tokenIn(mailsTo(email)[0]!, 'confirm');
  expect(token).toBeTruthy();
  const res = await t.app.inject({ url: `/v1/status/${slug}/subscribers/confirm?token=${token}`, remoteAddress: freshIp() });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ subscribed: true });
}

const incidentEvent = (
  projectId: string,
  event: 'uptime.incident.created' | 'uptime.incident.updated' | 'uptime.incident.resolved',
  message: string,
  id?: string,
) =>
  publishProjectEvent(t.platform, {
    id,
    projectId,
    event,
    data: {
      projectSlug: 'x',
      incident: { id: 'inc_1', title: 'Checkout is slow', impact: 'minor', status: 'identified', kind: 'manual', updates: [], monitorIds: [] },
      update: { status: 'identified', message, at: new Date().toISOString() },
    },
  });

describe('e-mail subscribers', () => {
  it('sign-up → confirm → mail on an incident update with one-click unsubscribe → unsubscribe → no more mail', async () => {
    const page = await statusPage();
    const email = `reader-${page.slug}@example.com`;
    expect((await signUp(page.slug, email.toUpperCase())).statusCode).toBe(202);
    await expect.poll(() => mailsTo(email).length).toBe(1);
    const confirmation = mailsTo(email)[0]!;
    expect(confirmation.subject).toContain('Confirm');
    const token = tokenIn(confirmation, 'confirm')!;

    // pending: an incident mails nobody yet
    await incidentEvent(page.id, 'uptime.incident.created', 'Looking into it');
    await processed(t.platform);
    expect(mailsTo(email)).toHaveLength(1);

    const confirm = await t.app.inject({ url: `/v1/status/${page.slug}/subscribers/confirm?token=${token}`, remoteAddress: freshIp() });
    expect(confirm.statusCode).toBe(200);
    expect(confirm.json()).toEqual({ subscribed: true, page: `http://localhost:8080/status/${page.slug}` });
    // a link works once
    expect((await t.app.inject({ url: `/v1/status/${page.slug}/subscribers/confirm?token=${token}`, remoteAddress: freshIp() })).statusCode).toBe(404);

    const ev = await incidentEvent(page.id, 'uptime.incident.updated', 'A slow database query; a fix is rolling out');
    await processed(t.platform);
    await expect.poll(() => mailsTo(email).length).toBe(2);
    const update = mailsTo(email)[1]!;
    expect(update.subject).toBe(`[${page.slug} status] Update: Checkout is slow`);
    expect(update.text).toContain('A slow database query; a fix is rolling out');
    const headers = parseMessage(update.raw).headers;
    const unsubscribe = tokenIn(update, 'unsubscribe')!;
    expect(headers['list-unsubscribe']).toBe(`<http://localhost:8080/v1/status/${page.slug}/unsubscribe?token=${unsubscribe}>`);
    expect(headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');

    // the same event delivered again mails nobody twice
    await publishProjectEvent(t.platform, { id: ev.id, projectId: page.id, event: ev.event, data: ev.data });
    await processed(t.platform);
    expect(mailsTo(email)).toHaveLength(2);

    // the GET shows what the link ends (the address partly hidden), the one-click POST ends it
    const info = await t.app.inject({ url: `/v1/status/${page.slug}/unsubscribe?token=${unsubscribe}`, remoteAddress: freshIp() });
    expect(info.json()).toMatchObject({ subscribed: true, email: `r***@example.com` });
    const html = await t.app.inject({
      url: `/v1/status/${page.slug}/unsubscribe?token=${unsubscribe}`,
      headers: { accept: 'text/html' },
      remoteAddress: freshIp(),
    });
    expect(html.headers['content-type']).toMatch(/text\/html/);
    expect(html.body).toContain('<form method="post"');
    expect(html.body).not.toContain(email);
    const oneClick = await t.app.inject({
      method: 'POST',
      url: `/v1/status/${page.slug}/unsubscribe?token=${unsubscribe}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
      remoteAddress: freshIp(),
    });
    expect(oneClick.statusCode).toBe(200);
    expect(oneClick.json()).toEqual({ unsubscribed: true });
    // again (a mail client retrying): the same answer
    expect((await t.app.inject({ method: 'POST', url: `/v1/status/${page.slug}/unsubscribe?token=${unsubscribe}`, remoteAddress: freshIp() })).json()).toEqual({
      unsubscribed: true,
    });

    await incidentEvent(page.id, 'uptime.incident.resolved', 'Fixed');
    await processed(t.platform);
    expect(mailsTo(email)).toHaveLength(2);
  });

  it('answers new, pending and subscribed addresses alike, and sends one confirmation per address and page in the window', async () => {
    const page = await statusPage();
    const fresh = await signUp(page.slug, `new-${page.slug}@example.com`);
    await subscribed(page.slug, `old-${page.slug}@example.com`);
    const pending = await signUp(page.slug, `new-${page.slug}@example.com`);
    const confirmed = await signUp(page.slug, `old-${page.slug}@example.com`);
    for (const res of [pending, confirmed]) {
      expect(res.statusCode).toBe(fresh.statusCode);
      expect(res.body).toBe(fresh.body);
    }
    // pending again within LIMITS.statusSubscribers.addressEveryHours: no second confirmation mail
    await processed(t.platform);
    await new Promise((r) => setImmediate(r));
    expect(mailsTo(`new-${page.slug}@example.com`)).toHaveLength(1);
    expect(mailsTo(`old-${page.slug}@example.com`)).toHaveLength(1);
    expect(signupOutcomes(t.platform)).toMatchObject({ address_limited: expect.any(Number), already_subscribed: expect.any(Number) });
  });

  it('a form post without script gets a small HTML page, its mistakes too; JSON gets JSON', async () => {
    const page = await statusPage();
    const form = (email: string) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/status/${page.slug}/subscribers`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
        payload: new URLSearchParams({ email }).toString(),
        remoteAddress: freshIp(),
      });
    const ok = await form(`form-${page.slug}@example.com`);
    expect(ok.statusCode).toBe(202);
    expect(ok.headers['content-type']).toMatch(/text\/html/);
    expect(ok.body).toContain('Check your inbox');
    await expect.poll(() => mailsTo(`form-${page.slug}@example.com`).length).toBe(1);
    const bad = await form('<script>alert(1)</script>');
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toMatch(/text\/html/);
    expect(bad.body).not.toContain('<script>');
    const json = await signUp(page.slug, 'not an address');
    expect(json.statusCode).toBe(400);
    expect(json.json().error).toBe('invalid_request');
    // header injection, a list of addresses: refused, nothing mailed
    for (const email of ['a@example.com\r\nBcc: b@example.com', 'a@example.com, b@example.com', 'a@b', '@example.com'])
      expect((await signUp(page.slug, email)).statusCode).toBe(400);
    const unknown = await signUp('no-such-page-here', 'someone@example.com');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toBe('not_found');
  });
});

describe('limits on sign-up: the attacker cannot mail-bomb a stranger', () => {
  it('one IP: at most LIMITS.statusSubscribers.perIpPerHour sign-ups an hour, then 429 with Retry-After', async () => {
    const page = await statusPage();
    const ip = '198.51.100.77';
    for (let i = 0; i < LIMITS.statusSubscribers.perIpPerHour; i++)
      expect((await signUp(page.slug, `ip${i}-${page.slug}@example.com`, ip)).statusCode).toBe(202);
    const over = await signUp(page.slug, `over-${page.slug}@example.com`, ip);
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toBe('rate_limited');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect(signupOutcomes(t.platform).ip_limited).toBeGreaterThan(0);
  });

  it('one stranger from many IPs and many pages: one mail per page in the window, a few a day in all', async () => {
    const victim = `victim-${Date.now()}@example.com`;
    const pages = await Promise.all(Array.from({ length: LIMITS.statusSubscribers.addressPerDay + 2 }, () => statusPage()));
    for (const page of pages) for (let i = 0; i < 3; i++) expect((await signUp(page.slug, victim)).statusCode).toBe(202);
    await new Promise((r) => setTimeout(r, 50));
    await expect.poll(() => mailsTo(victim).length).toBe(LIMITS.statusSubscribers.addressPerDay);
    // and stays there
    await new Promise((r) => setTimeout(r, 200));
    expect(mailsTo(victim)).toHaveLength(LIMITS.statusSubscribers.addressPerDay);
  });

  it('one page: at most LIMITS.statusSubscribers.perProjectPerHour sign-ups an hour, then 429 for every address alike', async () => {
    const page = await statusPage();
    const member = `member-${page.slug}@example.com`;
    await subscribed(page.slug, member);
    const before = smtp.messages.length;
    for (let i = 1; i < LIMITS.statusSubscribers.perProjectPerHour; i++)
      expect((await signUp(page.slug, `many${i}-${page.slug}@example.com`)).statusCode).toBe(202);
    const over = await signUp(page.slug, `last-${page.slug}@example.com`);
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toBe('rate_limited');
    // a subscribed address is told the same: the limit tells nothing about who is on the list
    const known = await signUp(page.slug, member);
    expect(known.statusCode).toBe(429);
    expect(known.body).toBe(over.body);
    await expect.poll(() => smtp.messages.length - before).toBe(LIMITS.statusSubscribers.perProjectPerHour - 1);
    expect(signupOutcomes(t.platform).page_limited).toBeGreaterThan(0);
  });
});

describe('a bounce or complaint stops mail', () => {
  it('a suppressed address gets no incident mail and no confirmation mail; the list says so', async () => {
    const page = await statusPage();
    const bouncing = `bounce-${page.slug}@example.com`;
    const fine = `fine-${page.slug}@example.com`;
    await subscribed(page.slug, bouncing);
    await subscribed(page.slug, fine);
    // what the inbound processor does with the mail provider's email.bounced (processor/inbound/email/delivery-events.ts)
    await alertRecipientsRepository.suppress(t.platform.db, [bouncing], 'bounced', Date.now(), 'evt_test');
    await incidentEvent(page.id, 'uptime.incident.created', 'Down for some');
    await processed(t.platform);
    await expect.poll(() => mailsTo(fine).length).toBe(2);
    expect(mailsTo(bouncing)).toHaveLength(1);
    const list = await t.app.inject({ url: `/v1/projects/${page.slug}/uptime/subscribers`, headers: sessionHeaders(owner.cookie) });
    expect(list.json().subscribers.find((s: { email: string }) => s.email === bouncing)).toMatchObject({ status: 'confirmed', suppressed: true });

    const other = await statusPage();
    expect((await signUp(other.slug, bouncing)).statusCode).toBe(202);
    await processed(t.platform);
    await new Promise((r) => setTimeout(r, 100));
    expect(mailsTo(bouncing)).toHaveLength(1);
    expect(signupOutcomes(t.platform).suppressed).toBeGreaterThan(0);
  });
});

describe('webhook subscribers and the list', () => {
  it('a project key with uptime:write adds one; deliveries are signed through the webhook pipeline; list and delete', async () => {
    const page = await statusPage();
    const writer = await createKey(t.app, owner.cookie, page.slug, { kind: 'live', scopes: ['uptime:write', 'uptime:read'] });
    const reader = await createKey(t.app, owner.cookie, page.slug, { kind: 'live', scopes: ['uptime:read'] });
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: `/v1/projects/${page.slug}/uptime/subscribers`,
          headers: bearer(reader.token),
          payload: { url: receiver.url },
        })
      ).statusCode,
    ).toBe(403);
    const made = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${page.slug}/uptime/subscribers`,
      headers: bearer(writer.token),
      payload: { url: receiver.url },
    });
    expect(made.statusCode).toBe(201);
    const sub = made.json().subscriber;
    expect(sub).toMatchObject({ kind: 'webhook', status: 'confirmed', secret: expect.stringMatching(/^whsec_/) });

    const before = receiver.requests.length;
    await incidentEvent(page.id, 'uptime.incident.created', 'Webhook me');
    await publishProjectEvent(t.platform, { projectId: page.id, event: 'webhook.test', data: {} });
    await processed(t.platform);
    const [req] = (await receiver.waitFor(before + 1)).slice(before);
    const body = JSON.parse(req!.body);
    expect(body.event).toBe('uptime.incident.created');
    const sig = String(req!.headers['service-signature']);
    const [, ts] = /t=(\d+)/.exec(sig)!;
    expect(sig).toContain(`v1=${createHmac('sha256', sub.secret).update(`${ts}.${req!.body}`).digest('hex')}`);
    // the webhook.test event is not a status event: not delivered to it
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.requests.slice(before).map((r) => JSON.parse(r.body).event)).toEqual(['uptime.incident.created']);

    // the outbound URL guard applies
    outbound.loopback = false;
    try {
      const refused = await t.app.inject({
        method: 'POST',
        url: `/v1/projects/${page.slug}/uptime/subscribers`,
        headers: bearer(writer.token),
        payload: { url: receiver.url },
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toMatch(/^url_/);
    } finally {
      outbound.loopback = true;
    }

    await subscribed(page.slug, `listed-${page.slug}@example.com`);
    const list = await t.app.inject({ url: `/v1/projects/${page.slug}/uptime/subscribers`, headers: bearer(reader.token) });
    expect(list.statusCode).toBe(200);
    expect(list.json().counts).toEqual({ confirmed: 1, pending: 0, webhooks: 1 });
    expect(
      list
        .json()
        .subscribers.map((s: { kind: string }) => s.kind)
        .sort(),
    ).toEqual(['email', 'webhook']);
    expect(JSON.stringify(list.json())).not.toContain(sub.secret);

    const del = await t.app.inject({ method: 'DELETE', url: `/v1/projects/${page.slug}/uptime/subscribers/${sub.id}`, headers: bearer(writer.token) });
    expect(del.statusCode).toBe(204);
    const endpoints = await t.app.inject({ url: `/v1/projects/${page.slug}/webhooks`, headers: sessionHeaders(owner.cookie) });
    expect(endpoints.json().endpoints).toEqual([]);
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/v1/projects/${page.slug}/uptime/subscribers/${sub.id}`, headers: bearer(writer.token) })).statusCode,
    ).toBe(404);
    // another project's subscriber is not found through this one
    const elsewhere = await statusPage();
    const theirs = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${elsewhere.slug}/uptime/subscribers`,
      headers: sessionHeaders(owner.cookie),
      payload: { url: receiver.url },
    });
    expect(
      (
        await t.app.inject({
          method: 'DELETE',
          url: `/v1/projects/${page.slug}/uptime/subscribers/${theirs.json().subscriber.id}`,
          headers: bearer(writer.token),
        })
      ).statusCode,
    ).toBe(404);
  });
});
