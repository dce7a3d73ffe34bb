import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { ManualClock } from '../../platform/clock.ts';
import type { Mailer, MailMessage } from '../../platform/ports/mailer.ts';
import { startSubscriberMailConsumer } from '../../processor/status-subscribers/subscriber-mail-consumer.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { buildTestApi, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';
import { signupOutcomes } from './status-subscriber-routes.ts';

/**
 * The rules of status page subscribers that need time to pass or a mail server that says no (issue 43), on a manual
 * clock (which the rate limiter reads too) and a mailer the test steers: a confirmation link runs out after
 * LIMITS.statusSubscribers.confirmHours; signing up again once the address's window passed mails a new link and the
 * old one stops working; a full page mails no one; a page's webhook subscribers are capped; a notification the mail
 * server refuses is sent again (the bus retries the event, the claims of mails already sent hold).
 */
const S = LIMITS.statusSubscribers;
const HOUR = 3_600_000;
const clock = new ManualClock(Date.now());
const sent: MailMessage[] = [];
let refuseNext = 0;
const mailer: Mailer = {
  adapter: 'file',
  async send(m) {
    if (refuseNext > 0) {
      refuseNext--;
      throw new Error('451 4.3.0 try again later');
    }
    sent.push(m);
  },
  async close() {},
};
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;
let stopMail: () => Promise<void>;
let ip = 0;

beforeAll(async () => {
  const outbound = statusTestGuard({ more: { 'hooks.example': ['93.184.215.15'] } });
  t = await buildTestApi({ overrides: { outbound: outbound.guard, clock, mailer } });
  const consumer = await startSubscriberMailConsumer(t.platform);
  stopMail = () => consumer.stop();
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => {
  await stopMail?.();
  await t?.close();
});

const statusPage = () => publicStatusPage(t.app, owner.cookie);
const signUp = (slug: string, email: string) =>
  t.app.inject({ method: 'POST', url: `/v1/status/${slug}/subscribers`, payload: { email }, remoteAddress: `192.0.2.${++ip % 250}` });
const mailsTo = (email: string) => sent.filter((m) => m.to.includes(email));
const confirmToken = (m: MailMessage) => /confirm\?token=([A-Za-z0-9_-]+)/.exec(m.text)![1]!;
const confirm = (slug: string, token: string) => t.app.inject({ url: `/v1/status/${slug}/subscribers/confirm?token=${token}`, remoteAddress: '192.0.2.251' });

describe('status subscriber rules over time and refusals', () => {
  it('a confirmation link runs out; once the window passed, a new sign-up mails a new link and the old one stops working', async () => {
    const page = await statusPage();
    const email = `late-${page.slug}@example.com`;
    expect((await signUp(page.slug, email)).statusCode).toBe(202);
    await expect.poll(() => mailsTo(email).length).toBe(1);
    const first = confirmToken(mailsTo(email)[0]!);
    clock.advance(S.confirmHours * HOUR + 60_000);
    const expired = await confirm(page.slug, first);
    expect(expired.statusCode).toBe(404);
    expect(expired.json().error).toBe('not_found');

    expect((await signUp(page.slug, email)).statusCode).toBe(202);
    await expect.poll(() => mailsTo(email).length).toBe(2);
    // within the address's window again: no third mail
    expect((await signUp(page.slug, email)).statusCode).toBe(202);
    // (a sliding window: twice its length is past it wherever it started)
    clock.advance(2 * S.addressEveryHours * HOUR);
    expect((await signUp(page.slug, email)).statusCode).toBe(202);
    await expect.poll(() => mailsTo(email).length).toBe(3);
    const [second, third] = [confirmToken(mailsTo(email)[1]!), confirmToken(mailsTo(email)[2]!)];
    expect((await confirm(page.slug, second)).statusCode).toBe(404);
    expect((await confirm(page.slug, third)).statusCode).toBe(200);
  });

  it(`a page with ${S.perProject} e-mail subscribers takes no more: the same answer, no mail`, async () => {
    const page = await statusPage();
    await t.platform.db.query(
      `INSERT INTO status_subscribers (id, project_id, kind, email, status, unsubscribe_token, created_at, confirmed_at)
       SELECT 'ssb_full_' || $1 || '_' || n, $1, 'email', 'r' || n || '@full.example', 'confirmed', 'cxunsub_full_' || $1 || '_' || n, now(), now()
       FROM generate_series(1, $2::int) AS n`,
      [page.id, S.perProject],
    );
    const before = signupOutcomes(t.platform).page_full ?? 0;
    const email = `one-too-many-${page.slug}@example.com`;
    expect((await signUp(page.slug, email)).statusCode).toBe(202);
    expect(signupOutcomes(t.platform).page_full).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(mailsTo(email)).toHaveLength(0);
  });

  it(`a page takes at most ${S.webhooksPerProject} webhook subscribers (409 conflict)`, async () => {
    const page = await statusPage();
    const add = (i: number) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/projects/${page.slug}/uptime/subscribers`,
        headers: sessionHeaders(owner.cookie),
        payload: { url: `https://hooks.example/${i}` },
      });
    for (let i = 0; i < S.webhooksPerProject; i++) expect((await add(i)).statusCode).toBe(201);
    const over = await add(S.webhooksPerProject);
    expect(over.statusCode).toBe(409);
    expect(over.json().error).toBe('conflict');
  });

  it('a notification the mail server refuses is sent again, and nobody gets it twice', async () => {
    const page = await statusPage();
    const emails = [`a-${page.slug}@example.com`, `b-${page.slug}@example.com`];
    for (const email of emails) {
      expect((await signUp(page.slug, email)).statusCode).toBe(202);
      await expect.poll(() => mailsTo(email).length).toBe(1);
      expect((await confirm(page.slug, confirmToken(mailsTo(email)[0]!))).statusCode).toBe(200);
    }
    refuseNext = 1;
    await publishProjectEvent(t.platform, {
      projectId: page.id,
      event: 'uptime.maintenance.started',
      data: { maintenance: { title: 'Network work', message: 'Brief blips', startsAt: new Date().toISOString(), endsAt: new Date().toISOString() } },
    });
    await processed(t.platform);
    for (const email of emails) {
      await expect.poll(() => mailsTo(email).length).toBe(2);
      expect(mailsTo(email)[1]!.subject).toBe(`[${page.slug} status] Maintenance started: Network work`);
    }
    expect(refuseNext).toBe(0);
  });
});
