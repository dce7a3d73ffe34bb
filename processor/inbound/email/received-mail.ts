import { dkimVerify } from 'mailauth';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { publishProjectEvent } from '../../../domain/project-event-publisher.ts';
import type { Platform } from '../../../platform/platform.ts';
import type { TxtResolver } from '../../../platform/ports/txt-resolver.ts';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { rawKeyOf, type EmailReceivedData } from '../../../schemas/project-events.ts';
import { obj, str } from '../payload.ts';
import type { RawMessageFetch } from './resend-raw-message.ts';
import { mailRepository, type InboxTarget } from '../repositories/mail-repository.ts';

/**
 * Mail that reached a project's mailbox inbox (Resend's `email.received`, spec §6.2), top to bottom:
 *   1. raw        the message as it arrived (RFC 5322): the event's `data.raw` (base64), or else fetched from Resend's
 *                 API by `data.email_id` when RESEND_API_KEY is set (resend-raw-message.ts; Resend's webhook carries
 *                 metadata only); none, too large, or not fetched after two tries: dropped
 *   2. parse      with mailparser: headers, bodies in any charset, attachments
 *   3. route      the inboxes among its envelope recipients (`data.to`) and its To/Cc; none: dropped as unknown_inbox
 *   4. judge      the aligned-DKIM verdict with mailauth, keys looked up through the TXT resolver port (`platform.txt`):
 *                 a signature that verifies and whose domain aligns with the From domain (relaxed, by organisational
 *                 domain, as DMARC does) makes `senderAuthenticated`
 *   5. store      per inbox, the .eml and its row, in the thread of the newest stored message it answers
 *                 (In-Reply-To, then References) or a new one; a redelivery finds the row it stored before
 *   6. emit       email.received with §6.2's payload, once for the project's endpoints subscribed by name or email.*
 *                 and once for the inbox's own webhookUrl; both event ids derive from the stored message, so a
 *                 redelivery sends nothing twice
 * The bodies are cut at LIMITS.inboundMail (`truncated` says so); the .eml keeps the whole message.
 */
export type ReceivedMailDrop = 'no_raw_message' | 'raw_too_large' | 'raw_fetch_failed' | 'unparseable_message' | 'unknown_inbox';

const { maxRawBytes, textMaxChars, htmlMaxChars, maxAttachments, maxRecipients, maxReferences, maxDkimSignatures, dkimJudgeMs } = LIMITS.inboundMail;

export async function receivedMail(
  platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'txt' | 'logger'>,
  e: InboundEvent,
  fetchRaw?: RawMessageFetch,
): Promise<{ outcome: string; drop?: ReceivedMailDrop }> {
  const data = obj(e.payload.data) ?? {};
  // 1. raw
  const raw = await rawMessage(platform, data, fetchRaw);
  if ('drop' in raw) return { outcome: raw.drop, drop: raw.drop };
  // 2. parse
  let mail: ParsedMail;
  try {
    mail = await simpleParser(raw.bytes, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true, maxHtmlLengthToParse: htmlMaxChars * 4 });
  } catch {
    return { outcome: 'unparseable_message', drop: 'unparseable_message' };
  }
  // 3. route
  const recipients = recipientsOf(data, mail);
  const inboxes = await mailRepository.inboxesAt(platform.db, recipients);
  if (!inboxes.length) return { outcome: 'unknown_inbox', drop: 'unknown_inbox' };
  // 4. judge
  const senderAuthenticated = await alignedDkim(raw.bytes, platform.txt, platform.clock.now());
  // 5. store, 6. emit
  const message = messageFields(mail, recipients, senderAuthenticated);
  const outcomes: string[] = [];
  for (const inbox of inboxes) {
    const stored = await mailRepository.store(platform.db, {
      inboxId: inbox.id,
      deliveryId: e.deliveryId,
      rfcMessageId: message.rfcMessageId ?? null,
      parents: parentsOf(mail),
      fromAddress: message.from,
      fromName: message.fromName ?? null,
      subject: message.subject,
      senderAuthenticated,
      attachments: message.attachments.length,
      raw: raw.bytes,
      receivedAt: e.receivedAt,
    });
    const payload: EmailReceivedData = {
      inbox: { id: inbox.id, address: inbox.address },
      thread: { id: stored.threadId, subject: stored.threadSubject, messageCount: stored.threadMessageCount },
      message: { id: stored.id, ...message, rawKey: rawKeyOf(inbox.id, stored.id) },
    };
    await emit(platform, inbox, stored.id, payload);
    outcomes.push(stored.created ? 'stored' : 'stored before');
  }
  return { outcome: `mail: ${outcomes.join(', ')}` };
}

