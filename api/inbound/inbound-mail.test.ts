import { generateKeyPairSync, randomUUID } from 'node:crypto';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from '../../processor/webhooks/webhook-dispatcher.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { EmailReceivedData } from '../../schemas/project-events.ts';
import { routePath } from '../../schemas/api/client.ts';
import type { InboxMessagePage } from '../../schemas/api/email.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { postResendEvent } from '../../test/support/resend.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';

/**
 * Inbound mail (issue 25, spec §6.2): Resend's `email.received`, signed by Svix's own library, carrying real MIME
 * messages built and DKIM-signed by nodemailer, with the signing keys served through the TXT resolver port. The mail
 * becomes email.received for the project's email.* endpoints and the inbox's own webhookUrl, never for an endpoint
 * subscribed to everything.
 */
const SECRET = `whsec_${Buffer.from('resend-inbound-mail-test-key-32b').toString('base64')}`;
const DOMAIN = 'mail.localhost';
const txt: Record<string, string[]> = {};
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;
let consumer: PipelineConsumer<string>;
let dispatcher: WebhookDispatcher;
let receiver: HttpsReceiver;

/** A DKIM key pair for `domain` under selector `s1`; `publish` serves its public key through the resolver port. */
function dkimKey(domain: string, publish = true) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  if (publish) txt[`s1._domainkey.${domain}`] = [`v=DKIM1; k=rsa; p=${p}`];
  return { domainName: domain, keySelector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/** A real RFC 5322 message, built (and DKIM-signed, given a key) by nodemailer. */
async function compose(mail: SendMailOptions & { dkim?: ReturnType<typeof dkimKey> }): Promise<Buffer> {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows', ...(mail.dkim ? { dkim: mail.dkim } : {}) });
  const info = await transport.sendMail(mail);
  return info.message as Buffer;
}

/** Resend's email.received with `raw` (base64) in it, signed with Svix; answers the route's status. */
const deliver = (raw: Buffer | undefined, to: string[], extra: Record<string, unknown> = {}) =>
  postResendEvent(t.app, SECRET, 'email.received', { email_id: randomUUID(), to, ...(raw ? { raw: raw.toString('base64') } : {}), ...extra });

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
  t = await buildTestApi({
    env: { RESEND_WEBHOOK_SECRETS: SECRET, INBOUND_EMAIL_DOMAIN: DOMAIN },
    overrides: { outbound: outbound.guard, txt: { resolveTxt: async (name) => txt[name.toLowerCase()] ?? [] } },
  });
  owner = await signUpAndSignIn(t.app, t.platform, { email: `owner-${randomUUID().slice(0, 8)}@example.test` });
  consumer = await startInboundConsumer(t.platform);
  dispatcher = await startWebhookDispatcher(t.platform, { sweepIntervalMs: false });
});
afterAll(async () => {
  await consumer?.stop();
  await dispatcher?.stop();
  await t?.close();
  await receiver?.close();
});
beforeEach(() => {
  receiver.respond = () => ({ status: 200 });
});

const S = () => sessionHeaders(owner.cookie);
const pathUrl = (p: string) => receiver.url.replace(/\/hook$/, p);
const bodiesTo = (p: string) => receiver.requests.filter((r) => r.path === p);

/** A project with an inbox (its own webhookUrl at /<slug>/inbox), an email.* endpoint and an everything endpoint. */
async function mailbox(localPart = 'support') {
  const p = await createProject(t.app, owner.cookie);
  const inbox = await t.app.inject({
    method: 'POST',
    url: `/v1/projects/${p.slug}/email/inboxes`,
    headers: S(),
    payload: { localPart, webhookUrl: pathUrl(`/${p.slug}/inbox`) },
  });
  expect(inbox.statusCode).toBe(201);
  const mailEndpoint = await t.app.inject({
    method: 'POST',
    url: `/v1/projects/${p.slug}/webhooks`,
    headers: S(),
    payload: { url: pathUrl(`/${p.slug}/mail`), events: ['email.*'] },
  });
  const everything = await t.app.inject({
    method: 'POST',
    url: `/v1/projects/${p.slug}/webhooks`,
    headers: S(),
    payload: { url: pathUrl(`/${p.slug}/all`), events: [] },
  });
  expect([mailEndpoint.statusCode, everything.statusCode]).toEqual([201, 201]);
  return {
    slug: p.slug,
    inbox: inbox.json().inbox as { id: string; address: string; webhookSecret: string },
    endpointSecret: mailEndpoint.json().endpoint.secret as string,
  };
}

