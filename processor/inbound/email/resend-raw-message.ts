import { guardedGet } from '../../../platform/guarded-get.ts';
import type { OutboundUrlGuard } from '../../../platform/ports/outbound-url-guard.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { obj, str } from '../payload.ts';

/**
 * The raw message of a Resend `email.received`, whose webhook carries only metadata: `GET /emails/receiving/{email_id}`
 * on Resend's API (with the API key) answers `raw.download_url`, a signed link to the .eml, which is then fetched. Both
 * calls go through the outbound guard (https, public addresses only, no redirects), each bounded in time, the .eml in
 * size (LIMITS.inboundMail.maxRawBytes).
 */
export type RawMessageFetch = (emailId: string) => Promise<Buffer>;

export function resendRawMessage(opts: { apiKey: string; apiUrl: string; guard: OutboundUrlGuard; timeoutMs?: number }): RawMessageFetch {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  return async (emailId) => {
    if (!/^[A-Za-z0-9_-]{1,100}$/.test(emailId)) throw new Error('not a Resend email id');
    const api = await guardedGet(`${opts.apiUrl.replace(/\/+$/, '')}/emails/receiving/${emailId}`, {
      guard: opts.guard,
      use: 'provider_api',
      headers: { authorization: `Bearer ${opts.apiKey}`, accept: 'application/json' },
      timeoutMs,
      maxBytes: 4 * 1024 * 1024,
    });
    if (api.status !== 200) throw new Error(`Resend answered HTTP ${api.status} for email ${emailId}`);
    let link: string | undefined;
    try {
      link = str(obj(obj(JSON.parse(api.body.toString('utf8')))?.raw)?.download_url);
    } catch {
      throw new Error('Resend answered something that is not JSON');
    }
    if (!link) throw new Error(`Resend has no raw message for email ${emailId}`);
    const eml = await guardedGet(link, { guard: opts.guard, use: 'provider_api', timeoutMs, maxBytes: LIMITS.inboundMail.maxRawBytes });
    if (eml.status !== 200) throw new Error(`the raw message's link answered HTTP ${eml.status}`);
    return eml.body;
  };
}