/** 1. The message: the event's `data.raw` (base64, what a relay puts in the event), or fetched by `data.email_id`. */
async function rawMessage(
  platform: Pick<Platform, 'logger'>,
  data: Record<string, unknown>,
  fetchRaw: RawMessageFetch | undefined,
): Promise<{ bytes: Buffer } | { drop: 'no_raw_message' | 'raw_too_large' | 'raw_fetch_failed' }> {
  const b64 = str(data.raw);
  if (!b64) {
    const emailId = str(data.email_id);
    if (!fetchRaw || !emailId) return { drop: 'no_raw_message' };
    for (let attempt = 1; ; attempt++) {
      try {
        const bytes = await fetchRaw(emailId);
        return bytes.length ? { bytes } : { drop: 'no_raw_message' };
      } catch (err) {
        platform.logger.warn({ emailId, attempt, err: (err as Error).message }, "fetching an inbound message's raw content failed");
        if (attempt >= 2) return { drop: 'raw_fetch_failed' };
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
  if (b64.length > Math.ceil(maxRawBytes / 3) * 4 + 4096) return { drop: 'raw_too_large' };
  const bytes = Buffer.from(b64, 'base64');
  return bytes.length ? { bytes } : { drop: 'no_raw_message' };
}

const addressesOf = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((o) =>
    o.value.flatMap((v) => [v.address, ...(v.group ?? []).map((g) => g.address)]).filter((x): x is string => !!x),
  );

/** 3. Where the message was delivered: the envelope's recipients (the provider's `to`), then the To and Cc headers. */
function recipientsOf(data: Record<string, unknown>, mail: ParsedMail): string[] {
  const envelope = (Array.isArray(data.to) ? data.to : [data.to]).filter((x): x is string => typeof x === 'string');
  const all = [...envelope, ...addressesOf(mail.to), ...addressesOf(mail.cc)]
    .map((a) =>
      a
        .replace(/^.*<([^>]*)>.*$/, '$1')
        .trim()
        .toLowerCase(),
    )
    .filter((a) => a.includes('@') && a.length <= 320);
  return [...new Set(all)].slice(0, maxRecipients);
}

/** Message ids this one answers: In-Reply-To, then References from the newest. */
function parentsOf(mail: ParsedMail): string[] {
  const refs = Array.isArray(mail.references) ? mail.references : mail.references ? mail.references.split(/\s+/) : [];
  const ids = [mail.inReplyTo, ...refs.slice().reverse()].filter((x): x is string => !!x && x.length <= 998);
  return [...new Set(ids)].slice(0, maxReferences);
}

/**
 * 4. True when a DKIM signature verifies and its domain aligns with the From header's. A lookup failure, more signatures
 * than maxDkimSignatures (each costs a DNS lookup: a stranger's message must not make us ask a thousand) or a judging
 * slower than dkimJudgeMs: false.
 */
async function alignedDkim(raw: Buffer, txt: TxtResolver, now: number): Promise<boolean> {
  const headerEnd = raw.indexOf('\r\n\r\n') >= 0 ? raw.indexOf('\r\n\r\n') : raw.indexOf('\n\n');
  const header = raw.subarray(0, headerEnd < 0 ? raw.length : headerEnd).toString('latin1');
  if ((header.match(/^dkim-signature\s*:/gim)?.length ?? 0) > maxDkimSignatures) return false;
  let timer: NodeJS.Timeout | undefined;
  const tooSlow = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), dkimJudgeMs)));
  try {
    const verdict = dkimVerify(raw, {
      curTime: new Date(now),
      resolver: async (name, rrtype) => {
        if (rrtype !== 'TXT') throw Object.assign(new Error(`no ${rrtype} lookups`), { code: 'ENOTFOUND' });
        const records = await txt.resolveTxt(name);
        if (!records.length) throw Object.assign(new Error(`${name}: no TXT record`), { code: 'ENOTFOUND' });
        return records.map((r) => [r]);
      },
    }).then((result) => result.results.some((r) => r.status.result === 'pass' && !!r.status.aligned));
    return await Promise.race([verdict, tooSlow]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const cut = (s: string | undefined | false, max: number): { value: string | null; cut: boolean } =>
  !s ? { value: null, cut: false } : s.length > max ? { value: s.slice(0, max), cut: true } : { value: s, cut: false };

/** The §6.2 `message` fields but the stored ones (id, rawKey). */
function messageFields(mail: ParsedMail, recipients: string[], senderAuthenticated: boolean): Omit<EmailReceivedData['message'], 'id' | 'rawKey'> {
  const sender = mail.from?.value[0];
  const text = cut(mail.text, textMaxChars);
  const html = cut(mail.html, htmlMaxChars);
  const to = addressesOf(mail.to).map((a) => a.toLowerCase());
  return {
    from: (sender?.address ?? '').toLowerCase(),
    fromName: sender?.name || null,
    to: to.length ? to : recipients,
    subject: mail.subject ?? '',
    text: text.value,
    html: html.value,
    truncated: text.cut || html.cut,
    attachments: mail.attachments.slice(0, maxAttachments).map((a) => ({
      filename: a.filename ?? 'attachment',
      contentType: a.contentType,
      size: a.size,
      contentId: a.contentId ?? null,
      inline: a.contentDisposition === 'inline',
      checksum: a.checksum,
    })),
    senderAuthenticated,
    rfcMessageId: mail.messageId ?? null,
  };
}

/** 6. Once for the project's endpoints (email.received or email.* subscribers), once for the inbox's own webhookUrl. */
async function emit(platform: Pick<Platform, 'bus' | 'clock'>, inbox: InboxTarget, messageId: string, data: EmailReceivedData): Promise<void> {
  await publishProjectEvent(platform, { id: `email.received:${messageId}`, projectId: inbox.projectId, event: 'email.received', data });
  if (inbox.hasWebhook)
    await publishProjectEvent(platform, {
      id: `email.received:${messageId}:inbox`,
      projectId: inbox.projectId,
      event: 'email.received',
      data,
      inboxId: inbox.id,
    });
}