/** The email.received bodies that reached `p`, verified with `secret`. */
async function received(p: string, secret: string, count: number) {
  await vi.waitFor(() => expect(bodiesTo(p).length).toBeGreaterThanOrEqual(count), { timeout: 15_000, interval: 50 });
  return bodiesTo(p).map((r) => verifyWebhook<EmailReceivedData>(r.body, r.headers['service-signature'], secret));
}

describe('inbound mail', () => {
  it('a DKIM-signed multipart message with attachments reaches the email.* endpoint and the inbox webhook, never the everything endpoint', async () => {
    const m = await mailbox();
    const raw = await compose({
      from: '"Ada Lovelace" <ada@sender.test>',
      to: m.inbox.address,
      subject: 'Invoice 42',
      text: 'Please find the invoice attached.',
      html: '<p>Please find the <b>invoice</b> attached.</p>',
      messageId: '<invoice-42@sender.test>',
      attachments: [
        { filename: 'invoice.pdf', content: Buffer.alloc(2048, 7), contentType: 'application/pdf' },
        { filename: 'logo.png', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]), contentType: 'image/png', cid: 'logo@sender.test' },
      ],
      dkim: dkimKey('sender.test'),
    });
    expect((await deliver(raw, [m.inbox.address])).status).toBe(200);

    const [project] = await received(`/${m.slug}/mail`, m.endpointSecret, 1);
    expect(project!.event).toBe('email.received');
    const data = project!.data;
    expect(data.inbox).toEqual({ id: m.inbox.id, address: m.inbox.address });
    expect(data.thread).toMatchObject({ id: expect.stringMatching(/^thr_/), subject: 'Invoice 42', messageCount: 1 });
    expect(data.message).toMatchObject({
      id: expect.stringMatching(/^msg_/),
      from: 'ada@sender.test',
      fromName: 'Ada Lovelace',
      to: [m.inbox.address],
      subject: 'Invoice 42',
      text: 'Please find the invoice attached.',
      html: '<p>Please find the <b>invoice</b> attached.</p>',
      truncated: false,
      senderAuthenticated: true,
      rfcMessageId: '<invoice-42@sender.test>',
      rawKey: `inboxes/${m.inbox.id}/messages/${data.message.id}.eml`,
    });
    expect([...data.message.attachments].sort((a, b) => a.filename.localeCompare(b.filename))).toEqual([
      expect.objectContaining({ filename: 'invoice.pdf', contentType: 'application/pdf', size: 2048, inline: false }),
      expect.objectContaining({ filename: 'logo.png', contentType: 'image/png', size: 4, contentId: '<logo@sender.test>', inline: true }),
    ]);

    // The inbox's own webhookUrl gets the same payload, signed with the inbox's secret (and not the endpoint's).
    const [own] = await received(`/${m.slug}/inbox`, m.inbox.webhookSecret, 1);
    expect(own!.data).toEqual(data);
    expect(() =>
      verifyWebhook(bodiesTo(`/${m.slug}/inbox`)[0]!.body, bodiesTo(`/${m.slug}/inbox`)[0]!.headers['service-signature'], m.endpointSecret),
    ).toThrow();
    // An endpoint with an empty list (everything but email.received) gets nothing.
    await processed(t.platform);
    await dispatcher.idle();
    expect(bodiesTo(`/${m.slug}/all`)).toEqual([]);

    // The .eml its rawKey names is the message, byte for byte; listed in the inbox's messages.
    const eml = await t.app.inject({ url: `/v1/projects/${m.slug}/email/inboxes/${m.inbox.id}/messages/${data.message.id}/raw`, headers: S() });
    expect(eml.statusCode).toBe(200);
    expect(eml.headers['content-type']).toBe('message/rfc822');
    expect(eml.rawPayload.equals(raw)).toBe(true);
    const list = await t.app.inject({ url: `/v1/projects/${m.slug}/email/inboxes/${m.inbox.id}/messages`, headers: S() });
    expect(list.json().data).toEqual([
      expect.objectContaining({
        id: data.message.id,
        subject: 'Invoice 42',
        from: 'ada@sender.test',
        senderAuthenticated: true,
        attachments: 2,
        size: raw.length,
      }),
    ]);
  });

  it('judges the sender: a signature by a key DNS does not publish, a body changed after signing, or a domain that is not the From domain is not authenticated', async () => {
    const m = await mailbox();
    const unpublished = dkimKey('forger.test', false);
    dkimKey('forger.test'); // DNS serves a key of forger.test, but not the one the message is signed with
    const forged = await compose({ from: 'ceo@forger.test', to: m.inbox.address, subject: 'wire money', text: 'now', dkim: unpublished });
    const good = await compose({ from: 'ceo@bank.test', to: m.inbox.address, subject: 'statement', text: 'your statement', dkim: dkimKey('bank.test') });
    const tampered = Buffer.from(good.toString('latin1').replace('your statement', 'pay attacker'), 'latin1');
    const unaligned = await compose({ from: 'ceo@bank.test', to: m.inbox.address, subject: 'relay', text: 'signed by a relay', dkim: dkimKey('relay.test') });
    const unsigned = await compose({ from: 'ceo@bank.test', to: m.inbox.address, subject: 'plain', text: 'no signature' });
    for (const raw of [forged, tampered, unaligned, unsigned, good]) expect((await deliver(raw, [m.inbox.address])).status).toBe(200);

    const got = await received(`/${m.slug}/mail`, m.endpointSecret, 5);
    const verdict = (subject: string) => got.filter((e) => e.data.message.subject === subject).map((e) => e.data.message.senderAuthenticated);
    expect([verdict('wire money'), verdict('relay'), verdict('plain')]).toEqual([[false], [false], [false]]);
    // Two messages have the subject "statement": the tampered one is not authenticated, the good one is.
    const statements = got.filter((e) => e.data.message.subject === 'statement').map((e) => [e.data.message.text, e.data.message.senderAuthenticated]);
    expect(statements.sort()).toEqual([
      ['pay attacker\n', false],
      ['your statement\n', true],
    ]);
  });

  it('decodes non-UTF-8 charsets, threads replies by In-Reply-To and References, and caps long bodies with truncated', async () => {
    const m = await mailbox('help');
    // ISO-8859-1, quoted-printable, hand-written as an old client sends it.
    const latin1 = Buffer.concat([
      Buffer.from(
        [
          'From: =?ISO-8859-1?Q?Jos=E9_M=FCller?= <jose@old.test>',
          `To: ${m.inbox.address}`,
          'Subject: =?ISO-8859-1?Q?R=E9sum=E9_=E0_lire?=',
          'Message-ID: <first@old.test>',
          'MIME-Version: 1.0',
          'Content-Type: text/plain; charset=ISO-8859-1',
          'Content-Transfer-Encoding: quoted-printable',
          '',
          'Voil=E0 mon r=E9sum=E9, tr=E8s ch=E8re =E9quipe.',
          '',
        ].join('\r\n'),
        'latin1',
      ),
    ]);
    expect((await deliver(latin1, [m.inbox.address])).status).toBe(200);
    // A reply in KOI8-R (8bit), answering the first message: same thread.
    const koi8 = Buffer.concat([
      Buffer.from(
        [
          'From: ivan@old.test',
          `To: ${m.inbox.address}`,
          'Subject: Re: =?ISO-8859-1?Q?R=E9sum=E9_=E0_lire?=',
          'Message-ID: <second@old.test>',
          'In-Reply-To: <first@old.test>',
          'References: <first@old.test>',
          'MIME-Version: 1.0',
          'Content-Type: text/plain; charset=KOI8-R',
          'Content-Transfer-Encoding: 8bit',
          '',
          '',
        ].join('\r\n'),
        'latin1',
      ),
      Buffer.from([0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4]), // "Привет" in KOI8-R
      Buffer.from('\r\n'),
    ]);
    expect((await deliver(koi8, [m.inbox.address])).status).toBe(200);
    // A long reply further down the thread, by References only; and a new conversation.
    const long = await compose({
      from: 'jose@old.test',
      to: m.inbox.address,
      subject: 'Re: Re: Résumé à lire',
      references: ['<first@old.test>', '<second@old.test>'],
      text: 'x'.repeat(LIMITS.inboundMail.textMaxChars + 10),
    });
    expect((await deliver(long, [m.inbox.address])).status).toBe(200);
    const other = await compose({ from: 'jose@old.test', to: m.inbox.address, subject: 'Autre chose', text: 'nouveau' });
    expect((await deliver(other, [m.inbox.address])).status).toBe(200);

    const got = await received(`/${m.slug}/mail`, m.endpointSecret, 4);
    const [first, second, third, fourth] = ['Résumé à lire', 'Re: Résumé à lire', 'Re: Re: Résumé à lire', 'Autre chose'].map(
      (s) => got.find((e) => e.data.message.subject === s)!.data,
    );
    expect(first!.message).toMatchObject({ from: 'jose@old.test', fromName: 'José Müller', text: 'Voilà mon résumé, très chère équipe.\n' });
    expect(second!.message.text).toBe('Привет\n');
    expect(second!.thread.id).toBe(first!.thread.id);
    expect(third!.thread).toMatchObject({ id: first!.thread.id, subject: 'Résumé à lire', messageCount: 3 });
    expect(third!.message.truncated).toBe(true);
    expect(third!.message.text).toHaveLength(LIMITS.inboundMail.textMaxChars);
    expect(fourth!.thread.id).not.toBe(first!.thread.id);
    expect(fourth!.message.truncated).toBe(false);
  });

  it('counts and drops mail to an unknown inbox or without its message; a redelivery stores and sends nothing twice', async () => {
    const m = await mailbox();
    const before = consumer.stats().dropped;
    const stray = await compose({ from: 'a@x.test', to: `nobody@${m.slug}.${DOMAIN}`, subject: 'stray', text: 'hi' });
    expect((await deliver(stray, [`nobody@${m.slug}.${DOMAIN}`])).status).toBe(200);
    expect((await deliver(undefined, [m.inbox.address])).status).toBe(200);
    await vi.waitFor(() => {
      const now = consumer.stats().dropped;
      expect((now.unknown_inbox ?? 0) - (before.unknown_inbox ?? 0)).toBe(1);
      expect((now.no_raw_message ?? 0) - (before.no_raw_message ?? 0)).toBe(1);
    });

    // The bus delivers at least once: the same delivery handled twice stores one message and sends one event per target.
    const raw = await compose({ from: 'a@x.test', to: m.inbox.address, subject: 'once', text: 'only once' });
    const { receivedMail } = await import('../../processor/inbound/email/received-mail.ts');
    const event = {
      v: 1 as const,
      provider: 'resend' as const,
      deliveryId: `msg_${randomUUID()}`,
      event: 'email.received',
      receivedAt: Date.now(),
      payload: { type: 'email.received', data: { to: [m.inbox.address], raw: raw.toString('base64') } },
    };
    expect((await receivedMail(t.platform, event)).outcome).toBe('mail: stored');
    expect((await receivedMail(t.platform, event)).outcome).toBe('mail: stored before');
    await received(`/${m.slug}/mail`, m.endpointSecret, 1);
    await received(`/${m.slug}/inbox`, m.inbox.webhookSecret, 1);
    await processed(t.platform);
    await dispatcher.idle();
    expect(bodiesTo(`/${m.slug}/mail`)).toHaveLength(1);
    expect(bodiesTo(`/${m.slug}/inbox`)).toHaveLength(1);
    const list = await t.app.inject({ url: `/v1/projects/${m.slug}/email/inboxes/${m.inbox.id}/messages`, headers: S() });
    expect(list.json().data).toHaveLength(1);
  });

  it("lists an inbox's messages as every list is, a cursor page at a time ({ data, hasMore, nextCursor }), newest first", async () => {
    const m = await mailbox();
    for (const subject of ['one', 'two', 'three']) {
      const raw = await compose({ from: 'a@x.test', to: m.inbox.address, subject, text: subject });
      expect((await deliver(raw, [m.inbox.address])).status).toBe(200);
    }
    await received(`/${m.slug}/mail`, m.endpointSecret, 3);
    const page = async (query: Record<string, string | number>) => {
      const res = await t.app.inject({ url: routePath('listInboxMessages', { slug: m.slug, id: m.inbox.id }, query), headers: S() });
      expect(res.statusCode).toBe(200);
      return res.json() as InboxMessagePage;
    };
    const first = await page({ limit: 2 });
    expect(first).toMatchObject({ hasMore: true, nextCursor: expect.any(String) });
    expect(first.data).toHaveLength(2);
    const second = await page({ limit: 2, cursor: first.nextCursor! });
    expect(second).toMatchObject({ hasMore: false, nextCursor: null });
    const all = [...first.data, ...second.data];
    expect(all.map((x) => x.subject).sort()).toEqual(['one', 'three', 'two']);
    expect(all.map((x) => x.receivedAt)).toEqual(
      all
        .map((x) => x.receivedAt)
        .sort()
        .reverse(),
    );
    // A cursor it did not give out, or a parameter it does not read, is refused rather than ignored.
    const url = (query: Record<string, string>) => routePath('listInboxMessages', { slug: m.slug, id: m.inbox.id }, query);
    expect((await t.app.inject({ url: url({ cursor: 'not-a-cursor' }), headers: S() })).json().error).toBe('invalid_request');
    expect((await t.app.inject({ url: url({ before: first.nextCursor! }), headers: S() })).json().error).toBe('invalid_request');
  });

  it("another project's member cannot list an inbox's messages or read its .eml", async () => {
    const m = await mailbox();
    const raw = await compose({ from: 'a@x.test', to: m.inbox.address, subject: 'private', text: 'secret' });
    expect((await deliver(raw, [m.inbox.address])).status).toBe(200);
    const [e] = await received(`/${m.slug}/mail`, m.endpointSecret, 1);
    const stranger = await signUpAndSignIn(t.app, t.platform, { email: `stranger-${randomUUID().slice(0, 8)}@example.test` });
    const theirs = await createProject(t.app, stranger.cookie);
    for (const url of [
      `/v1/projects/${m.slug}/email/inboxes/${m.inbox.id}/messages`,
      `/v1/projects/${m.slug}/email/inboxes/${m.inbox.id}/messages/${e!.data.message.id}/raw`,
      `/v1/projects/${theirs.slug}/email/inboxes/${m.inbox.id}/messages`,
      `/v1/projects/${theirs.slug}/email/inboxes/${m.inbox.id}/messages/${e!.data.message.id}/raw`,
    ]) {
      const res = await t.app.inject({ url, headers: sessionHeaders(stranger.cookie) });
      expect(res.statusCode).toBe(404);
      expect(res.body).not.toContain('secret');
    }
  });

  it('survives hostile MIME: a 5,000-deep multipart, 20,000 parts (both past the parser node bound), and a message with more DKIM signatures than are judged (each a DNS lookup) is not authenticated', async () => {
    const m = await mailbox();
    const head = `From: a@x.test\r\nTo: ${m.inbox.address}\r\nSubject: bomb\r\nMIME-Version: 1.0\r\n`;
    let deep = head;
    for (let i = 0; i < 5000; i++) deep += `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`;
    deep += 'Content-Type: text/plain\r\n\r\nhi\r\n';
    for (let i = 4999; i >= 0; i--) deep += `--b${i}--\r\n`;
    let wide = `${head}Content-Type: multipart/mixed; boundary="z"\r\n\r\n`;
    for (let i = 0; i < 20_000; i++) wide += '--z\r\n\r\nx\r\n';
    wide += '--z--\r\n';
    const before = consumer.stats().dropped.unparseable_message ?? 0;
    expect((await deliver(Buffer.from(deep), [m.inbox.address])).status).toBe(200);
    expect((await deliver(Buffer.from(wide), [m.inbox.address])).status).toBe(200);
    await vi.waitFor(() => expect((consumer.stats().dropped.unparseable_message ?? 0) - before).toBe(2), { timeout: 15_000 });

    // Nine signatures, one of them good and aligned: too many to judge, so not authenticated, and no key was looked up.
    let signed = await compose({ from: 'ceo@many.test', to: m.inbox.address, subject: 'many signatures', text: 'hello', dkim: dkimKey('many.test') });
    const lookups: string[] = [];
    const resolveTxt = t.platform.txt.resolveTxt;
    t.platform.txt.resolveTxt = async (name) => (lookups.push(name), resolveTxt(name));
    try {
      for (let i = 0; i < LIMITS.inboundMail.maxDkimSignatures; i++)
        signed = Buffer.concat([Buffer.from(`DKIM-Signature: v=1; a=rsa-sha256; d=n${i}.test; s=s1; h=from; bh=x; b=x\r\n`), signed]);
      expect((await deliver(signed, [m.inbox.address])).status).toBe(200);
      const got = await received(`/${m.slug}/mail`, m.endpointSecret, 1);
      expect(got.map((e) => [e.data.message.subject, e.data.message.senderAuthenticated])).toEqual([['many signatures', false]]);
      expect(lookups).toEqual([]);
    } finally {
      t.platform.txt.resolveTxt = resolveTxt;
    }
  });

  it("fetches the raw message Resend's metadata-only event leaves out, through the outbound guard: API key sent, link followed, a private link refused", async () => {
    const m = await mailbox();
    const raw = await compose({ from: 'ada@sender.test', to: m.inbox.address, subject: 'fetched', text: 'from the API', dkim: dkimKey('sender.test') });
    const apiUrl = pathUrl('/resend-api');
    const links: Record<string, string> = {
      em_ok: pathUrl('/cdn/em_ok.eml'),
      em_private: 'https://metadata.test/latest/meta-data',
      em_gone: pathUrl('/cdn/none'),
    };
    receiver.respond = (req) => {
      if (req.path.startsWith('/resend-api/emails/receiving/')) {
        if (req.headers.authorization !== 'Bearer re_test_key') return { status: 401 };
        const id = req.path.split('/').pop()!;
        return links[id]
          ? { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ object: 'email', id, raw: { download_url: links[id] } }) }
          : { status: 404 };
      }
      if (req.path === '/cdn/em_ok.eml') return { status: 200, body: raw.toString('latin1') };
      return { status: 404 };
    };
    const guard = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    guard.table['metadata.test'] = ['169.254.169.254'];
    const { receivedMail } = await import('../../processor/inbound/email/received-mail.ts');
    const { resendRawMessage } = await import('../../processor/inbound/email/resend-raw-message.ts');
    const fetchRaw = resendRawMessage({ apiKey: 're_test_key', apiUrl, guard: guard.guard, timeoutMs: 5_000 });
    const event = (emailId: string) => ({
      v: 1 as const,
      provider: 'resend' as const,
      deliveryId: `msg_${randomUUID()}`,
      event: 'email.received',
      receivedAt: Date.now(),
      payload: { type: 'email.received', data: { email_id: emailId, to: [m.inbox.address], subject: 'fetched' } },
    });
    expect(await receivedMail(t.platform, event('em_ok'), fetchRaw)).toEqual({ outcome: 'mail: stored' });
    const [got] = await received(`/${m.slug}/mail`, m.endpointSecret, 1);
    expect(got!.data.message).toMatchObject({ subject: 'fetched', text: 'from the API\n', senderAuthenticated: true });
    // Every delivery of that message made (the inbox's own too) before counting the requests that follow.
    await processed(t.platform);
    await dispatcher.idle();
    // A link to a private address (the cloud's metadata service) is refused by the guard, never dialled; a gone one fails.
    const before = receiver.requests.length;
    expect(await receivedMail(t.platform, event('em_private'), fetchRaw)).toEqual({ outcome: 'raw_fetch_failed', drop: 'raw_fetch_failed' });
    expect(receiver.requests.slice(before).map((r) => r.path)).toEqual(['/resend-api/emails/receiving/em_private', '/resend-api/emails/receiving/em_private']);
    expect(await receivedMail(t.platform, event('em_gone'), fetchRaw)).toEqual({ outcome: 'raw_fetch_failed', drop: 'raw_fetch_failed' });
    // Without a key the event has no message to take.
    expect(await receivedMail(t.platform, event('em_ok'))).toEqual({ outcome: 'no_raw_message', drop: 'no_raw_message' });
  });
});
