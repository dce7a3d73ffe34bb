import { LIMITS } from '../../../schemas/limits.ts';
import { header, hmacMatches, jsonObject, refuse, type Headers, type Verification } from './signatures.ts';

/**
 * Resend signs with Svix (the Standard Webhooks scheme): `svix-id`, `svix-timestamp` (unix seconds) and
 * `svix-signature` (space-separated `v1,<base64>`), each the HMAC-SHA256 of `<id>.<timestamp>.<raw body>` keyed with
 * the base64 secret after `whsec_`; the timestamp within the tolerance of now. `svix-id` is the dedupe key, the
 * payload's `type` the event (`email.delivered`, `email.bounced`, `email.received`, ...).
 */
export function verifyResend(headers: Headers, raw: Buffer, secrets: string[], nowSec: number): Verification {
  const id = header(headers, 'svix-id') ?? header(headers, 'webhook-id');
  const ts = header(headers, 'svix-timestamp') ?? header(headers, 'webhook-timestamp');
  const signature = header(headers, 'svix-signature') ?? header(headers, 'webhook-signature');
  if (!id || !ts || !signature) return refuse('missing_signature', 'svix-id, svix-timestamp and svix-signature are required');
  const given = signature
    .split(' ')
    .map((s) => s.split(','))
    .filter(([version, sig]) => version === 'v1' && sig)
    .map(([, sig]) => Buffer.from(sig!, 'base64'));
  if (!/^\d+$/.test(ts) || !given.length) return refuse('missing_signature', 'svix-signature carries no v1 signature');
  const keys = secrets.map((s) => Buffer.from(s.replace(/^whsec_/, ''), 'base64'));
  if (!hmacMatches(keys, Buffer.concat([Buffer.from(`${id}.${ts}.`), raw]), given))
    return refuse('bad_signature', 'no v1 signature of svix-signature matches the body');
  if (Math.abs(nowSec - Number(ts)) > LIMITS.inbound.timestampToleranceSec)
    return refuse('expired_timestamp', 'the signed timestamp is outside the 5-minute tolerance');
  const payload = jsonObject(raw.toString('utf8'));
  if (!payload || typeof payload.type !== 'string') return refuse('malformed_body', 'the body is not a Resend event (type)');
  return { ok: true, deliveryId: id, event: payload.type, payload };
}
