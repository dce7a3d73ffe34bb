import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSubscriberMailConsumer } from '../../processor/status-subscribers/subscriber-mail-consumer.ts';
import { buildTestApi, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { parseMessage, startSmtpReceiver, type ReceivedMail } from '../../test/support/smtp-receiver.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';

/**
 * End to end (issue 43): what a person writes on the incidents and maintenance routes reaches the status page's
 * subscribers by mail (a real SMTP receiver), through the events those routes publish: sign-up → confirm → incident
 * created, updated, resolved and maintenance scheduled each mailed, with one-click unsubscribe → unsubscribed → the next
 * update mails nobody.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
let owner: SignedInUser;
let stopMail: () => Promise<void>;

beforeAll(async () => {
  const outbound = statusTestGuard();
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
});

const tokenIn = (m: ReceivedMail, path: string) => new RegExp(`${path}\\?token=([A-Za-z0-9_%-]+)`).exec(m.text)?.[1];

describe('incidents and maintenance people write reach subscribers', () => {
  it('sign-up → confirm → a mail per incident change and scheduled maintenance → one-click unsubscribe → no more mail', async () => {
    const session = sessionHeaders(owner.cookie);
    const { slug, monitorId } = await publicStatusPage(t.app, owner.cookie);

    const email = `customer-${slug}@example.com`;
    const mails = () => smtp.messages.filter((m) => m.to.includes(email));
    const signUp = await t.app.inject({
      method: 'POST',
      url: `/v1/status/${slug}/subscribers`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `email=${encodeURIComponent(email)}`,
      remoteAddress: '192.0.2.10',
    });
    expect(signUp.statusCode).toBe(202);
    await expect.poll(() => mails().length).toBe(1);
    const confirm = await t.app.inject({
      url: `/v1/status/${slug}/subscribers/confirm?token=${tokenIn(mails()[0]!, 'confirm')}`,
      headers: { accept: 'text/html' },
    });
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Subscribed');

    const created = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime/incidents`,
      headers: session,
      payload: { title: 'Payments failing', impact: 'major', monitorIds: [monitorId], message: 'We are looking into failed payments.' },
    });
    expect(created.statusCode).toBe(201);
    const incidentId = created.json().incident.id;
    await processed(t.platform);
    await expect.poll(() => mails().length).toBe(2);
    expect(mails()[1]!.subject).toBe(`[${slug} status] Incident: Payments failing`);
    expect(mails()[1]!.text).toContain('We are looking into failed payments.');

    const update = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime/incidents/${incidentId}/updates`,
      headers: session,
      payload: { status: 'identified', message: 'A certificate expired at the payment provider.' },
    });
    expect(update.statusCode).toBeLessThan(300);
    await processed(t.platform);
    await expect.poll(() => mails().length).toBe(3);
    const updated = mails()[2]!;
    expect(updated.subject).toBe(`[${slug} status] Update: Payments failing`);
    expect(updated.text).toContain('Status: identified');
    expect(updated.text).toContain('A certificate expired at the payment provider.');
    const headers = parseMessage(updated.raw).headers;
    expect(headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    expect(headers['list-unsubscribe']).toMatch(new RegExp(`^<http://localhost:8080/v1/status/${slug}/unsubscribe\\?token=`));

    const resolved = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime/incidents/${incidentId}/updates`,
      headers: session,
      payload: { status: 'resolved', message: 'Payments go through again.' },
    });
    expect(resolved.statusCode).toBeLessThan(300);
    await processed(t.platform);
    await expect.poll(() => mails().length).toBe(4);
    expect(mails()[3]!.subject).toBe(`[${slug} status] Resolved: Payments failing`);

    const start = Date.now() + 86_400_000;
    const maintenance = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime/maintenance`,
      headers: session,
      payload: {
        title: 'Database upgrade',
        message: 'Checkout is read-only for ten minutes.',
        monitorIds: [monitorId],
        startsAt: new Date(start).toISOString(),
        endsAt: new Date(start + 3_600_000).toISOString(),
      },
    });
    expect(maintenance.statusCode).toBe(201);
    await processed(t.platform);
    await expect.poll(() => mails().length).toBe(5);
    expect(mails()[4]!.subject).toBe(`[${slug} status] Maintenance scheduled: Database upgrade`);
    expect(mails()[4]!.text).toContain('Checkout is read-only for ten minutes.');

    // one click, as a mail client does it (RFC 8058)
    const unsubscribe = headers['list-unsubscribe']!.slice(1, -1).replace('http://localhost:8080', '');
    const click = await t.app.inject({
      method: 'POST',
      url: unsubscribe,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(click.statusCode).toBe(200);
    const again = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime/incidents`,
      headers: session,
      payload: { title: 'Another one', monitorIds: [monitorId], message: 'Looking.' },
    });
    expect(again.statusCode).toBe(201);
    await processed(t.platform);
    expect(mails()).toHaveLength(5);
  });
});
